/**
 * What a request waiting in an endpoint's queue (dispatcher.ts) is refused with, worded in one place: QUEUE_FULL
 * with its Retry-After estimate, QUEUE_TIMEOUT naming what the workers wait for, AFFINITY_TIMEOUT for a strict wait
 * on one worker (affinity.ts), CLIENT_GONE; and the dispatcher's settings checked. Pure: plain numbers in.
 */
import { GatewayError } from '../errors/gateway-catalogue.js';
import type { DispatcherSettings } from './dispatcher-types.js';

/**
 * What a strict waiter's dispatcher rejects it with when its worker leaves routing (removed, failed, frozen, in
 * quarantine): the request path asks whether the worker still exists (404 AFFINITY_WORKER_GONE) or waits again.
 * Never answered to a client.
 */
export const AFFINE_WORKER_LEFT = new GatewayError(
  'AFFINITY_TIMEOUT',
  "the worker a strict request waits for left this gateway's routing",
);

export function clientGone(when: string, reason: unknown): GatewayError {
  return new GatewayError('CLIENT_GONE', `the client went away ${when}`, { cause: reason });
}

export function queueFull(
  queueLength: number,
  maxQueueLength: number,
  retryAfterSeconds: number,
): GatewayError {
  return new GatewayError('QUEUE_FULL', `the queue holds ${queueLength} requests, its limit`, {
    retryAfterSeconds,
    metadata: { queueLength, maxQueueLength },
  });
}

/** A request that waited `queueTimeoutMs`: for any slot (504), or, strict, for one on `workerId` (400, RunPod's). */
export function waitTimedOut(
  waitedMs: number,
  queueTimeoutMs: number,
  waitingFor: string | undefined,
  workerId: string | undefined,
): GatewayError {
  if (workerId !== undefined) {
    return new GatewayError(
      'AFFINITY_TIMEOUT',
      `timed out waiting for worker ${workerId}: no slot on it freed within ${queueTimeoutMs} ms`,
      { metadata: { workerId, queuedMs: waitedMs, queueTimeoutMs } },
    );
  }
  return new GatewayError(
    'QUEUE_TIMEOUT',
    `no worker slot freed within ${queueTimeoutMs} ms${waitingFor ? `: ${waitingFor}` : ''}`,
    { metadata: { queuedMs: waitedMs, queueTimeoutMs, ...(waitingFor ? { waitingFor } : {}) } },
  );
}

/** Why a queued request got no slot: every routable worker busy, or what the endpoint's new worker waits for. */
export function waitingFor(routable: number, maxConcurrent: number, whyNoWorker: string | undefined): string {
  if (routable > 0) return `all ${routable} routable worker(s) busy with ${maxConcurrent} request(s) each`;
  return whyNoWorker ? `no worker is routable: ${whyNoWorker}` : 'no worker is routable';
}

/**
 * Estimated seconds until the queue has served what it holds now: its length times the mean lease duration over
 * the routable slots, at most the queue timeout. With no routable slot or no lease finished yet, the time until the
 * head of the queue has left it for sure (`headLeftInMs`: served or timed out). At least 1.
 */
export function retryAfterSeconds(o: {
  queueLength: number;
  routable: number;
  meanHoldMs: number | undefined;
  settings: DispatcherSettings;
  headLeftInMs: number;
}): number {
  const { maxConcurrent, queueTimeoutMs } = o.settings;
  const ms =
    o.routable > 0 && o.meanHoldMs !== undefined
      ? Math.min((o.queueLength * o.meanHoldMs) / (o.routable * maxConcurrent), queueTimeoutMs)
      : o.headLeftInMs;
  return Math.max(1, Math.ceil(ms / 1000));
}

export function checkSettings(settings: DispatcherSettings): DispatcherSettings {
  const { maxConcurrent, maxQueueLength, queueTimeoutMs } = settings;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new RangeError(`maxConcurrent must be an integer >= 1, not ${maxConcurrent}`);
  }
  if (!Number.isInteger(maxQueueLength) || maxQueueLength < 0) {
    throw new RangeError(`maxQueueLength must be an integer >= 0, not ${maxQueueLength}`);
  }
  if (!Number.isFinite(queueTimeoutMs) || queueTimeoutMs < 0) {
    throw new RangeError(`queueTimeoutMs must be a finite number >= 0, not ${queueTimeoutMs}`);
  }
  return { maxConcurrent, maxQueueLength, queueTimeoutMs };
}
