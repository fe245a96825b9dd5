/**
 * The jobs table's two hot writes (issue 22): a worker's take, one statement, and its result, applied once. Kept
 * apart from the repository (jobs.ts) so that each stays one concern; the repository calls these.
 */
import { type Kysely, sql } from 'kysely';
import { isTerminal, type Job } from '../../domain/job.js';
import type { Database, DialectName } from '../schema.js';
import { bigint, byteLength, fromRow, QUEUED, RUNNING } from './job-reads.js';

/** What happened to a worker's result. */
export type ResultOutcome = 'applied' | 'duplicate' | 'refused';

/** What became of a result: its outcome, and the job as it is now (none: no such job). */
export interface Completed {
  outcome: ResultOutcome;
  job?: Job;
}

/** A worker's final answer for a job. */
export interface JobResult {
  jobId: string;
  workerId: string;
  status: 'COMPLETED' | 'FAILED';
  /** JSON text, or null. */
  output: string | null;
  error: string | null;
  now: number;
}

/**
 * Hands up to `max` of the endpoint's IN_QUEUE jobs (oldest first) to the worker, never more than `cap` in progress
 * on it at once; each goes to exactly one worker.
 */
export async function takeJobs(
  db: Kysely<Database>,
  dialect: DialectName,
  options: { endpointId: string; workerId: string; max: number; cap: number; now: number },
): Promise<Job[]> {
  const { endpointId, workerId, now } = options;
  // One statement: the worker's room (its cap less what it holds, at most `max`) is the pick's limit, so the
  // count, the pick and the update are one atomic step. SQLite runs it alone on its one connection; PostgreSQL
  // takes the worker's advisory lock first (its takes on other replicas wait), and skips rows other takes lock.
  const postgres = dialect === 'postgres';
  const take = (on: Kysely<Database>) => {
    const held = on
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('worker_id', '=', workerId)
      .where('status', '=', RUNNING);
    const room = postgres
      ? sql<number>`greatest(0, least(${options.max}, ${options.cap} - (${held})))`
      : sql<number>`max(0, min(${options.max}, ${options.cap} - (${held})))`;
    return on
      .updateTable('jobs')
      .set({
        status: RUNNING,
        worker_id: workerId,
        started_at: now,
        seen_at: now,
        attempts: sql`attempts + 1`,
        deadline_at: sql`${bigint(now)} + execution_timeout_ms`,
        output: null,
        output_bytes: 0,
        error: null,
      })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('jobs')
          .select('id')
          .where('endpoint_id', '=', endpointId)
          .where('status', '=', QUEUED)
          .orderBy('created_at')
          .orderBy('id')
          .limit(room)
          .$if(postgres, (q) => q.forUpdate().skipLocked()),
      )
      .returningAll()
      .execute();
  };
  const rows = postgres
    ? await db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`corral-job-worker:${workerId}`}))`.execute(trx);
        return take(trx);
      })
    : await take(db);
  return rows.map(fromRow).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}

/** A worker's final result, applied once; a duplicate of its own result is accepted, any other refused. */
export async function applyResult(db: Kysely<Database>, result: JobResult): Promise<Completed> {
  const rows = await db
    .updateTable('jobs')
    .set({
      status: result.status,
      output: result.output,
      output_bytes: byteLength(result.output),
      error: result.error,
      completed_at: result.now,
      deadline_at: null,
      retain_until: sql`${bigint(result.now)} + retain_ms`,
      stop_pending: 0,
    })
    .where('id', '=', result.jobId)
    .where('worker_id', '=', result.workerId)
    .where('status', '=', RUNNING)
    .returningAll()
    .execute();
  const applied = rows[0];
  if (applied) return { outcome: 'applied', job: fromRow(applied) };
  const now = await db.selectFrom('jobs').selectAll().where('id', '=', result.jobId).executeTakeFirst();
  if (!now) return { outcome: 'refused' };
  const job = fromRow(now);
  // The worker's own job, finished already (its retry of the same post, or a result after a cancel): nothing
  // changes, and the worker is not made to retry.
  if (job.workerId === result.workerId && isTerminal(job.status)) {
    await db
      .updateTable('jobs')
      .set({ stop_pending: 0 })
      .where('id', '=', result.jobId)
      .where('stop_pending', '=', 1)
      .where('worker_id', '=', result.workerId)
      .execute();
    return { outcome: 'duplicate', job };
  }
  return { outcome: 'refused', job };
}
