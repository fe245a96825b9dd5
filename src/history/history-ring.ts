/**
 * A ring of samples kept in columns: one time and a fixed set of figures per sample, in typed arrays allocated
 * once, so that its memory is fixed when it is made (`bytes`) and a push overwrites the oldest sample. Pure.
 */

export class HistoryRing {
  readonly capacity: number;
  readonly #times: Float64Array;
  /** Every figure of every sample in one buffer, column after column; NaN where a figure has no value. */
  readonly #values: Float32Array;
  readonly #width: number;
  /** Where the next sample goes, and how many are kept. */
  #next = 0;
  #size = 0;

  constructor(options: { capacity: number; columns: number }) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1)
      throw new RangeError('a history ring holds at least one sample');
    this.capacity = options.capacity;
    this.#times = new Float64Array(options.capacity);
    this.#width = options.columns;
    this.#values = new Float32Array(options.capacity * options.columns);
  }

  /** The bytes its samples take (the typed arrays' contents): `capacity * (8 + 4 * columns)`. */
  static bytesFor(capacity: number, columns: number): number {
    return capacity * (Float64Array.BYTES_PER_ELEMENT + columns * Float32Array.BYTES_PER_ELEMENT);
  }

  get bytes(): number {
    return HistoryRing.bytesFor(this.capacity, this.#width);
  }

  get size(): number {
    return this.#size;
  }

  /** Adds a sample taken at `at` (ms); `values[i]` goes in column i (missing ones are NaN). */
  push(at: number, values: ArrayLike<number>): void {
    const slot = this.#next;
    this.#times[slot] = at;
    for (let i = 0; i < this.#width; i++)
      this.#values[i * this.capacity + slot] = i < values.length ? (values[i] as number) : Number.NaN;
    this.#next = (slot + 1) % this.capacity;
    this.#size = Math.min(this.#size + 1, this.capacity);
  }

  /** The last `count` samples (all by default), oldest first: their times and each column's values. */
  read(count = this.#size): { times: number[]; columns: number[][] } {
    const n = Math.max(0, Math.min(count, this.#size));
    const first = (this.#next - n + this.capacity) % this.capacity;
    const slots = Array.from({ length: n }, (_, i) => (first + i) % this.capacity);
    return {
      times: slots.map((slot) => this.#times[slot] as number),
      columns: Array.from({ length: this.#width }, (_, i) =>
        slots.map((slot) => this.#values[i * this.capacity + slot] as number),
      ),
    };
  }

  /** The time of the newest sample; undefined while empty. */
  latest(): number | undefined {
    return this.#size === 0 ? undefined : this.#times[(this.#next - 1 + this.capacity) % this.capacity];
  }
}
