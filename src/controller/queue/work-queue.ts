/**
 * The controller's work queue, keyed by endpoint id as controller-runtime's is: a key added while it waits is queued
 * once (coalescing); one added while it is being processed is processed once more afterwards; a failure requeues
 * the key after its own exponential backoff (capped), which its next success forgets; a periodic resync adds the
 * keys the resync names; at most `concurrency` keys are processed at once; a key that supersedes the others (the
 * controller's whole pass) is processed alone, goes first and takes the place of those waiting. Processing begins on the next turn after an add, so that the adds of one turn share it.
 * Runs on injected timers, so that tests process keys by advancing time.
 */
import { nextTurn, type Timers } from '../../ports/clock.js';

/** A key's retries: the first after `baseMs`, each next one twice as late, never later than `capMs`. */
export interface RetryPolicy {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 50, capMs: 10_000 };

/** How long after its `failures`-th failure in a row a key is tried again (pure). */
export function retryDelayMs(policy: RetryPolicy, failures: number): number {
  return Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, failures - 1));
}

export interface WorkQueueOptions<K> {
  timers: Timers;
  /** Processes one key; a rejection is handed to `onError` and the key is tried again after its backoff. */
  process: (key: K) => Promise<void>;
  /** Keys processed at once, at most (at least 1). */
  concurrency: number;
  retry: RetryPolicy;
  /**
   * A key whose processing does every other key's work (the controller's whole pass), processed alone: it starts
   * once those running ended, before the keys waiting, which are dropped when it begins. Those added while it runs
   * wait for it.
   */
  supersedes?: (key: K) => boolean;
  /** Every `everyMs`, from start() on, the keys `keys()` names are added. */
  resync?: { everyMs: number; keys: () => Iterable<K> };
  /**
   * `repeated`: the failure before this one (of any key, with no success since) had the same message, so that a
   * failure that lasts (a store that is down) can be logged once, not once a try or a key. `retryInMs`: when the
   * key is tried again.
   */
  onError: (key: K, error: unknown, context: { repeated: boolean; retryInMs: number }) => void;
}

export class WorkQueue<K> {
  readonly #o: WorkQueueOptions<K>;
  /** Keys waiting, in the order they were added (a Set keeps insertion order). */
  readonly #waiting = new Set<K>();
  /** Keys being processed -> the end of their processing (which never rejects). */
  readonly #active = new Map<K, Promise<void>>();
  /** Keys added while being processed: processed once more afterwards. */
  readonly #again = new Set<K>();
  /** Each failing key's failures in a row. */
  readonly #failures = new Map<K, number>();
  /** The message of the last failure of any key, until a key succeeds. */
  #lastFailure: string | undefined;
  /** Each failed key's retry timer. */
  readonly #retries = new Map<K, unknown>();
  /** Keys added with a delay -> their timer (the first such add's: later ones within it coalesce). */
  readonly #delayed = new Map<K, unknown>();
  /** Whether a superseding key is being processed (nothing else starts meanwhile). */
  #aloneRunning = false;
  /** Cancels the processing asked for on the next turn (undefined: none is). */
  #scheduled: (() => void) | undefined;
  #tick: unknown;
  #stopped = false;

  constructor(options: WorkQueueOptions<K>) {
    this.#o = { ...options, concurrency: Math.max(1, options.concurrency) };
  }

  /** A resync now, then one every `resync.everyMs`. */
  start(): void {
    const resync = this.#o.resync;
    if (!resync) return;
    const tick = () => {
      for (const key of resync.keys()) this.add(key);
      this.#tick = this.#o.timers.setTimeout(tick, resync.everyMs);
    };
    tick();
  }

  /** The key is processed as soon as possible (once, however often it is added before it begins). */
  add(key: K): void {
    if (this.#stopped) return;
    if (this.#active.has(key)) {
      this.#again.add(key);
      return;
    }
    if (this.#waiting.has(key)) return;
    this.#waiting.add(key);
    this.#schedule();
  }

  /**
   * The key is added `delayMs` from now (0: now), as controller-runtime's AddAfter: the adds of one key within
   * that time share one processing. An add already waiting to be added keeps its time.
   */
  addAfter(key: K, delayMs: number): void {
    if (this.#stopped) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    if (this.#delayed.has(key) || this.#waiting.has(key)) return;
    const handle = this.#o.timers.setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, handle);
  }

  /** No more processing; resolves once what is under way has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.timers.clearTimeout(this.#tick);
    this.#scheduled?.();
    this.#scheduled = undefined;
    for (const handle of [...this.#retries.values(), ...this.#delayed.values()])
      this.#o.timers.clearTimeout(handle);
    this.#retries.clear();
    this.#delayed.clear();
    this.#waiting.clear();
    this.#again.clear();
    await this.settled();
  }

  /** Resolves when the keys being processed now have ended; those waiting wait for their turn's timer. */
  async settled(): Promise<void> {
    await Promise.all(this.#active.values());
  }

  /** Nothing is being processed, waiting, or asked for on the next turn (retries on their timers aside). */
  get idle(): boolean {
    return this.#active.size === 0 && this.#waiting.size === 0 && this.#scheduled === undefined;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Keys waiting or being processed (for tests and the bench). */
  get depth(): number {
    return this.#waiting.size + this.#active.size;
  }

  #schedule(): void {
    if (this.#scheduled !== undefined || this.#stopped) return;
    this.#scheduled = nextTurn(this.#o.timers, () => {
      this.#scheduled = undefined;
      this.#drain();
    });
  }

  /** Starts waiting keys in order while the bounds allow; a superseding key waits for those running, alone. */
  #drain(): void {
    const first = this.#o.supersedes ? [...this.#waiting].find(this.#o.supersedes) : undefined;
    if (first !== undefined) {
      if (this.#stopped || this.#active.size > 0) return;
      // It does their work: they need not wait for it.
      this.#waiting.clear();
      this.#run(first, true);
      return;
    }
    for (const key of this.#waiting) {
      if (this.#stopped || this.#aloneRunning || this.#active.size >= this.#o.concurrency) return;
      this.#waiting.delete(key);
      this.#run(key, false);
    }
  }

  #run(key: K, alone: boolean): void {
    const retry = this.#retries.get(key);
    if (retry !== undefined) {
      // Processed now: its retry is this.
      this.#o.timers.clearTimeout(retry);
      this.#retries.delete(key);
    }
    if (alone) this.#aloneRunning = true;
    let processing: Promise<void>;
    try {
      processing = this.#o.process(key);
    } catch (error) {
      processing = Promise.reject(error);
    }
    const ended = processing
      .then(
        () => {
          this.#failures.delete(key);
          this.#lastFailure = undefined;
        },
        (error: unknown) => this.#failed(key, error),
      )
      .finally(() => {
        this.#active.delete(key);
        if (alone) this.#aloneRunning = false;
        if (this.#again.delete(key)) this.add(key);
        if (this.#waiting.size > 0) this.#schedule();
      });
    this.#active.set(key, ended);
  }

  #failed(key: K, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    const count = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, count);
    const repeated = this.#lastFailure === message;
    this.#lastFailure = message;
    const retryInMs = retryDelayMs(this.#o.retry, count);
    this.#o.onError(key, error, { repeated, retryInMs });
    if (this.#stopped) return;
    const handle = this.#o.timers.setTimeout(() => {
      this.#retries.delete(key);
      this.add(key);
    }, retryInMs);
    this.#retries.set(key, handle);
  }
}
