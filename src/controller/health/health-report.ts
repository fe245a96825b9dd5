/**
 * What a failing health probe's cause (probe-result.ts) changes: the worker's message, and a `health` event in its
 * endpoint's log the first time the worker fails with that cause (so a worker probed every 50 ms while it starts
 * writes one event per cause, not one per probe), once a starting worker has had one probe period to come up. Pure
 * functions plus the small record of causes already told.
 */

import type { NewEvent } from '../../domain/records.js';
import type { WorkerRuntime } from '../../runtime/types.js';
import type { ManagedWorker } from '../workers/managed-worker.js';

/** At most this many distinct causes are told per worker; a worker whose cause keeps changing writes no more. */
export const MAX_CAUSES_TOLD = 5;

/**
 * The port the app was told to listen on (its PORT): the endpoint's port where the runtime publishes it elsewhere
 * (Docker), the probed port itself where the app listens there (the local runtime gives it the host port).
 */
export function appPortOf(
  runtime: WorkerRuntime['name'],
  address: { host: string; port: number },
  endpointPort: number,
): number {
  return runtime === 'local' ? address.port : endpointPort;
}

/** The message of a worker whose last probe failed with `cause`; undefined while it is still routable. */
export function healthMessage(
  worker: Pick<ManagedWorker, 'healthy' | 'readyAt'>,
  path: string,
  cause: string,
): string | undefined {
  if (worker.healthy) return undefined;
  return worker.readyAt === null
    ? `waiting for ${path} to pass; last probe: ${cause}`
    : `failing its health check: ${cause}`;
}

/**
 * Whether a failing probe may be told in the log now: a worker that had been ready, at once; a starting one only
 * from one probe period after its start, so that the moments before an ordinary app listens write nothing.
 */
export function mayTell(
  worker: Pick<ManagedWorker, 'readyAt' | 'startedAt'>,
  periodMs: number,
  now: number,
): boolean {
  return worker.readyAt !== null || now - (worker.startedAt ?? now) >= periodMs;
}

/** The `health` event (docs/api.md): `worker <id>: connection refused on port 8000`. */
export function healthEvent(workerId: string, path: string, cause: string, at: number): NewEvent {
  return { at, type: 'health', message: `worker ${workerId}: ${cause}`, data: { workerId, path, cause } };
}

/** Which causes each worker has already had an event for. */
export class HealthCausesTold {
  readonly #told = new Map<string, Set<string>>();

  /** True the first time this worker fails with this cause (and fewer than MAX_CAUSES_TOLD were told). */
  firstTime(workerId: string, cause: string): boolean {
    const told = this.#told.get(workerId) ?? new Set<string>();
    if (told.has(cause) || told.size >= MAX_CAUSES_TOLD) return false;
    told.add(cause);
    this.#told.set(workerId, told);
    return true;
  }

  forget(workerId: string): void {
    this.#told.delete(workerId);
  }
}
