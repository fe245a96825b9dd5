/**
 * Long polls' wake-ups in this process: a wait on a key (a job, an endpoint's queue, a worker's stops) ends when
 * something here says that key changed, when `recheckMs` passes (another replica may have changed the store), or
 * when its own bound passes, whichever comes first; the caller then looks at the store again. Every wait is
 * bounded; nothing is kept for a key nobody waits on.
 */
import type { Timers } from '../ports/clock.js';

export class Wakeups {
  readonly #timers: Timers;
  readonly #recheckMs: number;
  readonly #waiting = new Map<string, Set<() => void>>();

  constructor(options: { timers: Timers; recheckMs: number }) {
    this.#timers = options.timers;
    this.#recheckMs = options.recheckMs;
  }

  /** Resolves when `key` is woken, after min(`ms`, recheckMs), or when `signal` aborts. */
  wait(key: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      let waiters = this.#waiting.get(key);
      if (!waiters) {
        waiters = new Set();
        this.#waiting.set(key, waiters);
      }
      const set = waiters;
      const done = () => {
        this.#timers.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0 && this.#waiting.get(key) === set) this.#waiting.delete(key);
        resolve();
      };
      const timer = this.#timers.setTimeout(done, Math.max(0, Math.min(ms, this.#recheckMs)));
      set.add(done);
      if (signal?.aborted) done();
      else signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Wakes every wait on `key`. */
  wake(key: string): void {
    const waiters = this.#waiting.get(key);
    if (!waiters) return;
    for (const done of [...waiters]) done();
  }

  /** How many waits are under way (for tests and gauges). */
  get size(): number {
    let n = 0;
    for (const set of this.#waiting.values()) n += set.size;
    return n;
  }
}
