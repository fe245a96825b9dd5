/**
 * The jobs API's client side (RunPod's queue API, issue 22): who may use an endpoint's jobs, and run, runsync,
 * status (with a wait), stream, cancel, retry, purge, health and the list. Long polls wait on this process's
 * wake-ups and re-check the store on a short interval (another replica may have changed a job); every wait is
 * bounded. HTTP is client-routes.ts's; this file sees parsed requests and answers jobs.
 */
import { randomUUID } from 'node:crypto';
import type { RunRequest } from '../contract/jobs.js';
import type { Endpoint } from '../domain/endpoint.js';
import {
  DEFAULT_JOB_STREAM_BOUNDS,
  isTerminal,
  type Job,
  type JobListing,
  type JobRetention,
  type JobStatus,
  RETRYABLE_STATUSES,
} from '../domain/job.js';
import { describeBreach, jobQuotaBreach, type Quota } from '../domain/quota.js';
import { JobError } from '../errors/jobs-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { JobWebhooks } from '../ports/job-webhooks.js';
import type { CallerKeys } from '../service/caller-keys.js';
import {
  endpointRefusal,
  keyRefusal,
  modelReachOf,
  reachOf,
  UNKNOWN_KEY,
} from '../service/endpoint-access.js';
import { ambiguousRefMessage, resolveEndpointRef } from '../service/endpoint-ref.js';
import type { EndpointKeyGrant } from '../service/invoke-key-service.js';
import type { EndpointReach } from '../store/endpoints/endpoints.js';
import type { ClientJobStore } from '../store/jobs/job-roles.js';
import type { JobAdmit } from '../store/jobs/jobs.js';
import { announceEnded } from './job-announcements.js';
import { type JobEvents, wakeKey } from './job-events.js';
import type { Wakeups } from './wakeups.js';
import { isWorkerToken } from './worker-tokens.js';

export interface JobServiceOptions {
  jobs: ClientJobStore;
  clock: Clock;
  wakeups: Wakeups;
  events: JobEvents;
  /**
   * The live endpoints within `reach` whose id, appName or name is `ref`, the id's and the appName's first, at most
   * `limit` (the store's `EndpointRepository.matching`).
   */
  findEndpoints: (ref: string, reach: EndpointReach, limit: number) => Promise<Endpoint[]>;
  /**
   * The live endpoints within `reach` that have an OpenAI model name, at most `limit` (the store's
   * `EndpointRepository.withOpenAIModel`): the model router's endpoints.
   */
  findModelEndpoints: (reach: EndpointReach, limit: number) => Promise<Endpoint[]>;
  /** What a client key allows: the one cache of callers' key checks, shared with the gateway's endpoint URLs. */
  keys: CallerKeys;
  retention: JobRetention;
  /** The endpoint's workers, idle and running, for `health`; none: zeros. */
  workerCounts?: (endpointId: string) => { idle: number; running: number };
  /** Bytes one stream read returns at most (always one chunk when there is one); none: the default. */
  streamReadBytes?: number;
  /** The owner's quotas (its job quotas bound each submission); none: no job quota. */
  quotaOf?: (ownerId: string) => Promise<Quota>;
  /** Whether a job's webhook target is allowed (refused at `run`, naming why); none: every target is. */
  webhooks?: Pick<JobWebhooks, 'checkTarget'>;
  newId?: () => string;
}

/** RunPod's `health` body. */
export interface JobHealth {
  jobs: { completed: number; failed: number; inProgress: number; inQueue: number; retried: number };
  workers: { idle: number; running: number };
}

/** The most endpoints a name's look-up reads: past it the name is shared anyway, and the first ids are named. */
const NAME_MATCHES = 20;
/** The most endpoints with a model name the model router reads for one key (an owner's endpoints are fewer). */
const MODEL_ENDPOINTS = 1_000;

export class JobService {
  readonly #o: JobServiceOptions;
  readonly #newId: () => string;

  constructor(options: JobServiceOptions) {
    this.#o = options;
    this.#newId = options.newId ?? randomUUID;
  }

  /**
   * The endpoint `ref` names (its id, else its appName, else its name when no other endpoint the key may call has
   * it: service/endpoint-ref.ts) among those `presented` (an Authorization value: `Bearer k` or the raw key) may
   * use the jobs of (service/endpoint-access.ts, the gateway's rule too): 401 without a key or with one that is not
   * a client key, 404 when no endpoint the key may call is named so, 409 naming the ids when several are.
   */
  async authorize(ref: string, presented: string | undefined): Promise<Endpoint> {
    const grant = await this.#grant(presented);
    const reachable = (await this.#o.findEndpoints(ref, reachOf(grant), NAME_MATCHES)).filter(
      (e) => endpointRefusal(grant, e) === undefined,
    );
    const found = resolveEndpointRef(ref, reachable, (e) => ({
      id: e.id,
      appName: e.spec.appName,
      name: e.spec.name,
    }));
    if (found.kind === 'ambiguous')
      throw new JobError(
        'AMBIGUOUS_ENDPOINT_NAME',
        ambiguousRefMessage(ref, found.ids, found.ids.length >= NAME_MATCHES),
        { ids: found.ids },
      );
    if (found.kind === 'none')
      throw new JobError(
        'ENDPOINT_NOT_FOUND',
        `no endpoint this key may call has the id, appName or name ${JSON.stringify(ref)}`,
      );
    return found.endpoint;
  }

