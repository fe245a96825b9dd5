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
}

/** A requeue that found nothing held. */
export function nothingRequeued(): Requeued {
  return { requeued: [], failed: [], endpoints: [], perEndpoint: {} };
}

export async function requeueIds(
  trx: Transaction<Database>,
  ids: readonly string[],
  cause: string,
  options: { maxAttempts: number; now: number },
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
  const perEndpoint: Record<string, number> = {};
  for (const r of requeued) perEndpoint[r.endpoint_id] = (perEndpoint[r.endpoint_id] ?? 0) + 1;
  return {
    requeued: requeued.map((r) => r.id),
    failed: failed.map(fromRow),
    endpoints: Object.keys(perEndpoint),
    perEndpoint,
  };
}
