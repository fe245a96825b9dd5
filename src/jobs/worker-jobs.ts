/**
 * The jobs API's worker side (the RunPod worker protocol, runpod-python v1.12.0): take (a long poll, batch take,
 * `job_in_progress=0` returns what Corral thought the worker held), results (idempotent, progress updates, a
 * `stopPod` recycles the worker), stream chunks, pings (listed jobs are alive, a stop for a job no longer listed is
 * done) and the stop channel (a long poll, a stop re-sent at most once a second while pings list the job). Tokens and HTTP are
 * worker-routes.ts's; this file sees a verified worker and parsed requests.
 */
import type { WorkerResult } from '../contract/jobs.js';
import type { Endpoint } from '../domain/endpoint.js';
import { DEFAULT_JOB_STREAM_BOUNDS, type Job, type JobStreamBounds } from '../domain/job.js';
import { JobError } from '../errors/jobs-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { WorkerStanding } from '../ports/worker-standing.js';
import type { WorkerJobStore } from '../store/jobs/job-roles.js';
import type { JobsLogger } from './http-io.js';
import { announceEnded, announceRequeued } from './job-announcements.js';
import { type JobEvents, wakeKey } from './job-events.js';
import type { Wakeups } from './wakeups.js';

/** How soon a stop still pending is sent to its worker again. */
export const STOP_RESEND_MS = 1_000;

export interface WorkerJobsOptions {
  jobs: WorkerJobStore;
  clock: Clock;
  wakeups: Wakeups;
  events: JobEvents;
  /** How many times a job may be taken before a worker's loss FAILS it. */
  maxAttempts: number;
  /**
   * Where the worker stands (jobs/worker-directory.ts); absent: serving. Frozen or suspended (issue 24), its take
   * may still be open (the process stopped while Corral held it), but a job handed to it would wait for the thaw:
   * it takes nothing until it runs again. Chosen for removal (issue 29), it takes nothing more: what it held went
   * back to the queue when its removal was decided.
   */
  standing?: (endpointId: string, workerId: string) => WorkerStanding;
  /** What bounds a job's stream; none: the defaults. */
  stream?: JobStreamBounds;
  /** Says when jobs Corral thought a worker held go back to the queue because the worker says it holds none. */
  logger?: JobsLogger;
}

/** Who is asking: a verified worker of a live endpoint. */
export interface WorkerCaller {
  endpoint: Endpoint;
  workerId: string;
}

export class WorkerJobs {
  readonly #o: WorkerJobsOptions;
  /** Takes held open per worker: a second one at once is slowed down (429). */
  readonly #polling = new Set<string>();
  /** When each worker was last told to stop each job (pruned to the stops still pending). */
  readonly #stopsSent = new Map<string, Map<string, number>>();

  constructor(options: WorkerJobsOptions) {
    this.#o = options;
  }

