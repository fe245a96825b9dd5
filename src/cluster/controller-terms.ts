/**
 * The controller's terms in one process: which controller runs, and the switch from one to the next when this
 * replica takes over (a fresh controller fenced by the new term) or steps down (the controller stops; a follower
 * keeps an idle one that shows no workers). Switches happen one at a time, in the order leadership decides them.
 * Generic over the controller so that the cluster imports nothing of the controller's role.
 */
import type { TermFence } from './elector.js';
import type { ControllerTerms } from './leadership.js';

/** What a term runs: started once, stopped once, poked between (one endpoint, or everything). */
export interface TermController {
  start(): void;
  stop(): Promise<void>;
  poke(): void;
  pokeEndpoint(endpointId: string): void;
}

/** Told of every switch, from the switch's construction on: the controller now current, and whether it runs. */
export interface TermObserver<C> {
  switched(controller: C, running: boolean): void;
}

export class ControllerTermSwitch<C extends TermController> implements ControllerTerms {
  readonly #create: (fence?: TermFence) => C;
  readonly #observer: TermObserver<C> | undefined;
  #controller: C;
  #running = false;
  #turns: Promise<void> = Promise.resolve();

  /**
   * `create` makes a controller: unfenced for one process (or an idle follower), fenced for a term. `observer`:
   * the parts built before the controller (the jobs side, the idle policies) see each switch through it.
   */
  constructor(options: { create: (fence?: TermFence) => C; observer?: TermObserver<C> }) {
    this.#create = options.create;
    this.#observer = options.observer;
    this.#controller = this.#create();
    this.#switched();
  }

  /** The controller of the term under way (a follower's: idle, never started). */
  get controller(): C {
    return this.#controller;
  }

  start(): void {
    this.#running = true;
    this.#controller.start();
    this.#switched();
  }

  /**
   * Asks the running controller for the endpoint's reconcile, or without one for its whole pass; nothing while none
   * runs (a replica that does not lead).
   */
  poke(endpointId?: string): void {
    if (!this.#running) return;
    if (endpointId === undefined) this.#controller.poke();
    else this.#controller.pokeEndpoint(endpointId);
  }

  lead(fence: TermFence): Promise<void> {
    return this.#inTurn(async () => {
      this.#stopping();
      await this.#controller.stop();
      this.#controller = this.#create(fence);
      this.#running = true;
      this.#controller.start();
      this.#switched();
    });
  }

  stepDown(): Promise<void> {
    return this.#inTurn(async () => {
      this.#stopping();
      await this.#controller.stop();
      // Followers show no workers of their own (metrics, held GPUs); the next term starts afresh.
      this.#controller = this.#create();
      this.#switched();
    });
  }

  /** Waits for the switch under way, then stops the controller. */
  async close(): Promise<void> {
    this.#stopping();
    await this.#turns;
    // A term that began meanwhile started its controller: it is the one stopped now.
    this.#stopping();
    await this.#controller.stop();
  }

  /** The current controller runs no more from now on: no poke reaches it, the observer sees it stopped. */
  #stopping(): void {
    this.#running = false;
    this.#switched();
  }

  #switched(): void {
    this.#observer?.switched(this.#controller, this.#running);
  }

  #inTurn(step: () => Promise<void>): Promise<void> {
    this.#turns = this.#turns.then(step, step);
    return this.#turns;
  }
}
