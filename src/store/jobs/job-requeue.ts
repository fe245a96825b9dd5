/**
 * Jobs that leave their worker in progress (it died, was removed, or stopped listing them): back to the queue, or
 * FAILED naming the cause once they were taken `maxAttempts` times. One step of a repository transaction (jobs.ts).
 */
import { sql, type Transaction } from 'kysely';
import type { Job } from '../../domain/job.js';
import type { Database } from '../schema.js';
import { bigint, fromRow, QUEUED, RUNNING } from './job-reads.js';

/**
 * What went back to the queue (and the endpoints whose queues grew, with how many each), and what FAILED at the
 * attempt limit.
 */
export interface Requeued {
  requeued: string[];
  failed: Job[];
  endpoints: string[];
  /** How many of `requeued` are each endpoint's. */
  perEndpoint: Record<string, number>;
  /** How many of `requeued` are each endpoint's retries: their take counted as an attempt (none: not listed). */
  retried: Record<string, number>;
}

/** A requeue that found nothing held. */
export function nothingRequeued(): Requeued {
  return { requeued: [], failed: [], endpoints: [], perEndpoint: {}, retried: {} };
}

/**
 * Takes back the attempt of these jobs still in progress: their worker never had them (its take was not answered), or
 * never showed it had them before saying it held nothing. At most `maxAttempts` times per job: past that, a worker
 * that loses every job it is handed still uses up the job's attempts. Returns the jobs whose attempt was taken back.
 */
export async function takeBackAttempts(
  trx: Transaction<Database>,
  ids: readonly string[],
  maxAttempts: number,
): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await trx
    .updateTable('jobs')
    .set({ attempts: sql`attempts - 1`, unseen_returns: sql`unseen_returns + 1` })
    .where('id', 'in', ids)
    .where('status', '=', RUNNING)
    .where('unseen_returns', '<', maxAttempts)
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/** Back to the queue, or FAILED at the attempt limit; `spared`: those whose attempt was taken back (not retries). */
export async function requeueIds(
  trx: Transaction<Database>,
  ids: readonly string[],
  cause: string,
  options: { maxAttempts: number; now: number; spared?: readonly string[] },
): Promise<Requeued> {
  if (ids.length === 0) return nothingRequeued();
  const failed = await trx
    .updateTable('jobs')
    .set({
      status: 'FAILED',
      error: `${cause} (taken ${options.maxAttempts} times)`,
      completed_at: options.now,
      deadline_at: null,
      retain_until: sql`${bigint(options.now)} + retain_ms`,
      stop_pending: 0,
    })
    .where('id', 'in', ids)
    .where('status', '=', RUNNING)
    .where('attempts', '>=', options.maxAttempts)
    .returningAll()
    .execute();
  const requeued = await trx
    .updateTable('jobs')
    .set({
      status: QUEUED,
      worker_id: null,
      started_at: null,
      deadline_at: null,
      seen_at: null,
      output: null,
      stop_pending: 0,
    })
    .where('id', 'in', ids)
    .where('status', '=', RUNNING)
    .returning(['id', 'endpoint_id'])
    .execute();
  const spared = new Set(options.spared);
  const perEndpoint: Record<string, number> = {};
  const retried: Record<string, number> = {};
  for (const r of requeued) {
    perEndpoint[r.endpoint_id] = (perEndpoint[r.endpoint_id] ?? 0) + 1;
    if (!spared.has(r.id)) retried[r.endpoint_id] = (retried[r.endpoint_id] ?? 0) + 1;
  }
  return {
    requeued: requeued.map((r) => r.id),
    failed: failed.map(fromRow),
    endpoints: Object.keys(perEndpoint),
    perEndpoint,
    retried,
  };
}
