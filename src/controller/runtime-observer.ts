/**
 * The observe step of a reconcile: what the runtime's listing says of the controller's workers. A container it does
 * not know is adopted (unless its worker was removed after the listing began); a started worker whose container
 * exited or vanished dies (unless its engine was told to stop it a moment ago); one that runs at another address is
 * followed there. The listing is the whole runtime's (the whole pass) or one endpoint's (that endpoint's reconcile):
 * only the records it covers can have vanished from it.
 */
import type { Endpoint } from '../domain/endpoint.js';
import { isInTier } from '../domain/worker.js';
import type { RuntimeWorker } from '../runtime/types.js';
import { mayBeRestarting, movedAddress } from './container-changes.js';
import type { WorkerLifecycle } from './lifecycle/worker-lifecycle.js';
import type { GpuLedger } from './placement/gpu-ledger.js';
import { followsRuntime } from './runtime-wait.js';
import { isStarted, type ManagedWorker } from './workers/managed-worker.js';
import type { WorkerBook } from './workers/worker-book.js';

export interface RuntimeObserverOptions {
  book: WorkerBook;
  gpus: GpuLedger;
  lifecycle: WorkerLifecycle;
  restartGraceMs: number;
}

/** One listing of the runtime, as the observe step reads it. */
export interface Listing {
  workers: RuntimeWorker[];
  /** Its number among the listings begun (a create that completed after it began is not in it). */
  number: number;
  /** The records it covers: every one, or one endpoint's. */
  scope: Iterable<ManagedWorker>;
}

export class RuntimeObserver {
  readonly #o: RuntimeObserverOptions;

  constructor(options: RuntimeObserverOptions) {
    this.#o = options;
  }

  observe(listing: Listing, live: ReadonlyMap<string, Endpoint>, now: number): void {
    const { book, gpus, lifecycle } = this.#o;
    const seen = new Set<string>();
    for (const container of listing.workers) {
      seen.add(container.workerId);
      // Being removed: neither a worker to adopt again nor one that died.
      if (gpus.isReleasing(container.workerId)) continue;
      const record = book.get(container.workerId);
      if (!record) {
        // Removed and forgotten after this listing began: the listing is older than the removal.
        if (lifecycle.forgottenSinceListing(container.workerId, listing.number)) continue;
        lifecycle.adopt(container, live.get(container.endpointId), now);
      } else if (container.phase === 'exited' && (isPresent(record.state) || this.follows(record))) {
        if (mayBeRestarting(record, now, this.#o.restartGraceMs)) continue;
        lifecycle.containerExited(record, container, now);
      } else if (this.follows(record)) {
        lifecycle.follow(record, container, live.get(record.endpointId), now);
      } else {
        const moved = movedAddress(record, container);
        if (moved) lifecycle.containerChanged(record, moved);
      }
    }
    for (const record of [...listing.scope]) {
      const present = isPresent(record.state) || this.follows(record);
      if (present && !seen.has(record.id) && this.#listedSinceCreated(record.id, listing.number)) {
        lifecycle.workerDied(record, 'its container disappeared', now);
      }
    }
  }

  /** A worker the runtime has and no create of this process reports on (adopted, not running yet). */
  follows(record: ManagedWorker): boolean {
    return followsRuntime(record) && !this.#o.gpus.isCreating(record.id);
  }

  /**
   * Whether this listing began after the worker's create completed, so that it would show the worker. A reconcile
   * awaits the store between its listing and this check: a create that completes meanwhile is missing from it.
   */
  #listedSinceCreated(workerId: string, listing: number): boolean {
    if (this.#o.gpus.isCreating(workerId)) return false;
    return this.#o.lifecycle.createdAtListing(workerId) < listing;
  }
}

/** A worker whose container the runtime should list: started, or resting in an idle tier. */
function isPresent(state: ManagedWorker['state']): boolean {
  return isStarted(state) || isInTier(state);
}
