/**
 * The domain's job (issue 22, DESIGN.md section 6): its statuses, its policy and its bounds, and the record the
 * store keeps. Inputs and outputs stay JSON text from the wire to the store and back: nothing parses them twice.
 */

export const JOB_STATUSES = [
  'IN_QUEUE',
  'IN_PROGRESS',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
] as const;

export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses a job never leaves (but for a retry of FAILED and TIMED_OUT). */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];

/** Statuses `retry` accepts. */
export const RETRYABLE_STATUSES: readonly JobStatus[] = ['FAILED', 'TIMED_OUT'];

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function isJobStatus(value: string): value is JobStatus {
  return (JOB_STATUSES as readonly string[]).includes(value);
}

/** What a client's `policy` sets, in milliseconds. */
export interface JobPolicy {
  /** How long a job may run on a worker before it is TIMED_OUT and stopped. */
  executionTimeoutMs: number;
  /** How long a job may live from its submission, wherever it is, before it is TIMED_OUT. */
  ttlMs: number;
  /** A low-priority job adds no worker: it runs on workers that exist for other reasons. */
  lowPriority: boolean;
}

/** The bounds and defaults of jobs (RunPod's, where it documents them). */
export const JOB_LIMITS = {
  minExecutionTimeoutMs: 5_000,
  maxExecutionTimeoutMs: 7 * 24 * 3_600_000,
  minTtlMs: 10_000,
  maxTtlMs: 7 * 24 * 3_600_000,
  /** A `run` body. */
  runBodyBytes: 10 * 1024 * 1024,
  /** A `runsync` body. */
  runsyncBodyBytes: 20 * 1024 * 1024,
  /** One chunk a worker streams. */
  streamChunkBytes: 1024 * 1024,
  /** A result a worker posts (its output). */
  resultBytes: 20 * 1024 * 1024,
  /**
   * How many arrays and objects a body (a run's, a result's, a chunk's) may open inside one another. A model's
   * input is rarely 10 deep; Python's json (a RunPod worker's) fails near 1,000 and node's stringify near 4,170.
   */
  jsonDepth: 128,
} as const;

/** What bounds a job's stream (configurable: `jobs.stream`). */
export interface JobStreamBounds {
  /** Bytes a job may stream in all, read or not; past it a worker's chunk is refused. */
  maxBytes: number;
  /** Chunks a job may stream in all. */
  maxChunks: number;
  /** Bytes one read of the stream returns at most (but always one chunk when there is one); the rest comes next. */
  readBytes: number;
}

/**
 * A stream carries at most what a result may (20 MB), in at most 100,000 chunks (a token a chunk for a long
 * generation); a read returns about 2 MB, so that no answer and no copy of it in memory is larger.
 */
export const DEFAULT_JOB_STREAM_BOUNDS: JobStreamBounds = {
  maxBytes: 20 * 1024 * 1024,
  maxChunks: 100_000,
  readBytes: 2 * 1024 * 1024,
};

export const DEFAULT_JOB_POLICY: JobPolicy = {
  executionTimeoutMs: 600_000,
  ttlMs: 24 * 3_600_000,
  lowPriority: false,
};

/** How long a finished job is kept for its status (configurable: `jobs.retention`). */
export interface JobRetention {
  /** After a `run`. */
  asyncMs: number;
  /** After a `runsync`. */
  syncMs: number;
}

export const DEFAULT_JOB_RETENTION: JobRetention = { asyncMs: 30 * 60_000, syncMs: 60_000 };

/** A job as the store keeps it. Times are epoch ms. */
export interface Job {
  id: string;
  endpointId: string;
  ownerId: string;
  status: JobStatus;
  /** The `input` as JSON text. */
  input: string;
  /** The output as JSON text (the last progress update while IN_PROGRESS); null: none yet. */
  output: string | null;
  /** Why it FAILED, TIMED_OUT or was CANCELLED; null otherwise. */
  error: string | null;
  webhook: string | null;
  policy: JobPolicy;
  /** Submitted by `runsync`: kept for the shorter retention. */
  sync: boolean;
  /** The worker that holds it (IN_PROGRESS) or held it last; null: never taken. */
  workerId: string | null;
  /** How many times a worker took it. */
  attempts: number;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
}

/** A job as a listing shows it: everything but its input and output (each up to 20 MB). */
export type JobListing = Omit<Job, 'input' | 'output'>;

/** What `enqueue` stores: a new job, IN_QUEUE. */
export type NewJob = Pick<
  Job,
  'id' | 'endpointId' | 'ownerId' | 'input' | 'webhook' | 'policy' | 'sync' | 'createdAt'
> & {
  /** The input's UTF-8 size when its maker counted it already (else the store counts it). */
  inputBytes?: number;
};

/** How long it waited for a worker, and how long it ran (RunPod's `delayTime` and `executionTime`, ms). */
export function jobTimes(
  job: Pick<Job, 'status' | 'createdAt' | 'startedAt' | 'completedAt'>,
  now: number,
): { delayTime: number; executionTime: number } {
  const started = job.startedAt ?? (isTerminal(job.status) ? (job.completedAt ?? now) : now);
  const ended = job.completedAt ?? now;
  return {
    delayTime: Math.max(0, started - job.createdAt),
    executionTime: job.startedAt === null ? 0 : Math.max(0, ended - job.startedAt),
  };
}
