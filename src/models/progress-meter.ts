/**
 * A download's progress as people read it: bytes done of the total, and the rate over the last few seconds (not since
 * the start, so a stall shows as a falling rate). Pure: the clock is injected.
 */
import type { Clock } from '../ports/clock.js';

/** How far back the rate looks. */
const RATE_WINDOW_MS = 5_000;

export class ProgressMeter {
  #done = 0;
  /** [time, bytes done then], oldest first, spanning at most the window. */
  readonly #samples: [number, number][] = [];
  readonly #options: { clock: Clock; bytesTotal: number; bytesDone?: number; windowMs?: number };

  constructor(options: { clock: Clock; bytesTotal: number; bytesDone?: number; windowMs?: number }) {
    this.#options = options;
    this.#done = options.bytesDone ?? 0;
    this.#samples.push([options.clock(), this.#done]);
  }

  add(bytes: number): void {
    this.#done += bytes;
    const now = this.#options.clock();
    this.#samples.push([now, this.#done]);
    const windowMs = this.#options.windowMs ?? RATE_WINDOW_MS;
    // Keep one sample at or before the window's start, so the rate spans the whole window.
    while (this.#samples.length > 2 && (this.#samples[1]?.[0] ?? now) <= now - windowMs)
      this.#samples.shift();
  }

  /** Bytes that were already there (a resumed file, or one another caller is fetching): done, but no rate. */
  resumed(bytes: number): void {
    this.#done += bytes;
    for (const sample of this.#samples) sample[1] += bytes;
  }

  get bytesDone(): number {
    return this.#done;
  }

  get bytesTotal(): number {
    return this.#options.bytesTotal;
  }

  /** Bytes per second over the window; 0 before there is a span to measure. */
  bytesPerSecond(): number {
    const now = this.#options.clock();
    const windowMs = this.#options.windowMs ?? RATE_WINDOW_MS;
    const oldest = this.#samples.filter(([at]) => at <= now - windowMs).at(-1) ??
      this.#samples[0] ?? [now, this.#done];
    const span = now - oldest[0];
    return span > 0 ? Math.round(((this.#done - oldest[1]) / span) * 1000) : 0;
  }
}
