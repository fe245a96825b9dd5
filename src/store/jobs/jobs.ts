/**
 * The `jobs` table: the queue of the jobs API and the record of every job until its retention ends (issue 22). A
 * take hands each IN_QUEUE job to exactly one worker (PostgreSQL: `FOR UPDATE SKIP LOCKED`, and the worker's own
 * advisory lock so that its `maxConcurrent` holds across replicas; SQLite: one connection, one transaction at a
 * time). Results are idempotent: a duplicate of the worker's own result is accepted, one from a worker that no
 * longer holds the job is refused. Times are the callers' clock (epoch ms).
 */
import { type Kysely, sql } from 'kysely';
import {
  type Job,
  type JobListing,
  type JobStatus,
  type JobStreamBounds,
  type NewJob,
  RETRYABLE_STATUSES,
} from '../../domain/job.js';
import type { JobDetail, JobDetailBounds } from '../../domain/job-detail.js';
import type { JobUse } from '../../domain/quota.js';
import { takeOwnerTurn } from '../owner-turn.js';
import type { Database, DialectName } from '../schema.js';
import { Reclaimer } from '../sqlite/reclaim.js';
import { GroupCommit } from './group-commit.js';
import { readJobDetail } from './job-detail.js';
import {
  bigint,
  byteLength,
  countJobs,
  fromRow,
  type JobQueueSignal,
  jobQueueSignals,
  listJobs,
  ownerJobUse,
  QUEUED,
  queuedEndpoints,
  RUNNING,
} from './job-reads.js';
import { nothingRequeued, type Requeued, requeueIds, takeBackAttempts } from './job-requeue.js';
import { requeueFinished } from './job-retry.js';
import { appendChunk, type ChunkFit, type ChunkKept, chunkFit, takeChunks } from './job-stream.js';
import { applyResult, type Completed, type JobResult, takeJobs } from './job-writes.js';

/** Checks the owner's job quotas with its use before a job is queued, in the same transaction; throws to refuse. */
export type JobAdmit = (use: JobUse) => void;

export type { JobQueueSignal } from './job-reads.js';
export type { Requeued } from './job-requeue.js';

export type { Completed, JobResult, ResultOutcome } from './job-writes.js';

