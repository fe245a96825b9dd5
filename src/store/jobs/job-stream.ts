/**
 * A job's stream in the store (issue 22, bounded by issue 29): a worker's chunk kept only while the job's totals
 * (bytes and chunks streamed in all, counted in the same update) stay within their bounds, and a client's read of
 * the waiting chunks in a batch of bounded bytes, consumed as read. The repository (jobs.ts) calls these.
 */
import { type Kysely, sql } from 'kysely';
import type { JobStreamBounds } from '../../domain/job.js';
import type { Database } from '../schema.js';
import { byteLength, RUNNING } from './job-reads.js';

/** What became of a chunk: kept, past the job's bounds (dropped), or refused (not the worker's job). */
export type ChunkKept = 'kept' | 'full' | 'refused';

/** The most chunks one read of a stream returns, however small they are. */
const READ_MAX_CHUNKS = 10_000;

/** Whether a chunk of a given size would be kept now: `fits`, `full` (past the bounds) or `refused` (not its job). */
export type ChunkFit = 'fits' | 'full' | 'refused';

type Bounds = Pick<JobStreamBounds, 'maxBytes' | 'maxChunks'>;

/** The job while it runs on this worker. */
function held(db: Kysely<Database>, jobId: string, workerId: string) {
  return db
    .updateTable('jobs')
    .where('id', '=', jobId)
    .where('worker_id', '=', workerId)
    .where('status', '=', RUNNING);
}

/** The stream's totals leave room for one more chunk of `bytes`: the one bound appendChunk and chunkFit share. */
function withRoomFor<Q extends ReturnType<typeof held>>(query: Q, bytes: number, bounds: Bounds): Q {
  return query
    .where('stream_bytes', '<=', bounds.maxBytes - bytes)
    .where('stream_chunks', '<=', bounds.maxChunks - 1) as Q;
}

export function appendChunk(
  db: Kysely<Database>,
  posted: { jobId: string; workerId: string; chunk: string; now: number },
  bounds: Bounds,
): Promise<ChunkKept> {
  const { jobId, workerId, chunk, now } = posted;
  const bytes = byteLength(chunk);
  return db.transaction().execute(async (trx) => {
    const result = await withRoomFor(
      held(trx, jobId, workerId).set((eb) => ({
        seen_at: now,
        stream_bytes: eb('stream_bytes', '+', bytes),
        stream_chunks: eb('stream_chunks', '+', 1),
      })),
      bytes,
      bounds,
    ).executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) {
      await trx.insertInto('job_chunks').values({ job_id: jobId, chunk, bytes }).execute();
      return 'kept';
    }
    // Still the worker's: seen now, its chunk past the bound.
    const seen = await held(trx, jobId, workerId).set({ seen_at: now }).executeTakeFirst();
    return Number(seen.numUpdatedRows) > 0 ? 'full' : 'refused';
  });
}

/**
 * What appendChunk would say of a chunk of `bytes`, asked before its body is read: a worker that posts past its
 * bounds is refused without its megabytes being decoded and parsed. The job is seen now, as a posted chunk makes it;
 * nothing else changes (appendChunk still decides, in its own transaction, when the body comes).
 */
export function chunkFit(
  db: Kysely<Database>,
  posted: { jobId: string; workerId: string; bytes: number; now: number },
  bounds: Bounds,
): Promise<ChunkFit> {
  const { jobId, workerId, bytes, now } = posted;
  return db.transaction().execute(async (trx) => {
    const room = await withRoomFor(
      held(trx, jobId, workerId).set({ seen_at: now }),
      bytes,
      bounds,
    ).executeTakeFirst();
    if (Number(room.numUpdatedRows) > 0) return 'fits';
    const seen = await held(trx, jobId, workerId).set({ seen_at: now }).executeTakeFirst();
    return Number(seen.numUpdatedRows) > 0 ? 'full' : 'refused';
  });
}

/**
 * The chunks streamed since the last read, oldest first, up to `maxBytes` (always one when there is one, and at
 * most READ_MAX_CHUNKS), consumed as read; the rest waits for the next read. One statement: the batch's last chunk
 * is found from the sizes' running total (no chunk past the batch is loaded) and the batch deleted, returning its
 * chunks. A read sits between a streamed chunk and the client that waits for it, so it costs one round trip to the
 * store, not a transaction's five.
 */
export async function takeChunks(db: Kysely<Database>, jobId: string, maxBytes: number): Promise<string[]> {
  const head = db
    .selectFrom('job_chunks')
    .select(['seq', sql<number>`sum(bytes) over (order by seq)`.as('running')])
    .where('job_id', '=', jobId)
    .orderBy('seq')
    .limit(READ_MAX_CHUNKS)
    .as('head');
  const lastOfBatch = db
    .selectFrom(head)
    .select(sql<number>`coalesce(max(case when running <= ${maxBytes} then seq end), min(seq))`.as('last'));
  const rows = await db
    .deleteFrom('job_chunks')
    .where('job_id', '=', jobId)
    .where('seq', '<=', lastOfBatch)
    .returning(['seq', 'chunk'])
    .execute();
  // RETURNING's order is the engine's own: the stream's order is the sequence's.
  return rows.sort((a, b) => Number(a.seq) - Number(b.seq)).map((r) => r.chunk);
}
