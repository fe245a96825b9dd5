/**
 * The controller's worker records: by id and by endpoint (so that a pass is linear in the number of workers), which
 * of them the store must be told about at the end of the pass, and which are routable.
 */

import type { RoutableWorker } from '../../ports/routing-view.js';
import type { ManagedWorker } from './managed-worker.js';

export class WorkerBook {
  readonly #byId = new Map<string, ManagedWorker>();
  readonly #byEndpoint = new Map<string, Set<ManagedWorker>>();
  /** Worker ids whose store row must be written (or deleted) at the end of the pass. */
  readonly dirty = new Set<string>();

  get(workerId: string): ManagedWorker | undefined {
    return this.#byId.get(workerId);
  }

  has(workerId: string): boolean {
    return this.#byId.has(workerId);
  }

  all(): IterableIterator<ManagedWorker> {
    return this.#byId.values();
  }

  ofEndpoint(endpointId: string): ManagedWorker[] {
    return [...(this.#byEndpoint.get(endpointId) ?? [])];
  }

  track(record: ManagedWorker): void {
    this.#byId.set(record.id, record);
    let set = this.#byEndpoint.get(record.endpointId);
    if (!set) {
      set = new Set();
      this.#byEndpoint.set(record.endpointId, set);
    }
    set.add(record);
    this.markDirty(record);
  }

  forget(record: ManagedWorker): void {
    this.#byId.delete(record.id);
    const set = this.#byEndpoint.get(record.endpointId);
    set?.delete(record);
    if (set?.size === 0) this.#byEndpoint.delete(record.endpointId);
    this.markDirty(record);
  }

  /** The record changed: its row is written at the end of the pass. Only a running worker can be healthy. */
  markDirty(record: ManagedWorker): void {
    record.healthy = record.state === 'running' && record.healthy;
    this.dirty.add(record.id);
  }

  /** The endpoint's failed records beyond the newest `keep` (those the API no longer shows). */
  failedBeyond(endpointId: string, keep: number): ManagedWorker[] {
    return this.ofEndpoint(endpointId)
      .filter((w) => w.state === 'failed')
      .sort((a, b) => b.createdAt - a.createdAt)
      .slice(keep);
  }

  /** Endpoint id -> its running, healthy workers with an address (endpoints without any are left out). */
  routable(): Map<string, readonly RoutableWorker[]> {
    const routable = new Map<string, readonly RoutableWorker[]>();
    for (const endpointId of this.#byEndpoint.keys()) {
      const ready = this.routableOf(endpointId);
      if (ready.length > 0) routable.set(endpointId, ready);
    }
    return routable;
  }

  /** One endpoint's running, healthy workers with an address, but those whose container an event said exited. */
  routableOf(endpointId: string): RoutableWorker[] {
    const ready: RoutableWorker[] = [];
    for (const w of this.#byEndpoint.get(endpointId) ?? []) {
      if (w.state === 'running' && w.healthy && w.address && !w.exitedUnlisted)
        ready.push({ id: w.id, address: w.address, ...(w.wake ? { wake: w.wake } : {}) });
    }
    return ready;
  }
}
