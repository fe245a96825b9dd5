/**
 * A retry in the store: a FAILED or TIMED_OUT job queued again under its own id, as new (its output, stream, worker,
 * attempts and times cleared; its ttl counted from now). One step of the repository's retry (jobs.ts), which runs it
 * in the owner's turn when the job quotas admit it.
 */
import { type Kysely, sql } from 'kysely';
import { type Job, RETRYABLE_STATUSES } from '../../domain/job.js';
import type { Database } from '../schema.js';
import { bigint, fromRow, QUEUED } from './job-reads.js';

/** The job as queued again; undefined when it is not this endpoint's or not FAILED or TIMED_OUT. */
export async function requeueFinished(
  db: Kysely<Database>,
  endpointId: string,
  jobId: string,
  now: number,
): Promise<Job | undefined> {
  const rows = await db
    .updateTable('jobs')
    .set({
      status: QUEUED,
      output: null,
      output_bytes: 0,
      stream_bytes: 0,
      stream_chunks: 0,
      error: null,
      worker_id: null,
      attempts: 0,
      started_at: null,
      completed_at: null,
      deadline_at: null,
      retain_until: null,
      seen_at: null,
      stop_pending: 0,
      stopped_at: null,
      created_at: now,
      expires_at: sql`${bigint(now)} + ttl_ms`,
    })
    .where('id', '=', jobId)
    .where('endpoint_id', '=', endpointId)
    .where('status', 'in', [...RETRYABLE_STATUSES])
    .returningAll()
    .execute();
  const row = rows[0];
  return row && fromRow(row);
}
