/**
 * Each endpoint's last traffic as this replica saw it (a request answered by its gateway, a job submitted through
 * it), kept in memory and written to the store every `flushMs` in one statement: no store write per request. The
 * store keeps the newest of every replica's marks, so several replicas agree, and a restart loses at most the last
 * `flushMs` of marks (the idle policies count in days). A flush that fails keeps its marks for the next one.
 */
import type { Timers } from '../ports/clock.js';
import type { EndpointActivityRepository } from '../store/endpoints/endpoint-activity.js';

export interface TrafficMarksOptions {
  activity: Pick<EndpointActivityRepository, 'recordTraffic'>;
  timers: Timers;
  flushMs: number;
  logger: { warn(fields: object, message: string): void };
}

export class TrafficMarks {
  readonly #o: TrafficMarksOptions;
  /** Marks not yet written: endpoint id -> the newest traffic time seen. */
  #pending = new Map<string, number>();
  #timer: unknown;
  #flushing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: TrafficMarksOptions) {
    this.#o = options;
    this.#schedule();
  }

  /** Traffic of the endpoint at `at` (memory only). */
  mark(endpointId: string, at: number): void {
    const before = this.#pending.get(endpointId);
    if (before === undefined || at > before) this.#pending.set(endpointId, at);
  }

  /** Writes the marks not yet written (one at a time: a flush waits for the one under way). */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#write());
    return this.#flushing;
  }

  /** Resolves once the write under way (if any) is done: tests on manual timers fire a flush, then wait for it. */
  settled(): Promise<void> {
    return this.#flushing;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#o.timers.clearTimeout(this.#timer);
    await this.flush();
  }

  async #write(): Promise<void> {
    if (this.#pending.size === 0) return;
    const marks = this.#pending;
    this.#pending = new Map();
    try {
      await this.#o.activity.recordTraffic(marks);
    } catch (error) {
      for (const [endpointId, at] of marks) this.mark(endpointId, at);
      this.#o.logger.warn(
        { err: error, endpoints: marks.size },
        "could not write the endpoints' last traffic",
      );
    }
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#schedule();
      void this.flush();
    }, this.#o.flushMs);
  }
}