  /**
   * The endpoints with an OpenAI model name that `presented` may use the jobs of, by the same key rules as
   * `authorize`, among its owner's (service/endpoint-access.ts `modelReachOf`): those the model router picks among.
   */
  async modelEndpoints(presented: string | undefined): Promise<Endpoint[]> {
    const grant = await this.#grant(presented);
    return (await this.#o.findModelEndpoints(modelReachOf(grant), MODEL_ENDPOINTS)).filter(
      (e) => endpointRefusal(grant, e) === undefined,
    );
  }

  /** What the key `presented` may call: 401 without a key, with a worker's token, or with a key of no jobs. */
  async #grant(presented: string | undefined): Promise<EndpointKeyGrant> {
    const key = presented?.replace(/^Bearer\s+/i, '').trim() ?? '';
    if (key === '')
      throw new JobError(
        'UNAUTHENTICATED',
        'send "Authorization: Bearer <key>" (an API key or an invoke key)',
      );
    if (isWorkerToken(key))
      throw new JobError('UNAUTHENTICATED', "a worker's token cannot call the client routes");
    const grant = await this.#o.keys.grantOf(key);
    if (grant === null) throw new JobError('UNAUTHENTICATED', UNKNOWN_KEY);
    const refused = keyRefusal(grant, 'jobs');
    if (refused !== undefined) throw new JobError('UNAUTHENTICATED', refused);
    return grant;
  }

  /** Queues a job (`run`, or `runsync` with `sync`). */
  async submit(endpoint: Endpoint, request: RunRequest, sync: boolean): Promise<Job> {
    if (request.webhook !== null && this.#o.webhooks) {
      const refused = await this.#o.webhooks.checkTarget(request.webhook);
      if (refused !== undefined)
        throw new JobError('INVALID_JOB_REQUEST', `the webhook target is refused: ${refused}`, {
          field: 'webhook',
        });
    }
    const now = this.#o.clock();
    const job = {
      id: this.#newId(),
      endpointId: endpoint.id,
      ownerId: endpoint.ownerId,
      input: request.input,
      inputBytes: request.inputBytes,
      webhook: request.webhook,
      policy: request.policy,
      sync,
      createdAt: now,
    };
    await this.#o.jobs.enqueue(
      job,
      sync ? this.#o.retention.syncMs : this.#o.retention.asyncMs,
      await this.#admission(endpoint.ownerId, request.inputBytes),
    );
    this.#o.wakeups.wake(wakeKey.queue(endpoint.id));
    this.#o.events.emit('queued', { endpointId: endpoint.id, lowPriority: request.policy.lowPriority });
    return {
      ...job,
      status: 'IN_QUEUE',
      output: null,
      error: null,
      workerId: null,
      attempts: 0,
      startedAt: null,
      completedAt: null,
    };
  }

  /** The job now; 404 when it is not the endpoint's (or is gone). */
  async status(endpoint: Endpoint, jobId: string): Promise<Job> {
    const job = await this.#o.jobs.get(endpoint.id, jobId);
    if (!job) throw new JobError('JOB_NOT_FOUND', `no job ${JSON.stringify(jobId)} on this endpoint`);
    return job;
  }

  /** The job once it is finished, or as it is after `waitMs`. */
  async awaitFinished(endpoint: Endpoint, jobId: string, waitMs: number, signal?: AbortSignal): Promise<Job> {
    const until = this.#o.clock() + waitMs;
    for (;;) {
      const job = await this.status(endpoint, jobId);
      const left = until - this.#o.clock();
      if (isTerminal(job.status) || left <= 0 || signal?.aborted) return job;
      await this.#o.wakeups.wait(wakeKey.job(jobId), left, signal);
    }
  }

  /**
   * What the job streamed since the last read (consumed), a batch of at most `streamReadBytes` (the rest comes at
   * the next read), waiting up to `waitMs` for some or for its end; with the job as it is after the batch.
   */
  async stream(
    endpoint: Endpoint,
    jobId: string,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<{ job: Job; chunks: string[] }> {
    const next = await this.nextChunks(endpoint, jobId, waitMs, signal);
    if ('job' in next) return { job: next.job, chunks: [] };
    return { job: await this.status(endpoint, jobId), chunks: next.chunks };
  }

  /**
   * The job's next batch of streamed chunks (consumed), or the job itself when it ended with none left or none
   * came within `waitMs`. A wake is read chunks first: the chunk that woke it is one store read from its client.
   */
  async nextChunks(
    endpoint: Endpoint,
    jobId: string,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<{ chunks: string[] } | { job: Job }> {
    const until = this.#o.clock() + waitMs;
    const take = () =>
      this.#o.jobs.takeChunks(jobId, this.#o.streamReadBytes ?? DEFAULT_JOB_STREAM_BOUNDS.readBytes);
    // The job is this endpoint's before any of its chunks is consumed.
    await this.status(endpoint, jobId);
    for (;;) {
      const chunks = await take();
      if (chunks.length > 0) return { chunks };
      const job = await this.status(endpoint, jobId);
      if (isTerminal(job.status)) {
        // Chunks posted between the read above and the end.
        const last = await take();
        return last.length > 0 ? { chunks: last } : { job };
      }
      if (until - this.#o.clock() <= 0 || signal?.aborted) return { job };
      await this.#o.wakeups.wait(wakeKey.job(jobId), until - this.#o.clock(), signal);
    }
  }

  async cancel(endpoint: Endpoint, jobId: string): Promise<Job> {
    const before = await this.status(endpoint, jobId);
    const job = await this.#o.jobs.cancel(endpoint.id, jobId, this.#o.clock());
    if (!job) throw new JobError('JOB_NOT_FOUND', `no job ${JSON.stringify(jobId)} on this endpoint`);
    if (!isTerminal(before.status) && job.status === 'CANCELLED') announceEnded(this.#o, job, true);
    return job;
  }

  async retry(endpoint: Endpoint, jobId: string): Promise<Job> {
    // Its bytes are kept already: a retry adds one job queued, and no byte.
    const admit = await this.#admission(endpoint.ownerId, 0);
    const result = await this.#o.jobs.retry(endpoint.id, jobId, this.#o.clock(), admit);
    if (!result) throw new JobError('JOB_NOT_FOUND', `no job ${JSON.stringify(jobId)} on this endpoint`);
    if (!result.retried)
      throw new JobError(
        'JOB_NOT_RETRYABLE',
        `job ${jobId} is ${result.job.status}: only ${RETRYABLE_STATUSES.join(' and ')} jobs can be retried`,
        { status: result.job.status },
      );
    this.#o.wakeups.wake(wakeKey.queue(endpoint.id));
    this.#o.events.emit('queued', { endpointId: endpoint.id, lowPriority: result.job.policy.lowPriority });
    this.#o.events.emit('retried', { endpointId: endpoint.id, count: 1 });
    return result.job;
  }

  /**
   * The owner's job quotas as a check of its use, for the store to run in the owner's turn: queuing one more job of
   * `addedBytes` past a quota is QUOTA_EXCEEDED naming it. None when no quota applies.
   */
  async #admission(ownerId: string, addedBytes: number): Promise<JobAdmit | undefined> {
    const quota = await this.#o.quotaOf?.(ownerId);
    if (!quota) return undefined;
    return (use) => {
      const breach = jobQuotaBreach(quota, use, addedBytes);
      if (breach)
        throw new JobError('QUOTA_EXCEEDED', describeBreach(breach), {
          quota: breach.quota,
          limit: breach.limit,
          used: breach.used,
          usedAfter: breach.usedAfter,
        });
    };
  }

  purgeQueue(endpoint: Endpoint): Promise<number> {
    return this.#o.jobs.purgeQueue(endpoint.id);
  }

  async health(endpoint: Endpoint): Promise<JobHealth> {
    const counts = await this.#o.jobs.counts(endpoint.id);
    return {
      jobs: {
        completed: counts.COMPLETED,
        failed: counts.FAILED + counts.TIMED_OUT,
        inProgress: counts.IN_PROGRESS,
        inQueue: counts.IN_QUEUE,
        retried: 0,
      },
      workers: this.#o.workerCounts?.(endpoint.id) ?? { idle: 0, running: 0 },
    };
  }

  /** Recent jobs, newest first, and the counts by status (the CLI's and the dashboard's list). */
  async list(
    endpoint: Endpoint,
    options: { status?: JobStatus; limit: number },
  ): Promise<{ counts: Record<JobStatus, number>; jobs: JobListing[] }> {
    const [counts, jobs] = await Promise.all([
      this.#o.jobs.counts(endpoint.id),
      this.#o.jobs.list(endpoint.id, options),
    ]);
    return { counts, jobs };
  }
}