  /**
   * Up to `batch` jobs for the worker (never more than the endpoint's maxConcurrent in progress on it), waiting up
   * to `holdMs` for one. `holding: false` (the SDK's `job_in_progress=0`): the worker holds nothing, so whatever
   * Corral thought it held goes back to the queue first. `gone()`: the worker's request closed; jobs taken for it
   * then go back at once (a job is handed only to a worker that is polling).
   */
  async take(
    caller: WorkerCaller,
    options: { batch: number; holding: boolean | undefined; holdMs: number; signal?: AbortSignal },
  ): Promise<Job[]> {
    const { endpoint, workerId } = caller;
    if (this.#polling.has(workerId))
      throw new JobError('WORKER_SLOW_DOWN', 'this worker already has a take waiting');
    this.#polling.add(workerId);
    try {
      this.#o.events.emit('contact', { endpointId: endpoint.id, workerId });
      if (options.holding === false) await this.#returnHeld(caller, 'the worker said it holds no job');
      const until = this.#o.clock() + options.holdMs;
      const cap = endpoint.spec.workers.maxConcurrent;
      // A stopped endpoint's, or one that may have no worker: its workers are on their way out and take nothing.
      if (endpoint.desired === 'stopped' || endpoint.spec.workers.maxWorkers === 0) {
        await this.#o.wakeups.wait(`idle:${workerId}`, options.holdMs, options.signal);
        return [];
      }
      for (;;) {
        const standing = this.#standing(caller);
        if (standing !== 'serving') {
          const left = until - this.#o.clock();
          if (left <= 0 || options.signal?.aborted) return [];
          // Resting: a job queued meanwhile is looked at again once it runs. Leaving: it answers "no job" at the end
          // of its hold (not at once, which the SDK would meet by polling again at once until its process ends).
          const key = standing === 'resting' ? wakeKey.queue(endpoint.id) : `idle:${workerId}`;
          await this.#o.wakeups.wait(key, left, options.signal);
          continue;
        }
        const jobs = await this.#takeNow(caller, options.batch, cap, options.signal);
        const left = until - this.#o.clock();
        if (jobs.length > 0 || left <= 0 || options.signal?.aborted) return jobs;
        await this.#o.wakeups.wait(wakeKey.queue(endpoint.id), left, options.signal);
      }
    } finally {
      this.#polling.delete(workerId);
    }
  }

  /**
   * One take from the queue, said as `taking` then `took` (the autoscaler counts the worker busy from the first, so
   * that no scale-down picks it meanwhile). Jobs taken for a worker that left meanwhile (its request closed, or its
   * removal was decided while the take ran) go back at once, not counted as an attempt.
   */
  async #takeNow(caller: WorkerCaller, batch: number, cap: number, signal?: AbortSignal): Promise<Job[]> {
    const { endpoint, workerId } = caller;
    const said = { endpointId: endpoint.id, workerId };
    this.#o.events.emit('taking', said);
    let jobs: Job[] = [];
    try {
      jobs = await this.#o.jobs.take({
        endpointId: endpoint.id,
        workerId,
        max: Math.max(1, Math.min(batch, cap)),
        cap,
        now: this.#o.clock(),
      });
      if (jobs.length === 0) return jobs;
      const gone = signal?.aborted
        ? 'the worker left before its take was answered'
        : this.#standing(caller) !== 'serving'
          ? 'the worker was chosen for removal while its take ran'
          : undefined;
      if (gone === undefined) return jobs;
      await this.#returnHeld(caller, gone, jobs);
      jobs = [];
      return jobs;
    } finally {
      this.#o.events.emit('took', { ...said, count: jobs.length });
    }
  }

  #standing(caller: WorkerCaller): WorkerStanding {
    return this.#o.standing?.(caller.endpoint.id, caller.workerId) ?? 'serving';
  }

  /** A result (or a progress update) for a job the worker holds; a duplicate is accepted, another refused. */
  async result(caller: WorkerCaller, jobId: string, result: WorkerResult): Promise<void> {
    const now = this.#o.clock();
    const { endpoint, workerId } = caller;
    if (result.kind === 'progress') {
      if (!(await this.#o.jobs.progress(jobId, workerId, result.output, now)))
        throw new JobError('RESULT_REFUSED', `job ${jobId} is not held by worker ${workerId}`);
      this.#o.wakeups.wake(wakeKey.job(jobId));
      return;
    }
    const { outcome, job } = await this.#o.jobs.complete({
      jobId,
      workerId,
      status: result.status,
      output: result.output,
      error: result.error,
      now,
    });
    if (outcome === 'refused' || !job || job.endpointId !== endpoint.id)
      throw new JobError('RESULT_REFUSED', `job ${jobId} is not held by worker ${workerId}`);
    if (outcome === 'applied') announceEnded(this.#o, job);
    if (result.stopPod)
      this.#o.events.emit('recycle', {
        endpointId: endpoint.id,
        workerId,
        reason: 'the worker asked to be replaced (stopPod)',
      });
  }

  /**
   * The worker's result for a job it holds was refused as too large (`why`): the job FAILS now, saying so. Left
   * running, the SDK would drop the job, say it holds none, and the job would run again to the same end.
   */
  async resultTooLarge(caller: WorkerCaller, jobId: string, why: string): Promise<void> {
    const error = `the worker's result was refused: ${why}`;
    await this.result(caller, jobId, {
      kind: 'final',
      status: 'FAILED',
      output: null,
      error,
      stopPod: false,
    }).catch((refused: unknown) => {
      // Not the worker's job (or ended already): the 413 alone answers.
      if (!(refused instanceof JobError && refused.code === 'RESULT_REFUSED')) throw refused;
    });
  }

  /** A chunk the worker streamed for a job it holds, within the job's stream bounds. */
  async streamChunk(caller: WorkerCaller, jobId: string, chunk: string): Promise<void> {
    const bounds = this.#streamBounds();
    const kept = await this.#o.jobs.appendChunk(jobId, caller.workerId, chunk, this.#o.clock(), bounds);
    if (kept !== 'kept') throw chunkRefusal(kept, jobId, caller.workerId, bounds);
    this.#o.wakeups.wake(wakeKey.job(jobId));
  }

  /**
   * Refuses a chunk of `bytes` before its body is read when streamChunk would refuse it (the same errors): a worker
   * posting megabytes past its job's bounds costs a query, not the decoding and parsing of each body.
   */
  async checkChunkFits(caller: WorkerCaller, jobId: string, bytes: number): Promise<void> {
    const bounds = this.#streamBounds();
    const fit = await this.#o.jobs.chunkFit(jobId, caller.workerId, bytes, this.#o.clock(), bounds);
    if (fit !== 'fits') throw chunkRefusal(fit, jobId, caller.workerId, bounds);
  }

  #streamBounds(): JobStreamBounds {
    return this.#o.stream ?? DEFAULT_JOB_STREAM_BOUNDS;
  }

  /** A ping: the jobs it lists are alive; a stop for a job it no longer lists is done. */
  async ping(caller: WorkerCaller, listed: readonly string[]): Promise<void> {
    this.#o.events.emit('contact', { endpointId: caller.endpoint.id, workerId: caller.workerId });
    await this.#o.jobs.heartbeat(caller.workerId, listed, this.#o.clock());
  }

  /**
   * The jobs the worker must stop, waiting up to `holdMs` for one. A stop still pending (its pings still list the
   * job: the SDK drops a stop for a job it took in the last 0.1 s) is sent again, but not before STOP_RESEND_MS: the
   * SDK polls again at once after a stop, and would otherwise spin on it until its next ping (10 s by default).
   */
  async stops(caller: WorkerCaller, holdMs: number, signal?: AbortSignal): Promise<string[]> {
    const { workerId } = caller;
    const until = this.#o.clock() + holdMs;
    for (;;) {
      const ids = await this.#o.jobs.stopsFor(workerId);
      const now = this.#o.clock();
      const sent = this.#stopsSent.get(workerId) ?? new Map<string, number>();
      for (const id of sent.keys()) if (!ids.includes(id)) sent.delete(id);
      const nextDue = Math.min(...ids.map((id) => (sent.get(id) ?? -Infinity) + STOP_RESEND_MS));
      if (ids.length > 0 && nextDue <= now) {
        for (const id of ids) sent.set(id, now);
        this.#stopsSent.set(workerId, sent);
        return ids;
      }
      if (sent.size === 0) this.#stopsSent.delete(workerId);
      const left = until - now;
      if (left <= 0 || signal?.aborted) return [];
      await this.#o.wakeups.wait(wakeKey.stops(workerId), Math.min(left, Math.max(0, nextDue - now)), signal);
    }
  }

  /** The worker ended (failed, removed): the jobs it held go back to the queue now (FAILED at the attempt limit). */
  async workerEnded(workerId: string, reason: string): Promise<void> {
    const requeued = await this.#o.jobs.requeueWorker(workerId, `its worker ended: ${reason}`, {
      maxAttempts: this.#o.maxAttempts,
      now: this.#o.clock(),
    });
    announceRequeued(this.#o, requeued);
  }

  /**
   * The worker no longer holds its jobs: all it held (it said so), or `jobs` it never got. Back to the queue, FAILED
   * at the limit; a job it never got, or never showed it had, is not counted as an attempt (a take answered by a
   * replica that died, or lost on its way back, is Corral's fault, not the job's), up to the attempt limit of such
   * returns.
   */
  async #returnHeld(caller: WorkerCaller, cause: string, jobs?: readonly Job[]): Promise<void> {
    const options = { maxAttempts: this.#o.maxAttempts, now: this.#o.clock() };
    const requeued = jobs
      ? await this.#o.jobs.requeue(
          jobs.map((j) => j.id),
          cause,
          { ...options, untaken: true },
        )
      : await this.#o.jobs.requeueWorker(caller.workerId, cause, { ...options, unseenUncounted: true });
    announceRequeued(this.#o, requeued);
    if (jobs === undefined && requeued.requeued.length + requeued.failed.length > 0) {
      const retried = Object.values(requeued.retried).reduce((sum, n) => sum + n, 0);
      this.#o.logger?.warn(
        {
          endpointId: caller.endpoint.id,
          workerId: caller.workerId,
          requeued: requeued.requeued.length,
          notCounted: requeued.requeued.length - retried,
          failed: requeued.failed.map((job) => job.id),
        },
        'jobs went back to the queue: the worker said it holds none (those it never showed it had are not counted as attempts)',
      );
    }
  }
}

/** Why a chunk is not kept: not the worker's job, or past the job's stream bounds (dropped). */
function chunkRefusal(
  why: 'full' | 'refused',
  jobId: string,
  workerId: string,
  bounds: Pick<JobStreamBounds, 'maxBytes' | 'maxChunks'>,
): JobError {
  if (why === 'refused')
    return new JobError('RESULT_REFUSED', `job ${jobId} is not held by worker ${workerId}`);
  return new JobError(
    'STREAM_LIMIT_REACHED',
    `job ${jobId} has streamed its limit of ${bounds.maxBytes} bytes or ${bounds.maxChunks} chunks: this chunk is dropped; return the rest as the job's output`,
    { maxBytes: bounds.maxBytes, maxChunks: bounds.maxChunks },
  );
}
