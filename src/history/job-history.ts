/**
 * Jobs in the history (docs/jobs.md, Watching jobs): each interval's jobs finished by outcome, jobs retried, the
 * finished jobs' delay and execution time buckets, and the jobs in the queue and in progress at the sample. An
 * endpoint gets its job rings only once it has jobs, so that endpoints that never have any cost what they did
 * before. Pure but for the rings it fills: history.ts samples, history-merge.ts merges replicas' figures.
 */
import { bucketQuantile } from '../gateway/hot-histogram.js';
import {
  JOB_OUTCOMES,
  JOB_TIME_BUCKETS,
  type JobCounters,
  type JobsHistory,
  type LiveJobs,
  type RecentJobs,
} from '../ports/traffic.js';
import { HistoryRing } from './history-ring.js';

/** The bucket counts of one kind of time: JOB_TIME_BUCKETS and +Inf. */
export const JOB_TIME_SLOTS = JOB_TIME_BUCKETS.length + 1;

/**
 * One endpoint's jobs in one sample, in figures that add up across replicas (but the live counts, which every
 * replica reads from the one store: merged by taking the largest).
 */
export interface JobFigures {
  inQueue: number;
  inProgress: number;
  completed: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  retried: number;
  /** The finished jobs' delay and execution times in JOB_TIME_BUCKETS (+Inf last). */
  delayCounts: number[];
  executionCounts: number[];
}

export function emptyJobFigures(): JobFigures {
  return {
    inQueue: 0,
    inProgress: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    timedOut: 0,
    retried: 0,
    delayCounts: new Array<number>(JOB_TIME_SLOTS).fill(0),
    executionCounts: new Array<number>(JOB_TIME_SLOTS).fill(0),
  };
}

/**
 * The jobs of one interval: what the counters gained since `before` (counts that went down were forgotten and
 * begun again: everything now is new) and the live counts now; undefined where there is nothing to show.
 */
export function jobInterval(
  now: JobCounters | undefined,
  before: JobCounters | undefined,
  live: LiveJobs | undefined,
): JobFigures | undefined {
  const f = emptyJobFigures();
  f.inQueue = live?.inQueue ?? 0;
  f.inProgress = live?.inProgress ?? 0;
  if (now) {
    const base = before && totalOf(before) <= totalOf(now) ? before : undefined;
    for (const outcome of JOB_OUTCOMES) f[outcome] = now.finished[outcome] - (base?.finished[outcome] ?? 0);
    f.retried = now.retried - (base?.retried ?? 0);
    for (let i = 0; i < JOB_TIME_SLOTS; i++) {
      f.delayCounts[i] = (now.delayCounts[i] ?? 0) - (base?.delayCounts[i] ?? 0);
      f.executionCounts[i] = (now.executionCounts[i] ?? 0) - (base?.executionCounts[i] ?? 0);
    }
  }
  return hasJobs(f) ? f : undefined;
}

function totalOf(c: JobCounters): number {
  let total = c.retried;
  for (const outcome of JOB_OUTCOMES) total += c.finished[outcome];
  return total;
}

/** Whether the figures show any job. */
export function hasJobs(f: JobFigures): boolean {
  return (
    f.inQueue + f.inProgress + f.completed + f.failed + f.cancelled + f.timedOut + f.retried > 0 ||
    f.delayCounts.some((n) => n > 0)
  );
}

/** Adds `f` into `into`: counts and buckets summed, the live counts (the same store's) the largest. */
export function addJobFigures(into: JobFigures, f: JobFigures): void {
  into.inQueue = Math.max(into.inQueue, f.inQueue);
  into.inProgress = Math.max(into.inProgress, f.inProgress);
  for (const outcome of JOB_OUTCOMES) into[outcome] += f[outcome];
  into.retried += f.retried;
  for (let i = 0; i < JOB_TIME_SLOTS; i++) {
    into.delayCounts[i] = (into.delayCounts[i] as number) + (f.delayCounts[i] ?? 0);
    into.executionCounts[i] = (into.executionCounts[i] as number) + (f.executionCounts[i] ?? 0);
  }
}

/** A percentile (ms, to a tenth) of a time's bucket counts; null without any. A time past the last bound is it. */
export function jobQuantileMs(counts: readonly number[], q: number): number | null {
  let count = 0;
  for (const c of counts) count += c;
  if (count === 0) return null;
  const top = JOB_TIME_BUCKETS[JOB_TIME_BUCKETS.length - 1] as number;
  return Math.round(bucketQuantile(JOB_TIME_BUCKETS, counts, count, q, 0, top) * 10_000) / 10;
}

/** The ring's columns. */
const COLUMNS = [
  'inQueue',
  'inProgress',
  'completed',
  'failed',
  'cancelled',
  'timedOut',
  'retried',
  'delayP50',
  'delayP95',
  'executionP50',
  'executionP95',
] as const;
type Column = (typeof COLUMNS)[number];

/** An endpoint's job rings: one figure row per sample, and the last minutes' time buckets for `recent`. */
export class JobRings {
  readonly #samples: HistoryRing;
  readonly #times: HistoryRing;

