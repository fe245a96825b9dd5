/**
 * The jobs API's client routes on the gateway address, a `GatewayRoute` (gateway/router.ts) that claims
 * `/v2/...` on any Host that is not an endpoint's own (`{appName}.{domain}` keeps its whole path space):
 * run, runsync, status, status-sync, stream, cancel, retry, purge-queue, health, the extension `jobs` (recent
 * jobs and counts), and RunPod's OpenAI route `openai/v1/...` (openai-routes.ts). The key is checked before a body is read, so a refused call creates nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jobStatusBody, jobSummary, parseWait, streamBody } from '../contract/jobs.js';
import { describeStanding } from '../domain/budget.js';
import { isJobStatus, JOB_LIMITS } from '../domain/job.js';
import { JobError } from '../errors/jobs-catalogue.js';
import type { BudgetStandings } from '../ports/budgets.js';
import type { Clock } from '../ports/clock.js';
import type { RateDecision, RequestRate } from '../ports/rate-limit.js';
import {
  abortOnClose,
  type JobsLogger,
  onEndpointHost,
  safeDecode,
  writeError,
  writeJson,
} from './http-io.js';
import type { JobService } from './job-service.js';
import { OpenAIJobRoutes } from './openai-routes.js';
import { RunBodyParser } from './run-body-parser.js';

/** The waits of the long polls (ms): the default when a request names none, and the most it may name. */
export interface ClientWaits {
  runsyncDefaultMs: number;
  statusSyncDefaultMs: number;
  streamDefaultMs: number;
  maxMs: number;
}

export const DEFAULT_CLIENT_WAITS: ClientWaits = {
  runsyncDefaultMs: 90_000,
  statusSyncDefaultMs: 90_000,
  streamDefaultMs: 10_000,
  maxMs: 300_000,
};

const LIST_LIMIT = { default: 50, max: 1_000 };

export interface JobClientRoutesOptions {
  service: JobService;
  /** Owners' budgets: a queued job of an owner past its budget says BUDGET_EXCEEDED in its status. */
  budgets?: BudgetStandings;
  clock: Clock;
  /** The gateway's domain: `{appName}.{domain}` Hosts are endpoints' own and never claimed. */
  domain: string;
  logger: JobsLogger;
  waits?: ClientWaits;
  /** Each owner's budget of submissions (run, runsync, retry), weighed by body size; none: no rate. */
  submissions?: RequestRate;
  /** Parses run bodies, large ones off the event loop; none: a parser of its own. */
  runBodies?: RunBodyParser;
}

export class JobClientRoutes {
  readonly #o: JobClientRoutesOptions;
  readonly #waits: ClientWaits;
  readonly #openai: OpenAIJobRoutes;
  readonly #runBodies: RunBodyParser;

