/**
 * The controller as the parts built before it see it (`corral serve` builds the jobs side and the idle policies
 * first: the controller starts queue workers with the jobs' env, the gateway serves their routes). It answers the
 * ports of `ports/controller-ports.ts` for the controller of the term under way, and is connected to it once, when
 * the traffic side and the leadership exist. Until then it answers as a replica that does not lead: no worker, no
 * pass. Generic over the controller so that the cluster imports nothing of the controller's role.
 */
import type { WorkerState } from '../domain/worker.js';
import type { LiveWorkerDirectory, ReconcileTrigger } from '../ports/controller-ports.js';

/** What the view reads of a controller: its live workers, and whether a pass has adopted the runtime's. */
export interface ViewedController {
  readonly adopted: boolean;
  workers(): readonly { id: string; endpointId: string; state: WorkerState }[];
  workersOf(endpointId: string): readonly { id: string; state: WorkerState }[];
}

/** The controller of the term under way, and the pass it runs on request (one endpoint, or everything). */
export interface ControllerTarget {
  readonly controller: ViewedController;
  poke(endpointId?: string): void;
}

export class ControllerView implements LiveWorkerDirectory, ReconcileTrigger {
  readonly #requestPass: () => void;
  #target: { terms: ControllerTarget; leading: () => boolean } | undefined;

  /** `requestPass`: several replicas, the leader is asked for a pass too (none: one process). */
  constructor(options: { requestPass?: () => void } = {}) {
    this.#requestPass = options.requestPass ?? (() => {});
  }

  /** The traffic side's controller terms and this replica's leadership, once both are built; once only. */
  connect(terms: ControllerTarget, leading: () => boolean): void {
    if (this.#target) throw new Error('the controller view is connected already');
    this.#target = { terms, leading };
  }

  /** Whether this replica leads (its controller runs). */
  leading(): boolean {
    return this.#target?.leading() ?? false;
  }

  workerState(endpointId: string, workerId: string): WorkerState | null | undefined {
    const target = this.#target;
    if (!target?.leading() || !target.terms.controller.adopted) return undefined;
    return target.terms.controller.workersOf(endpointId).find((w) => w.id === workerId)?.state ?? null;
  }

  runningWorkers(endpointId: string): readonly string[] {
    return (this.#target?.terms.controller.workers() ?? [])
      .filter((w) => w.endpointId === endpointId && w.state === 'running')
      .map((w) => w.id);
  }

  poke(): void {
    this.#target?.terms.poke();
  }

  /** An endpoint changed (or, without one, some): this controller reconciles it, the leader is asked for a pass. */
  changed(endpointId?: string): void {
    if (!this.#target) return;
    this.#target.terms.poke(endpointId);
    this.#requestPass();
  }
}
