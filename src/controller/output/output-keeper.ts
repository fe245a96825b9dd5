/**
 * Keeps the last output of workers that end (crashed, failed, replaced, scaled down) in the store, so that their
 * log can be read once their containers are gone, also after a restart. The controller asks it to `begin` before it
 * removes a worker: the worker's log is followed from then on (its last lines within OutputLimits), and once the
 * removal is over, what was read is saved and the endpoint's older outputs beyond OutputRetention go.
 */

import type { Clock, Timers } from '../../ports/clock.js';
import type { LogOptions } from '../../runtime/types.js';
import type { EndedWorker, WorkerOutputRepository } from '../../store/workers/worker-outputs.js';
import type { ControllerLogger } from '../controller-options.js';
import { DEFAULT_OUTPUT_RETENTION, type OutputRetention, outputsToDrop } from './output-retention.js';
import { DEFAULT_OUTPUT_LIMITS, type OutputLimits, OutputTail } from './output-tail.js';

export interface OutputKeeperOptions {
  logs(workerId: string, options: LogOptions): AsyncIterable<string>;
  outputs: Pick<WorkerOutputRepository, 'save' | 'listByEndpoint' | 'delete' | 'deleteOfGoneEndpoints'>;
  clock: Clock;
  timers: Timers;
  logger: ControllerLogger;
  limits?: OutputLimits;
  retention?: OutputRetention;
  /** Longest wait for the log to open before the removal goes ahead all the same. */
  openTimeoutMs?: number;
  /** Longest wait, once the worker is removed, for its log to end (a removal that failed leaves it open). */
  settleMs?: number;
}

/** The worker that is about to be removed, as the controller knows it. */
export type EndingWorker = Pick<EndedWorker, 'workerId' | 'endpointId' | 'failed' | 'reason'>;

export class OutputKeeper {
  readonly #o: Required<OutputKeeperOptions>;
  /** Endpoint ids seen live at the last pass; undefined before the first. */
  #live: ReadonlySet<string> | undefined;
  /** Saves under way, so that `close` can wait for them. */
  readonly #saving = new Set<Promise<void>>();

  constructor(options: OutputKeeperOptions) {
    this.#o = {
      limits: DEFAULT_OUTPUT_LIMITS,
      retention: DEFAULT_OUTPUT_RETENTION,
      openTimeoutMs: 2000,
      settleMs: 2000,
      ...options,
    };
  }

  /**
   * Starts following the worker's log. Resolves once it is open (or could not be, or after openTimeoutMs), so that
   * the removal cannot begin before the log is attached; the function it gives is called once the removal is over,
   * and resolves to the lines read (the log line of a failure quotes its last).
   */
  async begin(worker: EndingWorker): Promise<() => Promise<string[]>> {
    if (this.#live && !this.#live.has(worker.endpointId)) return async () => [];
    const tail = new OutputTail(this.#o.limits);
    const abort = new AbortController();
    let signalOpen!: () => void;
    const opened = new Promise<void>((resolve) => {
      signalOpen = resolve;
    });
    let attached = false;
    const reading = (async () => {
      try {
        const lines = this.#o.logs(worker.workerId, {
          follow: true,
          tail: this.#o.limits.lines,
          signal: abort.signal,
          onOpen: () => {
            attached = true;
            signalOpen();
          },
        });
        for await (const line of lines) tail.push(line);
      } catch (error) {
        // A worker whose container never existed (its create failed) has no output; anything else is said.
        if (attached)
          this.#o.logger.warn({ err: error, workerId: worker.workerId }, 'cannot read worker output');
      } finally {
        signalOpen();
      }
    })();
    await this.#within(opened, this.#o.openTimeoutMs);
    return () => {
      const saving = this.#finish(worker, reading, abort, tail, () => attached);
      this.#saving.add(saving);
      void saving.finally(() => this.#saving.delete(saving));
      return saving.then(() => (attached ? tail.lines() : []));
    };
  }

  /**
   * The endpoints that exist after a pass: the output of the others' workers goes, at the first pass and whenever
   * one is deleted, and no more is kept for them.
   */
  retain(live: ReadonlySet<string>): void {
    const before = this.#live;
    this.#live = live;
    if (before && [...before].every((id) => live.has(id))) return;
    this.#o.outputs.deleteOfGoneEndpoints().catch((error: unknown) => {
      this.#o.logger.warn({ err: error }, 'cannot forget the output of deleted endpoints');
    });
  }

  /** Waits for the saves under way (at shutdown). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#saving]);
  }

  async #finish(
    worker: EndingWorker,
    reading: Promise<void>,
    abort: AbortController,
    tail: OutputTail,
    attached: () => boolean,
  ): Promise<void> {
    const ended = await this.#within(reading, this.#o.settleMs);
    if (!ended) abort.abort();
    await reading;
    if (!attached()) return;
    try {
      await this.#o.outputs.save({
        ...worker,
        endedAt: this.#o.clock(),
        truncated: tail.truncated,
        lines: tail.lines(),
      });
      const kept = await this.#o.outputs.listByEndpoint(worker.endpointId);
      await this.#o.outputs.delete(outputsToDrop(kept, this.#o.retention));
    } catch (error) {
      this.#o.logger.warn({ err: error, workerId: worker.workerId }, 'cannot keep worker output');
    }
  }

  /** Whether `promise` settled within `ms`. */
  #within(promise: Promise<void>, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = this.#o.timers.setTimeout(() => resolve(false), ms);
      void promise.then(() => {
        this.#o.timers.clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
