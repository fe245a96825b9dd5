/**
 * Where each queue worker stands (ports/worker-standing.ts), for its takes and its token: the leading controller's
 * word where this replica leads (its records change the moment a removal is decided), else the store's row, read at
 * most once per `storeCacheMs` per worker (a replica that does not lead learns a removal within that).
 */
import type { WorkerState } from '../domain/worker.js';
import type { Clock } from '../ports/clock.js';
import { standingOf, type WorkerStanding } from '../ports/worker-standing.js';

export interface WorkerDirectoryOptions {
  /**
   * The leading controller's record of the worker: its state, or null when it has none (removed, never one);
   * undefined when this replica's controller does not lead, or has not adopted the runtime's workers yet.
   */
  controllerState: (endpointId: string, workerId: string) => WorkerState | null | undefined;
  /** The store's row of the worker: its endpoint and state; undefined when there is none. */
  storedWorker: (workerId: string) => Promise<{ endpointId: string; state: WorkerState } | undefined>;
  clock: Clock;
  storeCacheMs: number;
}

export class WorkerDirectory {
  readonly #o: WorkerDirectoryOptions;
  /** The store's word on each endpoint's worker asked about, and when it was read (pruned as it ages). */
  readonly #stored = new Map<string, { standing: WorkerStanding; at: number }>();

  constructor(options: WorkerDirectoryOptions) {
    this.#o = options;
  }

  /** Where the worker stands as known now, without waiting (the store's word as last read). */
  standing(endpointId: string, workerId: string): WorkerStanding {
    const state = this.#o.controllerState(endpointId, workerId);
    if (state !== undefined) return standingOf(state ?? undefined);
    return this.#stored.get(keyOf(endpointId, workerId))?.standing ?? 'serving';
  }

  /** Where the worker stands, reading the store first where the controller does not say and its word is old. */
  async check(endpointId: string, workerId: string): Promise<WorkerStanding> {
    const state = this.#o.controllerState(endpointId, workerId);
    if (state !== undefined) return standingOf(state ?? undefined);
    const now = this.#o.clock();
    const key = keyOf(endpointId, workerId);
    const known = this.#stored.get(key);
    if (known && now - known.at < this.#o.storeCacheMs) return known.standing;
    const row = await this.#o.storedWorker(workerId);
    const standing = row && row.endpointId === endpointId ? standingOf(row.state) : 'ended';
    this.#prune(now);
    this.#stored.set(key, { standing, at: now });
    return standing;
  }

  #prune(now: number): void {
    for (const [key, { at }] of this.#stored)
      if (now - at >= this.#o.storeCacheMs * 10) this.#stored.delete(key);
  }
}

function keyOf(endpointId: string, workerId: string): string {
  return `${endpointId}\n${workerId}`;
}
