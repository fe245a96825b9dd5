/**
 * What the jobs side and the controller need of each other in `corral serve`, named as ports: the directory of the
 * leading controller's live workers and a reconcile trigger (the jobs side asks them; `cluster/controller-view.ts`
 * answers for the controller of the term under way), and the worker-facing address (the controller starts a queue
 * worker with it; `app/worker-facing-listener.ts` says it once it listens).
 */
import type { WorkerState } from '../domain/worker.js';

/** The leading controller's live workers, as the jobs side asks of them. */
export interface LiveWorkerDirectory {
  /**
   * The controller's state of a worker where this replica leads and its controller has adopted the runtime's
   * workers; null where it has no such worker; undefined where it does not lead (the store's row says).
   */
  workerState(endpointId: string, workerId: string): WorkerState | null | undefined;
  /** The ids of the endpoint's running workers (none where this replica's controller runs none). */
  runningWorkers(endpointId: string): readonly string[];
}

/** Asks this replica's controller for a reconcile: its whole pass now (nothing while it does not run). */
export interface ReconcileTrigger {
  poke(): void;
}

/** Where workers reach the worker-facing listener: its base URL, '' until it listens. */
export interface WorkerFacingAddress {
  url(): string;
}
