/**
 * The jobs API's client routes on the gateway address, a `GatewayRoute` (gateway/router.ts) that claims
 * `/v2/...` on any Host that is not an endpoint's own (`{appName}.{domain}` keeps its whole path space):
 * run, runsync, status, status-sync, stream, cancel, retry, purge-queue, health, the extension `jobs` (recent
 * jobs and counts), and RunPod's OpenAI route `openai/v1/...` (openai-routes.ts). The key is checked before a body is read, so a refused call creates nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jobStatusBody, jobSummary, parseWait, streamBody } from '../contract/jobs.js';
import { type ClientVerb, parseClientPath, parseJobListQuery } from '../contract/runpod-routes.js';
import { describeStanding } from '../domain/budget.js';
import type { Endpoint } from '../domain/endpoint.js';
import { JOB_LIMITS, type Job } from '../domain/job.js';
import { JobError } from '../errors/jobs-catalogue.js';
import type { BudgetStandings } from '../ports/budgets.js';
import type { Clock } from '../ports/clock.js';
import type { RateDecision, RequestRate } from '../ports/rate-limit.js';
import { abortOnClose, type JobsLogger, onEndpointHost, writeError, writeJson } from './http-io.js';
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

/** One call of a route, its caller allowed: the request, its answer, the endpoint and the job it names ('' if none). */
interface RouteCall {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  endpoint: Endpoint;
  jobId: string;
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
    const parsed = parseClientPath(req.method ?? 'GET', url.pathname);
    if (!parsed.ok) throw new JobError('INVALID_JOB_REQUEST', parsed.problem);
    const call = parsed.value;
    if (call.kind === 'openai') {
      await this.#openai.serve(req, res, {
        authorize: () => this.#o.service.authorize(call.ref, header(req, 'authorization')),
        route: call.route,
        admit: (endpoint, take) => this.#admit(endpoint, take),
      });
      return;
    }
    const endpoint = await this.#o.service.authorize(call.ref, header(req, 'authorization'));
    await this.#routes[call.verb]({ req, res, url, endpoint, jobId: call.jobId });
  }

  /** The `wait` a long poll names, or its default. */
  #wait(url: URL, fallback: number): number {
    const parsed = parseWait(url.searchParams.get('wait'), this.#waits.maxMs);
    if (!parsed.ok) throw new JobError('INVALID_JOB_REQUEST', parsed.problem);
    return parsed.value ?? fallback;
  }

  #statusBody(job: Job): string {
    return jobStatusBody(job, this.#o.clock(), this.#waitingFor);
  }

  /** What each route does, once its caller may call the endpoint. */
  readonly #routes: Record<ClientVerb, (call: RouteCall) => Promise<void>> = {
    run: (call) => this.#submit(call, false),
    runsync: (call) => this.#submit(call, true),
    status: async ({ res, endpoint, jobId }) => {
      writeJson(res, 200, this.#statusBody(await this.#o.service.status(endpoint, jobId)));
    },
    'status-sync': async ({ res, url, endpoint, jobId }) => {
      const waitMs = this.#wait(url, this.#waits.statusSyncDefaultMs);
      const job = await this.#o.service.awaitFinished(endpoint, jobId, waitMs, abortOnClose(res));
      writeJson(res, 200, this.#statusBody(job));
    },
    stream: async ({ res, url, endpoint, jobId }) => {
      const waitMs = this.#wait(url, this.#waits.streamDefaultMs);
      const { job, chunks } = await this.#o.service.stream(endpoint, jobId, waitMs, abortOnClose(res));
      writeJson(res, 200, streamBody(job, chunks));
    },
    cancel: async ({ res, endpoint, jobId }) => {
      writeJson(res, 200, jobStatusBody(await this.#o.service.cancel(endpoint, jobId), this.#o.clock()));
    },
    retry: async ({ res, endpoint, jobId }) => {
      this.#admit(endpoint, (rate, key) => rate.takeRequest(key, undefined, 0));
      const job = await this.#o.service.retry(endpoint, jobId);
      writeJson(res, 200, JSON.stringify({ id: job.id, status: job.status }));
    },
    'purge-queue': async ({ res, endpoint }) => {
      const removed = await this.#o.service.purgeQueue(endpoint);
      writeJson(res, 200, JSON.stringify({ removed, status: 'completed' }));
    },
    health: async ({ res, endpoint }) => {
      writeJson(res, 200, JSON.stringify(await this.#o.service.health(endpoint)));
    },
    jobs: async ({ res, url, endpoint }) => {
      const query = parseJobListQuery(url.searchParams);
      if (!query.ok) throw new JobError('INVALID_JOB_REQUEST', query.problem);
      const { counts, jobs } = await this.#o.service.list(endpoint, query.value);
      const at = this.#o.clock();
      writeJson(res, 200, JSON.stringify({ counts, jobs: jobs.map((j) => jobSummary(j, at)) }));
    },
  };

  /** `run` and `runsync`: the body read (large ones off the event loop) and charged to the owner, then the job. */
  async #submit({ req, res, url, endpoint }: RouteCall, sync: boolean): Promise<void> {
    const verb = sync ? 'runsync' : 'run';
    const waitMs = sync ? this.#wait(url, this.#waits.runsyncDefaultMs) : 0;
    const limit = sync ? JOB_LIMITS.runsyncBodyBytes : JOB_LIMITS.runBodyBytes;
    const declared = header(req, 'content-length');
    this.#admit(endpoint, (rate, key) => rate.takeRequest(key, declared, limit));
    const parsed = await this.#runBodies.read(req, limit, `a ${verb} body`, (size) => {
      if (declared === undefined) this.#admit(endpoint, (rate, key) => rate.takeUndeclaredBody(key, size));
    });
    if (!parsed.ok) throw new JobError('INVALID_JOB_REQUEST', parsed.problem);
    const job = await this.#o.service.submit(endpoint, parsed.value, sync);
    if (!sync) {
      writeJson(res, 200, JSON.stringify({ id: job.id, status: job.status }));
      return;
    }
    writeJson(
      res,
      200,
      this.#statusBody(await this.#o.service.awaitFinished(endpoint, job.id, waitMs, abortOnClose(res))),
    );
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

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
