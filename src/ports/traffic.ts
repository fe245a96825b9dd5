/**
 * What the API reads of an endpoint's traffic and history (the gateway's counts, the history's samples): the
 * shapes between the gateway, the history and the API, so that neither imports the other.
 */

/** What the API's `endpoint/metrics` shows of one endpoint's traffic through this process's gateway. */
export interface EndpointTraffic {
  /** What the figures cover: everything this gateway saw since it started (ms since the epoch), and how long ago. */
  window: { since: number; seconds: number };
  requests: { total: number; byStatus: Record<string, number> };
  latencyMs: Distribution;
  queueWaitMs: Distribution;
  queueDepth: number;
  inFlight: number;
  /**
   * Wakes from zero apart by the tier the worker came from (docs/workers.md, Idle tiers): cold starts (a new
   * worker), thaws (a frozen one) and restores (a suspended one).
   */
  coldStarts: WakeFigures;
  thaws: WakeFigures;
  restores: WakeFigures;
}

/** Wakes of one tier: how many, and their mean duration (ms; null without any). */
export interface WakeFigures {
  count: number;
  meanMs: number | null;
}

/** Wakes of one tier in each interval of a history: how many, and their mean duration (ms; null without any). */
export interface WakeColumns {
  count: number[];
  meanMs: (number | null)[];
}

/** Where a woken worker came from: frozen (a thaw), suspended (a restore), or nowhere (a cold start). */
export type WakeTier = 'thaw' | 'restore' | 'cold';

export const WAKE_TIERS: readonly WakeTier[] = ['thaw', 'restore', 'cold'];

/** The field each tier's wakes are shown in (EndpointTraffic, EndpointHistory). */
export const WAKE_FIELDS = {
  cold: 'coldStarts',
  thaw: 'thaws',
  restore: 'restores',
} as const satisfies Record<WakeTier, keyof EndpointTraffic & keyof EndpointHistory>;

/**
 * Percentiles estimated from the histogram's buckets (within the smallest and largest values seen), and the exact
 * mean; null before any request.
 */
export interface Distribution {
  p50: number | null;
  p99: number | null;
  mean: number | null;
}

/** A worker as the per-endpoint worker gauge counts it. */
export interface EndpointWorker {
  endpointId: string;
  state: string;
}

/** One endpoint's samples, oldest first, in columns; `null` where a figure had no value (no request). */
export interface EndpointHistory {
  intervalSeconds: number;
  /** The most samples kept (the ring's length). */
  capacity: number;
  /** When each sample was taken, ms since the epoch. */
  at: number[];
  /** Requests that ended in each interval, by status: below 400, 4xx (499: the client left), 5xx. */
  requests: { ok: number[]; clientErrors: number[]; serverErrors: number[] };
  /** Of the requests that ended in each interval (queue wait included). */
  latencyMs: { p50: (number | null)[]; p99: (number | null)[] };
  /** At each sample: requests waiting for a slot, and how long the oldest had waited. */
  queue: { depth: number[]; oldestWaitMs: number[] };
  inFlight: number[];
  /** Workers in each state at each sample (every state, zeros included). */
  workers: Record<string, number[]>;
  /** The autoscaler's desired count at each sample; null where this server's scaler had not decided. */
  desiredWorkers: (number | null)[];
  /** Wakes from zero that completed in each interval, apart by tier as in EndpointTraffic. */
  coldStarts: WakeColumns;
  thaws: WakeColumns;
  restores: WakeColumns;
  /** The endpoint's jobs (docs/jobs.md, Watching jobs). */
  jobs: JobsHistory;
}

/**
 * Jobs in an endpoint's history: in the queue and in progress at each sample (the store's count), the jobs that
 * finished in each interval by outcome, the jobs sent back to the queue for another attempt, and the delay and
 * execution time percentiles of the jobs that finished in it (null without any).
 */
export interface JobsHistory {
  inQueue: number[];
  inProgress: number[];
  completed: number[];
  failed: number[];
  cancelled: number[];
  timedOut: number[];
  retried: number[];
  delayMs: { p50: (number | null)[]; p95: (number | null)[] };
  executionMs: { p50: (number | null)[]; p95: (number | null)[] };
}

/**
 * The buckets (s) jobs' delay and execution times are counted in (+Inf after the last): the history's
 * percentiles and `/metrics`' histograms. A time past the last bound is reported as the last bound.
 */
export const JOB_TIME_BUCKETS: readonly number[] = [
  0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
];

/** How a job finished, as `/metrics` and the history count it. */
export type JobOutcome = 'completed' | 'failed' | 'cancelled' | 'timedOut';

export const JOB_OUTCOMES: readonly JobOutcome[] = ['completed', 'failed', 'cancelled', 'timedOut'];

/**
 * One endpoint's jobs as this process counted them since it began (the history keeps the differences): those that
 * finished here by outcome, those sent back to the queue here, and the finished ones' times in JOB_TIME_BUCKETS
 * (not cumulative; the last is +Inf).
 */
export interface JobCounters {
  finished: Record<JobOutcome, number>;
  retried: number;
  delayCounts: readonly number[];
  executionCounts: readonly number[];
}

/** One endpoint's jobs now, as the store counts them (shared by every replica). */
export interface LiveJobs {
  inQueue: number;
  inProgress: number;
}

/** An endpoint's traffic over its last minutes (the Endpoints list). */
export interface RecentTraffic {
  /** What the figures cover: the samples kept within the window asked for. */
  seconds: number;
  requests: number;
  requestsPerMinute: number;
  latencyMs: { p50: number | null; p99: number | null };
  /** The jobs that finished in the same window, and how long they waited and ran. */
  jobs: RecentJobs;
}

/** An endpoint's jobs over its last minutes (`endpoint/metrics`). */
export interface RecentJobs {
  completed: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  retried: number;
  delayMs: { p50: number | null; p95: number | null };
  executionMs: { p50: number | null; p95: number | null };
}

/** No job in the last minutes. */
export const NO_RECENT_JOBS: RecentJobs = {
  completed: 0,
  failed: 0,
  cancelled: 0,
  timedOut: 0,
  retried: 0,
  delayMs: { p50: null, p95: null },
  executionMs: { p50: null, p95: null },
};
