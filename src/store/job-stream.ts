/**
 * A job's stream in the store (issue 22, bounded by issue 29): a worker's chunk kept only while the job's totals
 * (bytes and chunks streamed in all, counted in the same update) stay within their bounds, and a client's read of
 * the waiting chunks in a batch of bounded bytes, consumed as read. The repository (jobs.ts) calls these.
 */
import type { Kysely } from 'kysely';
import type { JobStreamBounds } from '../domain/job.js';
import { byteLength, RUNNING } from './job-reads.js';
import type { Database } from './schema.js';

/** What became of a chunk: kept, past the job's bounds (dropped), or refused (not the worker's job). */
export type ChunkKept = 'kept' | 'full' | 'refused';

/** The most chunks one read of a stream returns, however small they are. */
const READ_MAX_CHUNKS = 10_000;

export function appendChunk(
  db: Kysely<Database>,
  posted: { jobId: string; workerId: string; chunk: string; now: number },
  bounds: Pick<JobStreamBounds, 'maxBytes' | 'maxChunks'>,
): Promise<ChunkKept> {
  const { jobId, workerId, chunk, now } = posted;
  const bytes = byteLength(chunk);
  return db.transaction().execute(async (trx) => {
    const held = () =>
      trx
        .updateTable('jobs')
        .where('id', '=', jobId)
        .where('worker_id', '=', workerId)
        .where('status', '=', RUNNING);
    const result = await held()
      .set((eb) => ({
        seen_at: now,
        stream_bytes: eb('stream_bytes', '+', bytes),
        stream_chunks: eb('stream_chunks', '+', 1),
      }))
      .where('stream_bytes', '<=', bounds.maxBytes - bytes)
      .where('stream_chunks', '<=', bounds.maxChunks - 1)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) {
      await trx.insertInto('job_chunks').values({ job_id: jobId, chunk, bytes }).execute();
      return 'kept';
    }
    // Still the worker's: seen now, its chunk past the bound.
    const seen = await held().set({ seen_at: now }).executeTakeFirst();
    return Number(seen.numUpdatedRows) > 0 ? 'full' : 'refused';
  });
}

/**
 * The chunks streamed since the last read, oldest first, up to `maxBytes` (always one when there is one, and at
 * most READ_MAX_CHUNKS): their sizes are read first, so that no chunk past the batch is loaded. Reading consumes
 * them; the rest waits for the next read.
 */
export function takeChunks(db: Kysely<Database>, jobId: string, maxBytes: number): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const sizes = await trx
      .selectFrom('job_chunks')
      .select(['seq', 'bytes'])
      .where('job_id', '=', jobId)
      .orderBy('seq')
      .limit(READ_MAX_CHUNKS)
      .execute();
    let total = 0;
    let last: number | undefined;
    for (const { seq, bytes } of sizes) {
      total += Number(bytes);
      if (last !== undefined && total > maxBytes) break;
      last = Number(seq);
    }
    if (last === undefined) return [];
    const rows = await trx
      .selectFrom('job_chunks')
      .select('chunk')
      .where('job_id', '=', jobId)
      .where('seq', '<=', last)
      .orderBy('seq')
      .execute();
    await trx.deleteFrom('job_chunks').where('job_id', '=', jobId).where('seq', '<=', last).execute();
    return rows.map((r) => r.chunk);
  });
}
