/**
 * The jobs table's reads that change nothing: an endpoint's counts and recent jobs, the endpoints with a queue, the
 * autoscaler's view of every queue, and the row mapping the repository (jobs.ts) shares.
 */
import { type Kysely, type Selectable, sql } from 'kysely';
import { JOB_STATUSES, type Job, type JobListing, type JobStatus } from '../../domain/job.js';
import type { JobUse } from '../../domain/quota.js';
import type { Database, JobsTable } from '../schema.js';

/** One endpoint's queue as the autoscaler (and the jobs' metrics) read it. */
export interface JobQueueSignal {
  /** IN_QUEUE jobs that may add a worker (not lowPriority). */
  queued: number;
  /** IN_QUEUE jobs that add no worker (lowPriority): not the autoscaler's, but counted in the metrics. */
  lowPriorityQueued: number;
  /** When the oldest of them was submitted; null: none. */
  oldestQueuedAt: number | null;
  /** Jobs IN_PROGRESS per worker. */
  inProgress: Record<string, number>;
}

export const RUNNING: JobStatus = 'IN_PROGRESS';
export const QUEUED: JobStatus = 'IN_QUEUE';

/** The endpoints that have IN_QUEUE jobs. */
export async function queuedEndpoints(db: Kysely<Database>): Promise<string[]> {
  const rows = await db
    .selectFrom('jobs')
    .select('endpoint_id')
    .distinct()
    .where('status', '=', QUEUED)
    .execute();
  return rows.map((r) => r.endpoint_id);
}

/** The UTF-8 bytes of a stored text (none: 0). */
export function byteLength(text: string | null): number {
  return text === null ? 0 : Buffer.byteLength(text);
}

/** What an owner's jobs take now (its job quotas' use): jobs not finished, and the bytes of every job kept. */
export async function ownerJobUse(db: Kysely<Database>, ownerId: string): Promise<JobUse> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => [
      eb.fn.sum<number | string | null>(eb('input_bytes', '+', eb.ref('output_bytes'))).as('bytes'),
      eb.fn
        .sum<number | string | null>(eb.case().when('status', 'in', [QUEUED, RUNNING]).then(1).else(0).end())
        .as('unfinished'),
    ])
    .where('owner_id', '=', ownerId)
    .executeTakeFirstOrThrow();
  return { queuedJobs: Number(row.unfinished ?? 0), jobBytes: Number(row.bytes ?? 0) };
}

/** The endpoint's jobs by status (every status present, 0 where none). */
export async function countJobs(
  db: Kysely<Database>,
  endpointId: string,
): Promise<Record<JobStatus, number>> {
  const rows = await db
    .selectFrom('jobs')
    .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
    .where('endpoint_id', '=', endpointId)
    .groupBy('status')
    .execute();
  const counts = Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as Record<JobStatus, number>;
  for (const row of rows) counts[row.status as JobStatus] = Number(row.n);
  return counts;
}

/** The columns of a listing: every one a `JobListing` needs, never the input or output (up to 20 MB each). */
export const LISTING_COLUMNS = [
  'id',
  'endpoint_id',
  'owner_id',
  'status',
  'error',
  'webhook',
  'execution_timeout_ms',
  'ttl_ms',
  'low_priority',
  'sync',
  'worker_id',
  'attempts',
  'created_at',
  'started_at',
  'completed_at',
] as const;

type ListingRow = Pick<Selectable<JobsTable>, (typeof LISTING_COLUMNS)[number]>;

/** The endpoint's most recent jobs, newest first, of one status or all, without their inputs and outputs. */
export async function listJobs(
  db: Kysely<Database>,
  endpointId: string,
  options: { status?: JobStatus; limit: number },
): Promise<JobListing[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(LISTING_COLUMNS)
    .where('endpoint_id', '=', endpointId)
    .$if(options.status !== undefined, (q) => q.where('status', '=', options.status ?? QUEUED))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit)
    .execute();
  return rows.map(listingFromRow);
}

/**
 * Every endpoint's queue and jobs in progress, for the autoscaler and the jobs' metrics (endpoints with none are
 * absent): one grouped statement, however many endpoints there are.
 */
export async function jobQueueSignals(db: Kysely<Database>): Promise<Map<string, JobQueueSignal>> {
  const rows = await db
    .selectFrom('jobs')
    .select([
      'endpoint_id',
      'status',
      'worker_id',
      'low_priority',
      (eb) => eb.fn.countAll<number>().as('n'),
      (eb) => eb.fn.min('created_at').as('oldest'),
    ])
    .where('status', 'in', [QUEUED, RUNNING])
    .groupBy(['endpoint_id', 'status', 'worker_id', 'low_priority'])
    .execute();
  const signals = new Map<string, JobQueueSignal>();
  for (const row of rows) {
    let signal = signals.get(row.endpoint_id);
    if (!signal) {
      signal = { queued: 0, lowPriorityQueued: 0, oldestQueuedAt: null, inProgress: {} };
      signals.set(row.endpoint_id, signal);
    }
    if (row.status === QUEUED && Number(row.low_priority) === 1) signal.lowPriorityQueued += Number(row.n);
    else if (row.status === QUEUED) {
      signal.queued += Number(row.n);
      signal.oldestQueuedAt = Number(row.oldest);
    } else if (row.worker_id)
      signal.inProgress[row.worker_id] = (signal.inProgress[row.worker_id] ?? 0) + Number(row.n);
  }
  return signals;
}

/** A number as a bigint parameter: PostgreSQL cannot type a bare parameter inside `case`. */
export const bigint = (value: number) => sql`cast(${value} as bigint)`;

const nullableNumber = (value: number | null) => (value === null ? null : Number(value));

export function fromRow(row: Selectable<JobsTable>): Job {
  return { ...listingFromRow(row), input: row.input, output: row.output };
}

export function listingFromRow(row: ListingRow): JobListing {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    ownerId: row.owner_id,
    status: row.status as JobStatus,
    error: row.error,
    webhook: row.webhook,
    policy: {
      executionTimeoutMs: Number(row.execution_timeout_ms),
      ttlMs: Number(row.ttl_ms),
      lowPriority: row.low_priority === 1,
    },
    sync: row.sync === 1,
    workerId: row.worker_id,
    attempts: Number(row.attempts),
    createdAt: Number(row.created_at),
    startedAt: nullableNumber(row.started_at),
    completedAt: nullableNumber(row.completed_at),
  };
}