  constructor(options: { capacity: number; recent: number }) {
    this.#samples = new HistoryRing({ capacity: options.capacity, columns: COLUMNS.length });
    this.#times = new HistoryRing({ capacity: options.recent, columns: 2 * JOB_TIME_SLOTS });
  }

  /** The bytes an endpoint's job rings take. */
  static bytesFor(capacity: number, recent: number): number {
    return HistoryRing.bytesFor(capacity, COLUMNS.length) + HistoryRing.bytesFor(recent, 2 * JOB_TIME_SLOTS);
  }

  get bytes(): number {
    return this.#samples.bytes + this.#times.bytes;
  }

  push(at: number, f: JobFigures): void {
    const orNaN = (v: number | null) => v ?? Number.NaN;
    const row: Record<Column, number> = {
      inQueue: f.inQueue,
      inProgress: f.inProgress,
      completed: f.completed,
      failed: f.failed,
      cancelled: f.cancelled,
      timedOut: f.timedOut,
      retried: f.retried,
      delayP50: orNaN(jobQuantileMs(f.delayCounts, 0.5)),
      delayP95: orNaN(jobQuantileMs(f.delayCounts, 0.95)),
      executionP50: orNaN(jobQuantileMs(f.executionCounts, 0.5)),
      executionP95: orNaN(jobQuantileMs(f.executionCounts, 0.95)),
    };
    this.#samples.push(
      at,
      COLUMNS.map((name) => row[name]),
    );
    this.#times.push(at, [...f.delayCounts, ...f.executionCounts]);
  }

  /** The samples as columns, `length` long: the samples from before the endpoint had jobs are zeros and nulls. */
  of(length: number): JobsHistory {
    const { columns } = this.#samples.read(length);
    const pad = Math.max(0, length - (columns[0]?.length ?? 0));
    const counts = (name: Column) => [
      ...new Array<number>(pad).fill(0),
      ...(columns[COLUMNS.indexOf(name)] ?? []),
    ];
    const times = (name: Column) => [
      ...new Array<null>(pad).fill(null),
      ...(columns[COLUMNS.indexOf(name)] ?? []).map((v) => (Number.isNaN(v) ? null : v)),
    ];
    return {
      inQueue: counts('inQueue'),
      inProgress: counts('inProgress'),
      completed: counts('completed'),
      failed: counts('failed'),
      cancelled: counts('cancelled'),
      timedOut: counts('timedOut'),
      retried: counts('retried'),
      delayMs: { p50: times('delayP50'), p95: times('delayP95') },
      executionMs: { p50: times('executionP50'), p95: times('executionP95') },
    };
  }

  /** The jobs of the last `count` samples: counts added up, percentiles from the buckets added up. */
  recent(count: number): RecentJobs {
    const { columns } = this.#samples.read(count);
    const buckets = this.#times.read(count).columns;
    const figures = emptyJobFigures();
    const sum = (name: Column) => (columns[COLUMNS.indexOf(name)] ?? []).reduce((a, b) => a + b, 0);
    for (const outcome of JOB_OUTCOMES) figures[outcome] = sum(outcome);
    figures.retried = sum('retried');
    for (let i = 0; i < JOB_TIME_SLOTS; i++) {
      figures.delayCounts[i] = (buckets[i] ?? []).reduce((a, b) => a + b, 0);
      figures.executionCounts[i] = (buckets[JOB_TIME_SLOTS + i] ?? []).reduce((a, b) => a + b, 0);
    }
    return recentJobsOf(figures);
  }
}

/** The recent jobs of figures already added up over the window. */
export function recentJobsOf(f: JobFigures): RecentJobs {
  return {
    completed: f.completed,
    failed: f.failed,
    cancelled: f.cancelled,
    timedOut: f.timedOut,
    retried: f.retried,
    delayMs: { p50: jobQuantileMs(f.delayCounts, 0.5), p95: jobQuantileMs(f.delayCounts, 0.95) },
    executionMs: { p50: jobQuantileMs(f.executionCounts, 0.5), p95: jobQuantileMs(f.executionCounts, 0.95) },
  };
}

/** The jobs' columns of samples whose figures are given (undefined: no job in that sample). */
export function jobsHistoryOf(samples: readonly (JobFigures | undefined)[]): JobsHistory {
  const column = (of: (f: JobFigures) => number) => samples.map((f) => (f ? of(f) : 0));
  const time = (of: (f: JobFigures) => readonly number[], q: number) =>
    samples.map((f) => (f ? jobQuantileMs(of(f), q) : null));
  return {
    inQueue: column((f) => f.inQueue),
    inProgress: column((f) => f.inProgress),
    completed: column((f) => f.completed),
    failed: column((f) => f.failed),
    cancelled: column((f) => f.cancelled),
    timedOut: column((f) => f.timedOut),
    retried: column((f) => f.retried),
    delayMs: { p50: time((f) => f.delayCounts, 0.5), p95: time((f) => f.delayCounts, 0.95) },
    executionMs: { p50: time((f) => f.executionCounts, 0.5), p95: time((f) => f.executionCounts, 0.95) },
  };
}
