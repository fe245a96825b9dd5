/**
 * Jobs that leave their worker in progress (it died, was removed, or stopped listing them): back to the queue, or
 * FAILED naming the cause once they were taken `maxAttempts` times. One step of a repository transaction (jobs.ts).
 */
import { sql, type Transaction } from 'kysely';
import type { Job } from '../domain/job.js';
import { bigint, fromRow, QUEUED, RUNNING } from './job-reads.js';
import type { Database } from './schema.js';

/** What went back to the queue (and the endpoints whose queues grew), and what FAILED at the attempt limit. */
export interface Requeued {
  requeued: string[];
  failed: Job[];
  endpoints: string[];
}

export async function requeueIds(
  trx: Transaction<Database>,
  ids: readonly string[],
  cause: string,
  options: { maxAttempts: number; now: number },
): Promise<Requeued> {
  if (ids.length === 0) return { requeued: [], failed: [], endpoints: [] };
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
  return {
    requeued: requeued.map((r) => r.id),
    failed: failed.map(fromRow),
    endpoints: [...new Set(requeued.map((r) => r.endpoint_id))],
  };
}