export class JobRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: DialectName;

  /** SQLite: free pages returned to the disk after deletes, a bounded step per sweep (PostgreSQL's autovacuum). */
  readonly #reclaimer: Reclaimer | undefined;

  constructor(options: {
    db: Kysely<Database>;
    dialect: DialectName;
    reclaimFreePages?: ((maxPages: number) => Promise<number | undefined>) | undefined;
  }) {
    this.#db = options.db;
    this.#dialect = options.dialect;
    this.#reclaimer = options.reclaimFreePages && new Reclaimer({ reclaim: options.reclaimFreePages });
  }

  /** SQLite: one bounded step of returning freed pages to the disk; the pages still free (0 on PostgreSQL). */
  async reclaimSpace(): Promise<number> {
    return (await this.#reclaimer?.step()) ?? 0;
  }

  /**
   * Stores a new job, IN_QUEUE; `retainMs` is how long it is kept once finished. `admit` sees the owner's use in
   * the owner's turn (store/owner-turn.ts), so that two submissions of one owner cannot both pass the last free place.
   */
  async enqueue(job: NewJob, retainMs: number, admit?: JobAdmit): Promise<void> {
    if (!admit) return this.#insert(this.#db, job, retainMs);
    await this.#db.transaction().execute(async (trx) => {
      await takeOwnerTurn(trx, job.ownerId);
      admit(await ownerJobUse(trx, job.ownerId));
      await this.#insert(trx, job, retainMs);
    });
  }

  /** What the owner's jobs take now: jobs not finished, and the bytes of the jobs kept. */
  ownerUse(ownerId: string): Promise<JobUse> {
    return ownerJobUse(this.#db, ownerId);
  }

  async #insert(db: Kysely<Database>, job: NewJob, retainMs: number): Promise<void> {
    await db
      .insertInto('jobs')
      .values({
        id: job.id,
        endpoint_id: job.endpointId,
        owner_id: job.ownerId,
        status: QUEUED,
        input: job.input,
        output: null,
        error: null,
        webhook: job.webhook,
        execution_timeout_ms: job.policy.executionTimeoutMs,
        ttl_ms: job.policy.ttlMs,
        low_priority: job.policy.lowPriority ? 1 : 0,
        sync: job.sync ? 1 : 0,
        retain_ms: retainMs,
        worker_id: null,
        attempts: 0,
        created_at: job.createdAt,
        started_at: null,
        completed_at: null,
        expires_at: job.createdAt + job.policy.ttlMs,
        deadline_at: null,
        retain_until: null,
        seen_at: null,
        stop_pending: 0,
        stopped_at: null,
        input_bytes: job.inputBytes ?? byteLength(job.input),
      })
      .execute();
  }

  /** The job, if it is this endpoint's (and so its owner's); another endpoint's job is not found. */
  get(endpointId: string, jobId: string): Promise<Job | undefined> {
    return this.#get(this.#db, endpointId, jobId);
  }

  async #get(db: Kysely<Database>, endpointId: string, jobId: string): Promise<Job | undefined> {
    const row = await db
      .selectFrom('jobs')
      .selectAll()
      .where('id', '=', jobId)
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirst();
    return row && fromRow(row);
  }

  /**
   * Hands up to `max` of the endpoint's IN_QUEUE jobs (oldest first) to the worker, never more than `cap` in
   * progress on it at once; each goes to exactly one worker.
   */
  async take(options: {
    endpointId: string;
    workerId: string;
    max: number;
    cap: number;
    now: number;
  }): Promise<Job[]> {
    return takeJobs(this.#db, this.#dialect, options);
  }

  /**
   * Applies a worker's final result, once; a duplicate of its own result is accepted, any other refused. On SQLite,
   * results that arrive in the same turn of the event loop are applied in one transaction (group-commit.ts), each
   * answered once it has committed.
   */
  complete(result: JobResult): Promise<Completed> {
    return this.#dialect === 'sqlite' ? this.#results.submit(result) : applyResult(this.#db, result);
  }

  readonly #results = new GroupCommit<JobResult, Completed>({
    run: async (results) => {
      const [only] = results;
      if (only && results.length === 1) return [await applyResult(this.#db, only)];
      return this.#db.transaction().execute(async (trx) => {
        const outcomes: Completed[] = [];
        for (const result of results) outcomes.push(await applyResult(trx, result));
        return outcomes;
      });
    },
  });

  /** A progress update (`{"status": "IN_PROGRESS"}`): kept as the output while the job runs on this worker. */
  async progress(jobId: string, workerId: string, output: string | null, now: number): Promise<boolean> {
    const result = await this.#db
      .updateTable('jobs')
      .set({ output, output_bytes: byteLength(output), seen_at: now })
      .where('id', '=', jobId)
      .where('worker_id', '=', workerId)
      .where('status', '=', RUNNING)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * Keeps a streamed chunk while the job runs on this worker, if the job's stream stays within `bounds` counting
   * it: `kept`; `full`: past the bounds (nothing kept); `refused`: not its job.
   */
  appendChunk(
    jobId: string,
    workerId: string,
    chunk: string,
    now: number,
    bounds: Pick<JobStreamBounds, 'maxBytes' | 'maxChunks'>,
  ): Promise<ChunkKept> {
    return appendChunk(this.#db, { jobId, workerId, chunk, now }, bounds);
  }

  /** Whether a chunk of `bytes` would be kept now, asked before its body is read (job-stream.ts chunkFit). */
  chunkFit(
    jobId: string,
    workerId: string,
    bytes: number,
    now: number,
    bounds: Pick<JobStreamBounds, 'maxBytes' | 'maxChunks'>,
  ): Promise<ChunkFit> {
    return chunkFit(this.#db, { jobId, workerId, bytes, now }, bounds);
  }

  /** The chunks streamed since the last read, oldest first, up to `maxBytes` (job-stream.ts); reading consumes them. */
  takeChunks(jobId: string, maxBytes: number): Promise<string[]> {
    return takeChunks(this.#db, jobId, maxBytes);
  }

  /** Cancels an unfinished job (a held one's worker is told through the stop channel); the job as it is now. */
  async cancel(endpointId: string, jobId: string, now: number): Promise<Job | undefined> {
    await this.#db
      .updateTable('jobs')
      .set({
        status: 'CANCELLED',
        completed_at: now,
        deadline_at: null,
        retain_until: sql`${bigint(now)} + retain_ms`,
        stop_pending: sql`case when status = ${RUNNING} then 1 else 0 end`,
        stopped_at: sql`case when status = ${RUNNING} then ${bigint(now)} else null end`,
      })
      .where('id', '=', jobId)
      .where('endpoint_id', '=', endpointId)
      .where('status', 'in', [QUEUED, RUNNING])
      .execute();
    return this.get(endpointId, jobId);
  }

  /**
   * Queues a FAILED or TIMED_OUT job again, its ttl counted afresh; undefined: no such job. `admit` sees the owner's
   * use in the owner's turn, as enqueue's does, before a job that can be retried is queued again.
   */
  async retry(
    endpointId: string,
    jobId: string,
    now: number,
    admit?: JobAdmit,
  ): Promise<{ retried: boolean; job: Job } | undefined> {
    if (!admit) return this.#retried(this.#db, endpointId, jobId, now);
    return this.#db.transaction().execute(async (trx) => {
      const job = await this.#get(trx, endpointId, jobId);
      if (!job || !RETRYABLE_STATUSES.includes(job.status)) return job && { retried: false, job };
      await takeOwnerTurn(trx, job.ownerId);
      admit(await ownerJobUse(trx, job.ownerId));
      return this.#retried(trx, endpointId, jobId, now);
    });
  }

  /** The job queued again, or as it is when it cannot be retried (job-retry.ts); undefined: no such job. */
  async #retried(
    db: Kysely<Database>,
    endpointId: string,
    jobId: string,
    now: number,
  ): Promise<{ retried: boolean; job: Job } | undefined> {
    const queued = await requeueFinished(db, endpointId, jobId, now);
    if (queued) return { retried: true, job: queued };
    const job = await this.#get(db, endpointId, jobId);
    return job && { retried: false, job };
  }

  /** Removes the endpoint's IN_QUEUE jobs; how many. */
  async purgeQueue(endpointId: string): Promise<number> {
    const result = await this.#db
      .deleteFrom('jobs')
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', QUEUED)
      .executeTakeFirst();
    this.#reclaimer?.deleted();
    return Number(result.numDeletedRows);
  }

  /**
   * The worker no longer holds its jobs (it died, was removed, or said it holds nothing): each goes back to the
   * queue, or is FAILED naming `cause` once it has been taken `maxAttempts` times. `except`: jobs it still holds.
   * `unseenUncounted` (the worker says it holds nothing): a job it never showed it had (no ping listed it, no progress
   * or chunk came for it since its take) most likely never reached it, and its take is not counted as an attempt.
   */
  async requeueWorker(
    workerId: string,
    cause: string,
    options: { maxAttempts: number; now: number; except?: readonly string[]; unseenUncounted?: boolean },
  ): Promise<Requeued> {
    const held = (db: Kysely<Database>) =>
      db
        .selectFrom('jobs')
        .select('id')
        .select(
          // The take sets seen_at to started_at; a ping, a progress update or a chunk moves it on.
          sql<number>`case when seen_at = started_at and output is null and stream_chunks = 0 then 1 else 0 end`.as(
            'unseen',
          ),
        )
        .where('worker_id', '=', workerId)
        .where('status', '=', RUNNING)
        .$if((options.except ?? []).length > 0, (q) => q.where('id', 'not in', options.except ?? []))
        .execute();
    // Most calls find nothing held (every take with `job_in_progress=0` asks): one read then, no transaction.
    if ((await held(this.#db)).length === 0) return nothingRequeued();
    return this.#db.transaction().execute(async (trx) => {
      const jobs = await held(trx);
      const unseen = options.unseenUncounted
        ? jobs.filter((j) => Number(j.unseen) === 1).map((j) => j.id)
        : [];
      const spared = await takeBackAttempts(trx, unseen, options.maxAttempts);
      return requeueIds(
        trx,
        jobs.map((j) => j.id),
        cause,
        { ...options, spared },
      );
    });
  }

  /**
   * These jobs, if still in progress, go back to the queue (FAILED at the attempt limit); `untaken`: they never
   * reached the worker (its take was not answered), so the take does not count as an attempt.
   */
  async requeue(
    ids: readonly string[],
    cause: string,
    options: { maxAttempts: number; now: number; untaken?: boolean },
  ): Promise<Requeued> {
    if (ids.length === 0) return nothingRequeued();
    return this.#db.transaction().execute(async (trx) => {
      const spared = options.untaken ? await takeBackAttempts(trx, ids, options.maxAttempts) : [];
      return requeueIds(trx, ids, cause, { ...options, spared });
    });
  }

  /**
   * A worker's ping: the jobs it lists are seen now, and a stop it was sent for a job it no longer lists is done.
   */
  async heartbeat(workerId: string, listed: readonly string[], now: number): Promise<void> {
    if (listed.length > 0)
      await this.#db
        .updateTable('jobs')
        .set({ seen_at: now })
        .where('worker_id', '=', workerId)
        .where('id', 'in', listed)
        .where('status', '=', RUNNING)
        .execute();
    await this.#db
      .updateTable('jobs')
      .set({ stop_pending: 0 })
      .where('worker_id', '=', workerId)
      .where('stop_pending', '=', 1)
      .$if(listed.length > 0, (q) => q.where('id', 'not in', listed))
      .execute();
  }

  /** Jobs IN_PROGRESS that no worker showed it held since `before`: back to the queue (or FAILED at the limit). */
  async requeueUnseen(
    before: number,
    cause: string,
    options: { maxAttempts: number; now: number },
  ): Promise<Requeued> {
    return this.#db.transaction().execute(async (trx) => {
      const lost = await trx
        .selectFrom('jobs')
        .select('id')
        .where('status', '=', RUNNING)
        .where('seen_at', '<', before)
        .execute();
      return requeueIds(
        trx,
        lost.map((l) => l.id),
        cause,
        options,
      );
    });
  }

  /** The jobs the worker must be told to stop (cancelled or timed out while it held them). */
  async stopsFor(workerId: string): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('jobs')
      .select('id')
      .where('worker_id', '=', workerId)
      .where('stop_pending', '=', 1)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Workers that still held a job they were told to stop before `before`: they are to be replaced. */
  async overdueStops(before: number): Promise<{ workerId: string; endpointId: string }[]> {
    const rows = await this.#db
      .selectFrom('jobs')
      .select(['worker_id', 'endpoint_id'])
      .distinct()
      .where('stop_pending', '=', 1)
      .where('stopped_at', '<', before)
      .execute();
    return rows.flatMap((r) => (r.worker_id ? [{ workerId: r.worker_id, endpointId: r.endpoint_id }] : []));
  }

  /**
   * Ends what time has ended: unfinished jobs past their ttl and running ones past their execution timeout are
   * TIMED_OUT (a held one's worker is told to stop), and finished ones past their retention are deleted.
   */
  async expire(now: number): Promise<{ timedOut: Job[]; deleted: number }> {
    return this.#db.transaction().execute(async (trx) => {
      const timedOut = await trx
        .updateTable('jobs')
        .set({
          error: sql`case when expires_at <= ${bigint(now)} then 'ttl' else 'executionTimeout' end`,
          stop_pending: sql`case when status = ${RUNNING} then 1 else 0 end`,
          stopped_at: sql`case when status = ${RUNNING} then ${bigint(now)} else null end`,
          status: 'TIMED_OUT',
          completed_at: now,
          deadline_at: null,
          retain_until: sql`${bigint(now)} + retain_ms`,
        })
        .where('status', 'in', [QUEUED, RUNNING])
        .where((eb) => eb.or([eb('expires_at', '<=', now), eb('deadline_at', '<=', now)]))
        .returningAll()
        .execute();
      const gone = await trx.deleteFrom('jobs').where('retain_until', '<=', now).returning('id').execute();
      if (gone.length > 0)
        await trx
          .deleteFrom('job_chunks')
          .where(
            'job_id',
            'in',
            gone.map((g) => g.id),
          )
          .execute();
      if (gone.length > 0) this.#reclaimer?.deleted();
      return { timedOut: timedOut.map(fromRow), deleted: gone.length };
    });
  }

  /** The endpoints that have IN_QUEUE jobs. */
  queuedEndpoints(): Promise<string[]> {
    return queuedEndpoints(this.#db);
  }

  /** The endpoint's jobs by status (every status present, 0 where none). */
  counts(endpointId: string): Promise<Record<JobStatus, number>> {
    return countJobs(this.#db, endpointId);
  }

  /** The endpoint's most recent jobs, newest first, of one status or all. */
  list(endpointId: string, options: { status?: JobStatus; limit: number }): Promise<JobListing[]> {
    return listJobs(this.#db, endpointId, options);
  }

  /** One job for its owner: input, output and the chunks not yet read, cut to `bounds`; undefined: not found. */
  detail(endpointId: string, jobId: string, bounds: JobDetailBounds): Promise<JobDetail | undefined> {
    return readJobDetail(this.#db, this.#dialect, endpointId, jobId, bounds);
  }

  /** Every endpoint's queue and jobs in progress, for the autoscaler (endpoints with none are absent). */
  queueSignals(): Promise<Map<string, JobQueueSignal>> {
    return jobQueueSignals(this.#db);
  }

  /** A queue worker polled or pinged now. */
  async workerSeen(workerId: string, endpointId: string, now: number): Promise<void> {
    await this.#db
      .insertInto('job_workers')
      .values({ worker_id: workerId, endpoint_id: endpointId, seen_at: now })
      .onConflict((oc) => oc.column('worker_id').doUpdateSet({ seen_at: now }))
      .execute();
  }

  /** When the worker last polled or pinged; undefined: never. */
  async workerSeenAt(workerId: string): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('job_workers')
      .select('seen_at')
      .where('worker_id', '=', workerId)
      .executeTakeFirst();
    return row === undefined ? undefined : Number(row.seen_at);
  }

  /** Forgets the workers not seen since `before` (gone long ago). */
  async forgetWorkers(before: number): Promise<void> {
    await this.#db.deleteFrom('job_workers').where('seen_at', '<', before).execute();
  }
}
