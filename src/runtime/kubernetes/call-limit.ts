/**
 * At most `max` API calls of one kind in flight at once; the others wait their turn, first come first served. The
 * runtime's creates go through one: a burst of thousands of workers (a big scale-up, a restart with many pending)
 * must not open thousands of connections to the API server at once, which answers 429 past its own in-flight
 * limit (400 by default) and whose clients are expected to pace themselves (client-go's QPS).
 */
export class CallLimit {
  readonly #max: number;
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(max: number) {
    this.#max = Math.max(1, Math.floor(max));
  }

  /** Calls waiting for a turn now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#max) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active += 1;
    try {
      return await call();
    } finally {
      // The turn passes straight to the next waiter (#active unchanged), or is given back.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#active -= 1;
    }
  }
}