  constructor(options: JobClientRoutesOptions) {
    this.#o = options;
    this.#runBodies = options.runBodies ?? new RunBodyParser();
    this.#waits = options.waits ?? DEFAULT_CLIENT_WAITS;
    this.#openai = new OpenAIJobRoutes({
      service: options.service,
      logger: options.logger,
      maxWaitMs: this.#waits.maxMs,
      chunkWaitMs: this.#waits.streamDefaultMs,
    });
  }

  readonly claims = (req: IncomingMessage): boolean =>
    req.url?.startsWith('/v2/') === true && !onEndpointHost(req, this.#o.domain);

  readonly handleRequest = (req: IncomingMessage, res: ServerResponse): void => {
    this.#serve(req, res).catch((error: unknown) => writeError(res, error, this.#o.logger));
  };

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://jobs');
    const [, , ref, verb = '', jobId, extra] = url.pathname.split('/').map((part) => safeDecode(part));
    const method = req.method ?? 'GET';
    if (verb === 'openai' && ref !== undefined && ref !== '') {
      await this.#openai.serve(req, res, {
        authorize: () => this.#o.service.authorize(ref, header(req, 'authorization')),
        // After /v2/{ref}/openai: an endpoint may itself be called `openai`.
        route: `/${url.pathname.split('/').slice(4).join('/')}`,
        admit: (endpoint, take) => this.#admit(endpoint, take),
      });
      return;
    }
    if (ref === undefined || ref === '' || extra !== undefined)
      throw new JobError('INVALID_JOB_REQUEST', 'the path must be /v2/{endpoint}/{route}[/{job id}]');
    const route = CLIENT_ROUTES[verb];
    const needsJob = route?.job === true;
    if (!route || needsJob !== (jobId !== undefined && jobId !== '') || !route.methods.includes(method))
      throw new JobError(
        'INVALID_JOB_REQUEST',
        `no route ${method} /v2/{endpoint}/${verb}${jobId === undefined ? '' : '/{job}'}: see docs/jobs.md`,
      );
    const endpoint = await this.#o.service.authorize(ref, header(req, 'authorization'));
    const service = this.#o.service;
    const now = () => this.#o.clock();
    const wait = (fallback: number) => {
      const parsed = parseWait(url.searchParams.get('wait'), this.#waits.maxMs);
      if (!parsed.ok) throw new JobError('INVALID_JOB_REQUEST', parsed.problem);
      return parsed.value ?? fallback;
    };
    const id = jobId ?? '';
    switch (verb) {
      case 'run':
      case 'runsync': {
        const sync = verb === 'runsync';
        const waitMs = sync ? wait(this.#waits.runsyncDefaultMs) : 0;
        const limit = sync ? JOB_LIMITS.runsyncBodyBytes : JOB_LIMITS.runBodyBytes;
        const declared = header(req, 'content-length');
        this.#admit(endpoint, (rate, key) => rate.takeRequest(key, declared, limit));
        const parsed = await this.#runBodies.read(req, limit, `a ${verb} body`, (size) => {
          if (declared === undefined)
            this.#admit(endpoint, (rate, key) => rate.takeUndeclaredBody(key, size));
        });
        if (!parsed.ok) throw new JobError('INVALID_JOB_REQUEST', parsed.problem);
        const job = await service.submit(endpoint, parsed.value, sync);
        if (!sync) {
          writeJson(res, 200, JSON.stringify({ id: job.id, status: job.status }));
          return;
        }
        const done = await service.awaitFinished(endpoint, job.id, waitMs, abortOnClose(res));
        writeJson(res, 200, jobStatusBody(done, now(), this.#waitingFor));
        return;
      }
      case 'status': {
        const job = await service.status(endpoint, id);
        writeJson(res, 200, jobStatusBody(job, now(), this.#waitingFor));
        return;
      }
      case 'status-sync': {
        const waitMs = wait(this.#waits.statusSyncDefaultMs);
        const job = await service.awaitFinished(endpoint, id, waitMs, abortOnClose(res));
        writeJson(res, 200, jobStatusBody(job, now(), this.#waitingFor));
        return;
      }
      case 'stream': {
        const waitMs = wait(this.#waits.streamDefaultMs);
        const { job, chunks } = await service.stream(endpoint, id, waitMs, abortOnClose(res));
        writeJson(res, 200, streamBody(job, chunks));
        return;
      }
      case 'cancel':
        writeJson(res, 200, jobStatusBody(await service.cancel(endpoint, id), now()));
        return;
      case 'retry': {
        this.#admit(endpoint, (rate, key) => rate.takeRequest(key, undefined, 0));
        const job = await service.retry(endpoint, id);
        writeJson(res, 200, JSON.stringify({ id: job.id, status: job.status }));
        return;
      }
      case 'purge-queue': {
        const removed = await service.purgeQueue(endpoint);
        writeJson(res, 200, JSON.stringify({ removed, status: 'completed' }));
        return;
      }
      case 'health':
        writeJson(res, 200, JSON.stringify(await service.health(endpoint)));
        return;
      default: {
        const status = url.searchParams.get('status') ?? '';
        const filter = status === '' ? undefined : isJobStatus(status) ? status : null;
        if (filter === null)
          throw new JobError('INVALID_JOB_REQUEST', `status must be one of the job statuses, got ${status}`);
        const limitText = url.searchParams.get('limit') ?? '';
        const limit = limitText === '' ? LIST_LIMIT.default : Number(limitText);
        if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT.max)
          throw new JobError('INVALID_JOB_REQUEST', `limit must be an integer from 1 to ${LIST_LIMIT.max}`);
        const { counts, jobs } = await service.list(endpoint, {
          limit,
          ...(filter === undefined ? {} : { status: filter }),
        });
        const at = now();
        writeJson(res, 200, JSON.stringify({ counts, jobs: jobs.map((j) => jobSummary(j, at)) }));
      }
    }
  }

  /**
   * Why a queued job of an owner past its budget waits: the cached standing, asked for queued jobs alone (a stale
   * one starts a read of the ledger, which a finished job's status need not cost).
   */
  readonly #waitingFor = (job: { ownerId: string }): string | undefined => {
    const standing = this.#o.budgets?.standingOf(job.ownerId);
    return standing?.state === 'exceeded' ? describeStanding(standing) : undefined;
  };

  /** Charges a submission to its endpoint's owner (whichever key sent it); 429 with Retry-After when over. */
  #admit(endpoint: { ownerId: string }, take: (rate: RequestRate, key: string) => RateDecision): void {
    const rate = this.#o.submissions;
    if (!rate) return;
    const decision = take(rate, endpoint.ownerId);
    if (!decision.allowed)
      throw new JobError(
        'RATE_LIMITED',
        `too many job submissions for this owner; retry in ${decision.retryAfterSeconds} s`,
        { retryAfterSeconds: decision.retryAfterSeconds },
      );
  }
}

/** Each route: the methods it takes and whether it names a job (the OpenAPI document describes each: its test checks). */
export const CLIENT_ROUTES: Readonly<Record<string, { methods: readonly string[]; job: boolean }>> = {
  run: { methods: ['POST'], job: false },
  runsync: { methods: ['POST'], job: false },
  status: { methods: ['GET', 'POST'], job: true },
  'status-sync': { methods: ['GET', 'POST'], job: true },
  stream: { methods: ['GET', 'POST'], job: true },
  cancel: { methods: ['POST'], job: true },
  retry: { methods: ['POST'], job: true },
  'purge-queue': { methods: ['POST'], job: false },
  health: { methods: ['GET'], job: false },
  jobs: { methods: ['GET'], job: false },
};

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
