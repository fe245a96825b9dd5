/**
 * Jobs in `/metrics` and in the history (docs/jobs.md, Watching jobs): the jobs that finished in this process by
 * endpoint and outcome, those it sent back to the queue, and the finished jobs' delay and execution times, counted
 * from the job events in plain numbers per endpoint (each job finishes on one replica, so the replicas' counts add
 * up); and every endpoint's jobs in the queue and in progress as the autoscaler's snapshot of the store last read
 * them (job-signals.ts: one grouped statement every second, whatever the number of endpoints), the same on every
 * replica.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { type Job, type JobStatus, jobTimes } from '../domain/job.js';
import {
  JOB_OUTCOMES,
  JOB_TIME_BUCKETS,
  type JobCounters,
  type JobOutcome,
  type LiveJobs,
} from '../ports/traffic.js';
import type { JobEvents } from './job-events.js';

/** The outcome a terminal status counts as; the label `/metrics` writes is the status itself. */
const OUTCOME_OF: Partial<Record<JobStatus, JobOutcome>> = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TIMED_OUT: 'timedOut',
};
const STATUS_OF: Record<JobOutcome, JobStatus> = {
  completed: 'COMPLETED',
  failed: 'FAILED',
  cancelled: 'CANCELLED',
  timedOut: 'TIMED_OUT',
};

interface Counts {
  finished: Record<JobOutcome, number>;
  retried: number;
  delayCounts: number[];
  executionCounts: number[];
}

export interface JobMetricsOptions {
  registry: Registry;
  events: JobEvents;
  /** Every endpoint's jobs in the queue and in progress at the last read (`JobSignals.live`). */
  live: () => ReadonlyMap<string, LiveJobs>;
}

export class JobMetrics {
  readonly #o: JobMetricsOptions;
  readonly #counts = new Map<string, Counts>();
  readonly #delay: Histogram<'endpoint'>;
  readonly #execution: Histogram<'endpoint'>;
  readonly #unsubscribe: (() => void)[];

  constructor(options: JobMetricsOptions) {
    this.#o = options;
    const registers = [options.registry];
    const counts = this.#counts;
    const metrics = this;
    new Gauge({
      name: 'corral_jobs',
      help: 'Jobs in the queue (IN_QUEUE) and on a worker (IN_PROGRESS) by endpoint, as the store counts them: every replica reports the same, aggregate with max, not sum',
      labelNames: ['endpoint', 'status'] as const,
      registers,
      collect() {
        this.reset();
        for (const [endpoint, live] of metrics.live()) {
          this.set({ endpoint, status: 'IN_QUEUE' }, live.inQueue);
          this.set({ endpoint, status: 'IN_PROGRESS' }, live.inProgress);
        }
      },
    });
    new Counter({
      name: 'corral_jobs_finished_total',
      help: 'Jobs that reached a terminal status on this replica, by endpoint and outcome (COMPLETED, FAILED, CANCELLED, TIMED_OUT)',
      labelNames: ['endpoint', 'outcome'] as const,
      registers,
      collect() {
        this.reset();
        for (const [endpoint, c] of counts)
          for (const outcome of JOB_OUTCOMES)
            if (c.finished[outcome] > 0)
              this.inc({ endpoint, outcome: STATUS_OF[outcome] }, c.finished[outcome]);
      },
    });
    new Counter({
      name: 'corral_jobs_retried_total',
      help: "Jobs this replica sent back to the queue for another attempt, by endpoint: a client's retry, or their worker was lost or ended",
      labelNames: ['endpoint'] as const,
      registers,
      collect() {
        this.reset();
        for (const [endpoint, c] of counts) if (c.retried > 0) this.inc({ endpoint }, c.retried);
      },
    });
    this.#delay = new Histogram({
      name: 'corral_job_delay_seconds',
      help: 'Of the jobs that finished on this replica: time from submission (or a retry) to a worker taking the job, its delayTime',
      labelNames: ['endpoint'] as const,
      buckets: [...JOB_TIME_BUCKETS],
      registers,
    });
    this.#execution = new Histogram({
      name: 'corral_job_execution_seconds',
      help: 'Of the jobs that finished on this replica after a worker took them: time on the worker, its executionTime',
      labelNames: ['endpoint'] as const,
      buckets: [...JOB_TIME_BUCKETS],
      registers,
    });
    this.#unsubscribe = [
      options.events.on('finished', ({ job }) => this.#finished(job)),
      options.events.on('retried', ({ endpointId, count }) => {
        if (count > 0) this.#of(endpointId).retried += count;
      }),
    ];
  }

  /** Stops counting the job events. */
  close(): void {
    for (const off of this.#unsubscribe) off();
  }

  /** Every endpoint's jobs in the queue and in progress at the last read (endpoints with none are absent). */
  live(): ReadonlyMap<string, LiveJobs> {
    return this.#o.live();
  }

  /**
   * Every endpoint's counts now (copies), for the history; the counts of an endpoint `exists` denies (deleted) are
   * forgotten first, in `/metrics` too.
   */
  counters(exists: (endpointId: string) => boolean = () => true): Map<string, JobCounters> {
    const all = new Map<string, JobCounters>();
    for (const [endpoint, c] of this.#counts) {
      if (!exists(endpoint)) {
        this.#forget(endpoint);
        continue;
      }
      all.set(endpoint, {
        finished: { ...c.finished },
        retried: c.retried,
        delayCounts: [...c.delayCounts],
        executionCounts: [...c.executionCounts],
      });
    }
    return all;
  }

  #forget(endpoint: string): void {
    this.#counts.delete(endpoint);
    this.#delay.remove({ endpoint });
    this.#execution.remove({ endpoint });
  }

  #of(endpointId: string): Counts {
    let c = this.#counts.get(endpointId);
    if (!c) {
      c = {
        finished: { completed: 0, failed: 0, cancelled: 0, timedOut: 0 },
        retried: 0,
        delayCounts: new Array<number>(JOB_TIME_BUCKETS.length + 1).fill(0),
        executionCounts: new Array<number>(JOB_TIME_BUCKETS.length + 1).fill(0),
      };
      this.#counts.set(endpointId, c);
    }
    return c;
  }

  #finished(job: Job): void {
    const outcome = OUTCOME_OF[job.status];
    if (!outcome) return;
    const c = this.#of(job.endpointId);
    c.finished[outcome] += 1;
    // The times its status body says (domain/job.ts): delay for every finished job, execution once a worker took it.
    const { delayTime, executionTime } = jobTimes(job, job.completedAt ?? job.createdAt);
    countIn(c.delayCounts, delayTime / 1000);
    this.#delay.observe({ endpoint: job.endpointId }, delayTime / 1000);
    if (job.startedAt !== null) {
      countIn(c.executionCounts, executionTime / 1000);
      this.#execution.observe({ endpoint: job.endpointId }, executionTime / 1000);
    }
  }
}

/** Adds one to the bucket of JOB_TIME_BUCKETS that `seconds` falls in (the last: +Inf). */
function countIn(counts: number[], seconds: number): void {
  let i = JOB_TIME_BUCKETS.findIndex((bound) => seconds <= bound);
  if (i < 0) i = JOB_TIME_BUCKETS.length;
  counts[i] = (counts[i] as number) + 1;
}
