/** The store look-up behind the routing view: an unknown Host name asked once, its miss believed for a while. */
import type { Clock } from '../ports/clock.js';

export interface StoreLookupOptions<T> {
  /** The store's answer for a name; undefined when nothing has it. */
  find: (name: string) => Promise<T | undefined>;
  clock: Clock;
  /** How long "nothing has this name" is believed without asking the store again. */
  missTtlMs: number;
  /** At most this many misses are remembered (a client sending ever new names costs queries, not memory). */
  maxMisses: number;
}

/**
 * Asks the store about names the routing view does not know, so that a flood of requests for a wrong Host does
 * not query the store once each: concurrent questions about one name share one query, and a miss is believed for
 * `missTtlMs` or until `forgetMisses` (the controller reported, and may know new endpoints). Hits are not kept:
 * the routing view has them after its next pass.
 */
export class StoreLookup<T> {
  readonly #o: StoreLookupOptions<T>;
  /** name -> until when its miss is believed. */
  readonly #misses = new Map<string, number>();
  readonly #pending = new Map<string, Promise<T | undefined>>();

  constructor(options: StoreLookupOptions<T>) {
    this.#o = options;
  }

  find(name: string): Promise<T | undefined> {
    const missUntil = this.#misses.get(name);
    if (missUntil !== undefined) {
      if (this.#o.clock() < missUntil) return Promise.resolve(undefined);
      this.#misses.delete(name);
    }
    let pending = this.#pending.get(name);
    if (!pending) {
      pending = this.#o.find(name).then(
        (found) => {
          this.#pending.delete(name);
          if (found === undefined) this.#rememberMiss(name);
          return found;
        },
        (error: unknown) => {
          this.#pending.delete(name);
          throw error;
        },
      );
      this.#pending.set(name, pending);
    }
    return pending;
  }

  forgetMisses(): void {
    if (this.#misses.size > 0) this.#misses.clear();
  }

  #rememberMiss(name: string): void {
    if (this.#misses.size >= this.#o.maxMisses) this.#misses.clear();
    this.#misses.set(name, this.#o.clock() + this.#o.missTtlMs);
  }
}
