/**
 * The gateway's upgrade path (WebSocket and other upgrades): the same refusals, key check and queue as a request,
 * counted the same way (with the worker's status when its response head passes, 101 for a WebSocket), then
 * websocket.ts's Tunnel to the worker. Refusals are answered in the JSON error format; only a worker that cannot be
 * reached leaves the socket untouched, for the next attempt. A worker named in an affinity header (affinity.ts) is
 * kept to as a request's is: a chat session's socket opens on the worker that holds its state.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Endpoint } from '../domain/endpoint.js';
import { GatewayError } from '../errors/gateway-catalogue.js';
import { type Affinity, affinityOf } from './affinity.js';
import { answerUpgrade, queuedHeader } from './answer.js';
import type { Lease } from './dispatcher.js';
import { type GatewayContext, noWorkerReached, OUTCOME_STATUS } from './gateway-context.js';
import { authorizationFor } from './invoke-auth.js';
import { attemptOnLeases } from './lease-attempts.js';
import { targetProblem } from './request-target.js';
import { proxyUpgrade, type UpgradeOutcome } from './websocket.js';
import { workerHeaders } from './worker-headers.js';

/** Where an upgrade goes instead of here (another replica's gateway): true, it went there. */
export interface UpgradeDiversion {
  upgradedAtPeer(req: IncomingMessage, socket: Duplex, head: Buffer, endpoint: Endpoint): Promise<boolean>;
}

const NEVER_DIVERTED: UpgradeDiversion = { upgradedAtPeer: async () => false };

export class UpgradePath {
  readonly #c: GatewayContext;
  readonly #diversion: UpgradeDiversion;

  constructor(options: { context: GatewayContext; diversion?: UpgradeDiversion }) {
    this.#c = options.context;
    this.#diversion = options.diversion ?? NEVER_DIVERTED;
  }

  /**
   * node:http 'upgrade' handler. node:http removes its own error listener from the socket before emitting
   * 'upgrade', so one is added here at once and kept for the socket's whole life: a client that resets while the
   * upgrade waits (for the store, in the queue, between two workers) would otherwise raise an 'error' nobody listens
   * to, which ends the process. Its 'close' is watched from the start too, so that a client that leaves during the
   * lookup is never queued.
   */
  readonly handle = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const arrived = this.#c.o.clock();
    socket.on('error', destroyOnError);
    const gone = new AbortController();
    socket.once('close', () => gone.abort());
    void this.#upgrade(req, socket, head, gone.signal, arrived);
  };

  async #upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    gone: AbortSignal,
    arrived: number,
  ): Promise<void> {
    const c = this.#c;
    const problem = targetProblem(req);
    if (problem !== undefined) {
      refuse(socket, new GatewayError('INVALID_REQUEST', problem), undefined);
      return;
    }
    let endpoint: Endpoint | undefined;
    try {
      endpoint = await c.endpointFor(req);
    } catch (error) {
      c.o.logger.warn({ host: req.headers.host, err: error }, 'endpoint lookup failed');
      refuse(socket, new GatewayError('ROUTING_UNAVAILABLE'), undefined);
      return;
    }
    if (endpoint && !gone.aborted && (await this.#diversion.upgradedAtPeer(req, socket, head, endpoint)))
      return;
    const denied = endpoint && !gone.aborted ? await c.keys.check(req, endpoint) : undefined;
    if (endpoint && denied) {
      c.observe(endpoint.id, denied.status, arrived, 0);
      refuse(socket, denied, 0);
      return;
    }
    const refusal = gone.aborted ? clientGone() : c.refusal(req, endpoint);
    if (refusal) {
      if (endpoint) c.observe(endpoint.id, refusal.status, arrived, 0);
      refuse(socket, refusal, endpoint ? 0 : undefined);
      return;
    }
    const routed = endpoint as Endpoint;
    const dispatcher = c.endpoints.dispatcherFor(routed);
    const affinity = affinityOf(req);
    const granted = dispatcher.tryAcquire(undefined, affinity);
    const end = await attemptOnLeases({
      dispatcher,
      clock: c.o.clock,
      ...(granted ? { granted } : {}),
      ...(affinity === undefined ? {} : { affinity }),
      affinityGone: () => c.affinityGone(routed.id, affinity as Affinity),
      waitSignal: (attempt) => {
        if (attempt === 1) c.endpoints.wakingFor(routed.id, arrived);
        return gone;
      },
      refusalOnRetry: () => c.endpoints.refusalOf(routed),
      diverted: () => this.#diversion.upgradedAtPeer(req, socket, head, routed),
      // Only an unreachable worker leaves the client's socket untouched: try another, or say so.
      send: async (lease) =>
        (await this.#tunnel(req, socket, head, routed, lease, arrived)) === 'not-sent' ? 'not-sent' : 'sent',
    });
    if (end.kind === 'done') return;
    const strictWorker = affinity && affinity.mode !== 'soft' ? affinity.workerId : undefined;
    const failure =
      end.kind === 'unreached'
        ? noWorkerReached(strictWorker)
        : end.error instanceof GatewayError
          ? end.error
          : new GatewayError('WORKER_ERROR');
    c.observe(routed.id, failure.status, arrived, end.queuedMs);
    refuse(socket, failure, end.queuedMs);
  }

  /** One attempt at the upgrade on `lease`'s worker; counted unless the worker could not be reached. */
  async #tunnel(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    endpoint: Endpoint,
    lease: Lease,
    arrived: number,
  ): Promise<UpgradeOutcome> {
    const c = this.#c;
    let counted = false;
    const headers = workerHeaders(lease);
    let outcome: UpgradeOutcome;
    try {
      outcome = await proxyUpgrade(req, socket, head, lease.address, headers, {
        workerId: lease.workerId,
        authorization: authorizationFor(endpoint),
        onResponse: (status) => {
          counted = true;
          c.observe(endpoint.id, status, arrived, lease.queuedMs);
        },
      });
      if (outcome === 'not-sent') c.quarantine(endpoint.id, lease.workerId);
    } finally {
      lease.release();
    }
    if (!counted && outcome !== 'ok' && outcome !== 'not-sent') {
      c.observe(endpoint.id, OUTCOME_STATUS[outcome], arrived, lease.queuedMs);
    }
    return outcome;
  }
}

/** Answers an upgrade with the gateway's own error, in the JSON format, with X-Corral-Queue-Ms where known. */
function refuse(socket: Duplex, error: GatewayError, queuedMs: number | undefined): void {
  answerUpgrade(socket, error, queuedHeader(queuedMs));
}

function clientGone(): GatewayError {
  return new GatewayError('CLIENT_GONE', 'the client went away before the endpoint was found');
}

/** The upgrade socket's error listener: a reset or broken client connection just ends the upgrade. */
function destroyOnError(this: Duplex): void {
  this.destroy();
}
