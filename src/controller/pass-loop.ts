/**
 * When the controller's passes run: one at a time, on the next turn after a poke (setImmediate, so that every poke
 * of one turn shares a pass), again at once when poked during a pass, and every `intervalMs` regardless. Runs on injected
 * timers, so that tests fire passes by advancing time.
 */
import { nextTurn, type Timers } from '../ports/clock.js';

export interface PassLoopOptions {
  timers: Timers;
  intervalMs: number;
  /** One pass; a rejection is handed to `onError` and the loop goes on. */
  pass: () => Promise<void>;
  /**
   * `repeated`: the pass before failed with the same message, so that a failure that lasts (a store that is
   * down) can be logged once, not once a pass.
   */
  onError: (error: unknown, context: { repeated: boolean }) => void;
}

export class PassLoop {
  readonly #o: PassLoopOptions;
  #tick: unknown;
  /** Cancels the pass asked for and not begun (undefined: none is). */
  #scheduled: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  /** The message of the last pass's failure; undefined after a pass that succeeded. */
  #lastFailure: string | undefined;

  constructor(options: PassLoopOptions) {
    this.#o = options;
  }

  /** A pass now, then one every interval. */
  start(): void {
    const tick = () => {
      this.poke();
      this.#tick = this.#o.timers.setTimeout(tick, this.#o.intervalMs);
    };
    tick();
  }

  /** A pass as soon as possible (calls before or during a pass are coalesced). */
  poke(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#scheduled !== undefined) return;
    // The next turn (setImmediate), after every timer and I/O callback already due: the health changes of one
    // turn (thousands of probes ending together) share one pass.
    this.#scheduled = nextTurn(this.#o.timers, () => {
      this.#scheduled = undefined;
      this.#run();
    });
  }

  /** No more passes; resolves once the one under way (if any) has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.timers.clearTimeout(this.#tick);
    this.#scheduled?.();
    this.#scheduled = undefined;
    await this.#running;
  }

  /** Resolves when the pass under way (if any) ends; one asked for but not begun waits for its timer. */
  settled(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  /** No pass under way or asked for. */
  get idle(): boolean {
    return this.#running === undefined && this.#scheduled === undefined;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  #run(): void {
    if (this.#stopped) return;
    this.#running = this.#o
      .pass()
      .then(
        () => {
          this.#lastFailure = undefined;
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          const repeated = message === this.#lastFailure;
          this.#lastFailure = message;
          this.#o.onError(error, { repeated });
        },
      )
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.poke();
        }
      });
  }
}
