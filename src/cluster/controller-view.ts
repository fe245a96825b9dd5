/**
 * The controller as the parts built before it see it (`corral serve` builds the jobs side and the idle policies
 * first: the controller starts queue workers with the jobs' env, the gateway serves their routes). It answers the
 * ports of `ports/controller-ports.ts` for the controller the term switch says is current (controller-terms.ts,
 * whose observer it is): until the switch exists, and while that controller does not run (this replica does not
 * lead), it answers as a replica that does not lead: no worker's state, no pass. Generic over the controller so
 * that the cluster imports nothing of the controller's role.
 */
import type { WorkerState } from '../domain/worker.js';
import type { LiveWorkerDirectory, ReconcileTrigger } from '../ports/controller-ports.js';
import type { TermController, TermObserver } from './controller-terms.js';

/** What the view reads of a controller: its live workers, whether a pass has adopted the runtime's, its passes. */
export interface ViewedController extends Pick<TermController, 'poke' | 'pokeEndpoint'> {
  readonly adopted: boolean;
  workers(): readonly { id: string; endpointId: string; state: WorkerState }[];
  workersOf(endpointId: string): readonly { id: string; state: WorkerState }[];
}

export class ControllerView implements LiveWorkerDirectory, ReconcileTrigger, TermObserver<ViewedController> {
  readonly #requestPass: () => void;
  #current: { controller: ViewedController; running: boolean } | undefined;

  /** `requestPass`: several replicas, the leader is asked for a pass too (none: one process). */
  constructor(options: { requestPass?: () => void } = {}) {
    this.#requestPass = options.requestPass ?? (() => {});
  }

  /** The term switch's word: the controller now current, and whether it runs. */
  switched(controller: ViewedController, running: boolean): void {
    this.#current = { controller, running };
  }

  /** Whether this replica's controller runs (it leads, and its term has begun). */
  leading(): boolean {
    return this.#current?.running ?? false;
  }

  workerState(endpointId: string, workerId: string): WorkerState | null | undefined {
    const current = this.#current;
    if (!current?.running || !current.controller.adopted) return undefined;
    return current.controller.workersOf(endpointId).find((w) => w.id === workerId)?.state ?? null;
  }

  runningWorkers(endpointId: string): readonly string[] {
    return (this.#current?.controller.workers() ?? [])
      .filter((w) => w.endpointId === endpointId && w.state === 'running')
      .map((w) => w.id);
  }

  poke(): void {
    if (this.#current?.running) this.#current.controller.poke();
  }

  /** An endpoint changed (or, without one, some): this controller reconciles it, the leader is asked for a pass. */
  changed(endpointId?: string): void {
    const current = this.#current;
    if (!current) return;
    if (current.running) {
      if (endpointId === undefined) current.controller.poke();
      else current.controller.pokeEndpoint(endpointId);
    }
    this.#requestPass();
  }
}
