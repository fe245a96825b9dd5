/**
 * What time does to jobs, on an interval: ttl and executionTimeout end jobs (TIMED_OUT; a held one's worker is
 * told to stop), finished jobs past their retention go, jobs no worker has shown it holds for `lostAfterMs` (its
 * worker died, was removed, or its pings stopped listing them) go back to the queue, and a worker still holding a
 * job it was told to stop `stopGraceMs` ago is replaced. Every replica sweeps; each change is one conditional
 * update, so two sweeps at once change a job once.
 */
import type { Clock, Timers } from '../ports/clock.js';
import type { JobRepository } from '../store/jobs.js';
import type { JobsLogger } from './http-io.js';
import { type JobEvents, wakeKey } from './job-events.js';
import type { Wakeups } from './wakeups.js';

export interface JobSweeperOptions {
  jobs: JobRepository;
  clock: Clock;
  timers: Timers;
  wakeups: Wakeups;
  events: JobEvents;
  logger: JobsLogger;
  intervalMs: number;
  lostAfterMs: number;
  stopGraceMs: number;
  maxAttempts: number;
}

export class JobSweeper {
  readonly #o: JobSweeperOptions;
  #timer: unknown;
  #running: Promise<void> | undefined;
  #closed = false;

  constructor(options: JobSweeperOptions) {
    this.#o = options;
  }

  start(): void {
    this.#schedule();
  }

  /** One sweep now (tests; the interval calls it too). */
  async sweep(): Promise<void> {
    const { jobs, wakeups, events } = this.#o;
    const now = this.#o.clock();
    const { timedOut } = await jobs.expire(now);
    for (const job of timedOut) {
      wakeups.wake(wakeKey.job(job.id));
      if (job.workerId !== null) wakeups.wake(wakeKey.stops(job.workerId));
      events.emit('finished', { job });
    }
    const lost = await jobs.requeueUnseen(
      now - this.#o.lostAfterMs,
      'its worker stopped showing it held the job',
      {
        maxAttempts: this.#o.maxAttempts,
        now,
      },
    );
    for (const job of lost.failed) {
      wakeups.wake(wakeKey.job(job.id));
      events.emit('finished', { job });
    }
    for (const id of lost.requeued) wakeups.wake(wakeKey.job(id));
    for (const endpointId of lost.endpoints) {
      wakeups.wake(wakeKey.queue(endpointId));
      events.emit('queued', { endpointId, lowPriority: false });
      events.emit('retried', { endpointId, count: lost.perEndpoint[endpointId] ?? 0 });
    }
    for (const overdue of await jobs.overdueStops(now - this.#o.stopGraceMs))
      events.emit('recycle', { ...overdue, reason: 'it kept a job it was told to stop' });
    // What retention and purges deleted goes back to the disk, one bounded step a sweep (SQLite).
    await jobs.reclaimSpace();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#o.timers.clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#running = this.sweep()
        .catch((error: unknown) =>
          this.#o.logger.warn(
            { err: error instanceof Error ? error.message : String(error) },
            'job sweep failed',
          ),
        )
        .finally(() => this.#schedule());
    }, this.#o.intervalMs);
  }
}
