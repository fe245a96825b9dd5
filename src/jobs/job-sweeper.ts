/**
 * What time does to jobs, on an interval: ttl and executionTimeout end jobs (TIMED_OUT; a held one's worker is
 * told to stop), finished jobs past their retention go, jobs no worker has shown it holds for `lostAfterMs` (its
 * worker died, was removed, or its pings stopped listing them) go back to the queue, and a worker still holding a
 * job it was told to stop `stopGraceMs` ago is replaced. Every replica sweeps; each change is one conditional
 * update, so two sweeps at once change a job once.
 */
import type { Clock, Timers } from '../ports/clock.js';
import type { JobSweepStore } from '../store/jobs/job-roles.js';
import type { JobsLogger } from './http-io.js';
import { announceEnded, announceRequeued } from './job-announcements.js';
import type { JobEvents } from './job-events.js';
import type { Wakeups } from './wakeups.js';

export interface JobSweeperOptions {
  jobs: JobSweepStore;
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
    const { jobs, events } = this.#o;
    const now = this.#o.clock();
    const { timedOut } = await jobs.expire(now);
    for (const job of timedOut) announceEnded(this.#o, job, true);
    const lost = await jobs.requeueUnseen(
      now - this.#o.lostAfterMs,
      'its worker stopped showing it held the job',
      {
        maxAttempts: this.#o.maxAttempts,
        now,
      },
    );
    announceRequeued(this.#o, lost);
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
