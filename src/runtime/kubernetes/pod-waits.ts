/**
 * Those waiting for a worker's pod to change, as the pod watch sees it (a create until its pod runs, a removal until
 * it is gone, a followed log until its worker ends). The pod adapter tells every change (`changed`); a wait settles
 * true once its condition holds, false at its deadline (`within`) or at close. Timers are injected.
 */
import { systemTimers, type Timers } from '../../ports/clock.js';

/** One wait: `promise` settles true once the condition holds, false at the deadline or at close. */
export interface PodWait {
  readonly promise: Promise<boolean>;
  /** Stops waiting; the promise stays unsettled. */
  cancel(): void;
  /** Gives the wait a deadline `ms` from now; resolves as `promise`. */
  within(ms: number): Promise<boolean>;
}

export interface PodWaitsOptions<E> {
  /** The worker's entry now (its pod and what it reads as), undefined when it has none. */
  current: (workerId: string) => E | undefined;
  timers?: Timers;
}

type Waiter<E> = (entry: E | undefined) => void;

export class PodWaits<E> {
  readonly #current: (workerId: string) => E | undefined;
  readonly #timers: Timers;
  /** workerId -> those waiting for its pod to change. */
  readonly #waiters = new Map<string, Set<Waiter<E>>>();
  #closed = false;

  constructor(options: PodWaitsOptions<E>) {
    this.#current = options.current;
    this.#timers = options.timers ?? systemTimers;
  }

  /** Resolves with true once `done` holds for the worker's entry (now or at a later change), false at close. */
  waitFor(workerId: string, done: (entry: E | undefined) => boolean): PodWait {
    let settle: (value: boolean) => void = () => undefined;
    let timer: unknown;
    const waiters = this.#waiters.get(workerId) ?? new Set<Waiter<E>>();
    this.#waiters.set(workerId, waiters);
    const cancel = () => {
      waiters.delete(waiter);
      if (waiters.size === 0 && this.#waiters.get(workerId) === waiters) this.#waiters.delete(workerId);
      if (timer !== undefined) this.#timers.clearTimeout(timer);
    };
    const waiter: Waiter<E> = (entry) => {
      if (this.#closed) {
        cancel();
        settle(false);
      } else if (done(entry)) {
        cancel();
        settle(true);
      }
    };
    const promise = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    waiters.add(waiter);
    const now = this.#current(workerId);
    if (done(now)) waiter(now);
    return {
      promise,
      cancel,
      within: (ms: number) => {
        timer = this.#timers.setTimeout(() => {
          cancel();
          settle(false);
        }, ms);
        return promise;
      },
    };
  }

  /** The worker's pod changed: its entry now, undefined when it is gone. */
  changed(workerId: string, entry: E | undefined): void {
    const waiters = this.#waiters.get(workerId);
    if (waiters) for (const waiter of [...waiters]) waiter(entry);
  }

  /** Every wait settles false, now and from now on. */
  close(): void {
    this.#closed = true;
    for (const waiters of this.#waiters.values()) for (const waiter of [...waiters]) waiter(undefined);
    this.#waiters.clear();
  }

  /** Workers someone waits for (for tests: a settled or cancelled wait leaves nothing behind). */
  get size(): number {
    return this.#waiters.size;
  }
}
