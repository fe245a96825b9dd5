/**
 * The API's Fastify app: every body parsed as JSON, ApiError answers from the error and not-found handlers,
 * per-route metrics, and authentication then rate limiting before each route under the API prefix. The routes
 * themselves are in routes/; listening is the caller's business (app/serve.ts, tests).
 */

import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import secureJson from 'secure-json-parse';
import { API_PREFIX } from '../contract/paths.js';
import type { WireRates } from '../contract/quota.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Product } from '../gpu/products.js';
import { type ClientDeadlines, CONNECTIONS_CHECKING_INTERVAL_MS } from '../listeners/client-deadlines.js';
import { systemClock } from '../ports/clock.js';
import type { UsageReader } from '../ports/usage.js';
import type { ApiKeyService } from '../service/api-key-service.js';
import type { ClusterService } from '../service/cluster-service.js';
import type { CredentialService } from '../service/credential-service.js';
import type { EndpointService, ServerCatalog } from '../service/endpoint-service.js';
import type { GpuReportService } from '../service/gpu-report.js';
import type { InvokeKeyService } from '../service/invoke-key-service.js';
import type { Principal } from '../service/principal.js';
import type { QuotaService } from '../service/quota-service.js';
import type { SecretService } from '../service/secret-service.js';
import type { WebhookSecretService } from '../service/webhook-secret-service.js';
import type { WorkerService } from '../service/worker-service.js';
import type { EventRepository } from '../store/endpoints/events.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';
import type { WorkerOutputRepository } from '../store/workers/worker-outputs.js';
import type { WorkerRepository } from '../store/workers/workers.js';
import type { Authenticator } from './auth.js';
import { type DashboardFiles, registerDashboard } from './dashboard.js';
import type { EndpointLinks } from './links.js';
import type { ApiMetrics } from './metrics.js';
import type { OwnerWriteGate } from './owner-write-gate.js';
import type { RateLimiter } from './rate-limit.js';
import { chargeRefusal, type RefusedBodyTarpit, TARPIT_REFUSALS } from './refused-body-tarpit.js';
import { registerApiKeyRoutes } from './routes/api-keys.js';
import { registerBillingRoute } from './routes/billing.js';
import { registerCatalogRoutes } from './routes/catalog.js';
import { registerClusterRoute } from './routes/cluster.js';
import { registerCredentialRoutes } from './routes/credentials.js';
import {
  type DesiredSource,
  type HistorySource,
  type OtherReplicasSource,
  registerEndpointMetricsRoute,
  type TrafficSource,
} from './routes/endpoint-metrics.js';
import { registerEndpointRoutes } from './routes/endpoints.js';
import { registerGpuRoute } from './routes/gpus.js';
import { registerInvokeKeyRoutes } from './routes/invoke-keys.js';
import { type OwnerJobs, registerJobRoutes } from './routes/jobs.js';
import { type ModelsReport, registerModelRoutes } from './routes/models.js';
import { registerQuotaRoute } from './routes/quota.js';
import { registerSecretRoutes } from './routes/secrets.js';
import { registerSystemRoutes } from './routes/system.js';
import { registerWebhookSecretRoutes } from './routes/webhook-secrets.js';
import type { WorkerInsight } from './routes/workers.js';
import { registerWorkerRoutes } from './routes/workers.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

export interface ApiCatalog extends ServerCatalog {
  products(): Product[];
}

export interface AppOptions {
  logger: Logger;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  endpoints: EndpointService;
  credentials: CredentialService;
  /** Keys that call one endpoint's URL (Corral extension). */
  invokeKeys: InvokeKeyService;
  /** An endpoint's jobs for its owner (`endpoint/jobs`, `endpoint/job`, cancel, retry); absent: no routes. */
  ownerJobs?: OwnerJobs;
  /** Each endpoint's webhook signing secret, read and rotated by its owner (Corral extension, jobs). */
  webhookSecrets: WebhookSecretService;
  events: EventRepository;
  workers: WorkerRepository;
  /** The last output of workers that ended (the controller keeps it); absent: none is served. */
  workerOutputs?: Pick<WorkerOutputRepository, 'get' | 'listByEndpoint'>;
  /** Drains and undrains workers (`POST endpoint/worker/drain`). */
  workerService: WorkerService;
  /** Logs and resource use of workers; absent where this process runs no controller. */
  insight?: WorkerInsight;
  /** An endpoint's traffic through this process's gateway; absent where it runs none. */
  traffic?: TrafficSource;
  /** With several replicas: the other live replicas' gateways' load, and this replica's id; absent with one process. */
  otherReplicas?: OtherReplicasSource;
  /** The history of each endpoint's traffic and workers (the dashboard's charts); absent where none is kept. */
  history?: HistorySource;
  /** An endpoint's jobs in the queue and in progress now (the store's); absent: `endpoint/metrics` has no jobs. */
  jobCounts?: (endpointId: string) => Promise<{ inQueue: number; inProgress: number }>;
  /** The autoscaler's desired worker count of an endpoint; absent, or undefined, where it has not decided. */
  desiredWorkers?: DesiredSource;
  catalog: ApiCatalog;
  links: EndpointLinks;
  metrics: ApiMetrics;
  bodyLimitBytes: number;
  /** A bearer token that may read /metrics besides admin keys (Prometheus's scrape); none: admin keys only. */
  metricsToken?: string;
  /** Owners' secrets for `{{ CORRAL_SECRET_name }}`; absent: the secret routes are not served. */
  ownerSecrets?: SecretService;
  /** Whether workers can run now (false while an awaited Docker engine is silent); `/healthz` says it. */
  readiness?: () => { ready: boolean; waitingFor?: string };
  /** The largest create or update body (smaller than bodyLimitBytes): refused by its Content-Length unread. */
  specBodyLimitBytes?: number;
  /** One owner's creates and updates one at a time; absent: no such turn-taking. */
  writeGate?: OwnerWriteGate;
  /** Reads refused bodies at a bounded rate per owner; absent: node discards them at full speed. */
  refusedBodies?: RefusedBodyTarpit;
  /** Per-owner quotas (`GET quota`); absent: no quotas and no route. */
  quotas?: QuotaService;
  /** The usage ledger (`GET billing/endpoints`, RunPod's route); absent: no route. */
  usage?: UsageReader;
  /** The rates `GET quota` reports (the whole installation's, whatever this replica's share). */
  rates?: WireRates;
  /** Whether the database took this replica's last heartbeat, for `/healthz`; absent: not said. */
  databaseTookLastBeat?: () => boolean;
  /** The database's ping, for `/readyz`; absent: the database counts as answering. */
  ping?: () => Promise<void>;
  /** This replica and whether it leads now, for `/readyz`; absent: not said. */
  replica?: { id: string; leading: () => boolean };
  /** The replicas and the leader (`GET cluster`, admin only); absent: no route. */
  cluster?: ClusterService;
  /** The dashboard's built files, served at `/ui/`; absent: those routes say it is not built. */
  dashboard?: DashboardFiles;
  /** The GPU inventory, its holders and the waiting workers (`GET gpus`); absent: no route. */
  gpus?: GpuReportService;
  /** This machine's model cache and the endpoints naming each model (`GET models`); absent: no route. */
  models?: ModelsReport;
  /** The server's API keys (`GET apikeys`, `POST apikey/create|delete`, admin keys only); absent: no routes. */
  apiKeys?: ApiKeyService;
  /** Client connections' deadlines (config `connections.api`); absent: Fastify's and node's defaults. */
  clientDeadlines?: ClientDeadlines;
}

/** Fastify's server options for `deadlines`: node's head deadline, checked every second, and the keep-alive ones. */
function fastifyDeadlines(deadlines: ClientDeadlines | undefined) {
  if (deadlines === undefined) return {};
  return {
    http: {
      headersTimeout: deadlines.headersTimeoutMs,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    },
    keepAliveTimeout: deadlines.keepAliveTimeoutMs,
    maxRequestsPerSocket: deadlines.maxRequestsPerSocket,
  };
}

/** Builds the API without listening, so that tests drive it with inject() or listen on port 0. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    bodyLimit: options.bodyLimitBytes,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    ...fastifyDeadlines(options.clientDeadlines),
  });

  acceptJsonWhateverTheContentType(app);
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const answer = toApiError(error, request.routeOptions.bodyLimit ?? options.bodyLimitBytes);
    if (answer.code === 'DATABASE_UNAVAILABLE')
      request.log.warn({ url: request.url }, 'the database is unreachable');
    else if (answer.status >= 500) request.log.error({ err: error, url: request.url }, 'request failed');
    // RFC 9110 section 11.6.1: a 401 names the scheme it wants.
    if (answer.status === 401) reply.header('WWW-Authenticate', 'Bearer');
    if (answer.code === 'RATE_LIMITED')
      reply.header('Retry-After', String(answer.metadata.retryAfterSeconds));
    const contentLength = headerValue(request.headers['content-length']);
    const lingering = lingers(contentLength, options.bodyLimitBytes);
    if (answer.code === 'BODY_TOO_LARGE' && lingering) {
      // Fastify closes the connection after a 413 while the client may still be sending its body: the kernel then
      // resets it, and a client still writing sees a broken pipe instead of the answer. Kept alive, the rest of
      // the body is read and discarded, so the 413 reaches every client.
      reply.removeHeader('connection');
    }
    if (options.refusedBodies && TARPIT_REFUSALS.has(answer.code)) {
      // A repeated refusal is slowed per owner instead of taking the server's time (refused-body-tarpit.ts).
      const declared = Number(contentLength);
      const { delayMs, close } = chargeRefusal(options.refusedBodies, tarpitKey(request), request.raw, {
        lingering,
        declaredBytes: contentLength === undefined || !Number.isFinite(declared) ? undefined : declared,
      });
      if (close) reply.header('connection', 'close');
      if (delayMs > 0) await sleep(delayMs);
    }
    return reply.status(answer.status).send(answer.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new ApiError(
      'ROUTE_NOT_FOUND',
      `no operation ${request.method} ${request.url.split('?')[0]}`,
    );
    return reply.status(404).send(error.toBody());
  });
  observe(app, options.metrics);

  registerSystemRoutes(app, options);
  registerDashboard(app, options.dashboard);
  await app.register(
    async (api) => {
      api.decorateRequest('principal', null as unknown as Principal);
      api.addHook('onRequest', async (request) => {
        const principal = await options.authenticator.authenticate(
          request.headers.authorization,
          headerValue(request.headers['x-corral-owner']),
        );
        // Known before the rate limit answers, so that a refused body is charged to its owner (tarpitKey).
        request.principal = principal;
        const decision = options.rateLimiter.takeRequest(
          principal.keyId,
          headerValue(request.headers['content-length']),
          request.routeOptions.bodyLimit ?? options.bodyLimitBytes,
        );
        if (!decision.allowed) {
          throw new ApiError('RATE_LIMITED', `too many requests; retry in ${decision.retryAfterSeconds} s`, {
            retryAfterSeconds: decision.retryAfterSeconds,
          });
        }
      });
      registerEndpointRoutes(api, options);
      registerEndpointMetricsRoute(api, options);
      registerWorkerRoutes(api, options);
      registerCredentialRoutes(api, options);
      registerSecretRoutes(api, options);
      registerCatalogRoutes(api, options);
      registerInvokeKeyRoutes(api, options);
      registerWebhookSecretRoutes(api, options);
      if (options.ownerJobs) registerJobRoutes(api, options, options.ownerJobs);
      if (options.quotas) registerQuotaRoute(api, options.quotas, options.rates);
      if (options.cluster) registerClusterRoute(api, options.cluster);
      if (options.gpus) registerGpuRoute(api, options.gpus);
      if (options.models) registerModelRoutes(api, options.models);
      if (options.usage) registerBillingRoute(api, options.usage, systemClock);
      if (options.apiKeys) registerApiKeyRoutes(api, options.apiKeys);
    },
    { prefix: API_PREFIX },
  );
  return app;
}

/**
 * Clients of the original service send application/json, but curl's -d sends a form type: every body is
 * parsed as JSON, with __proto__ and constructor.prototype keys refused.
 */
function acceptJsonWhateverTheContentType(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      done(
        null,
        secureJson.parse(text, refuseUnstorable, { protoAction: 'error', constructorAction: 'error' }),
      );
    } catch (error) {
      done(
        new ApiError('INVALID_JSON', `the body is not valid JSON: ${(error as Error).message}`),
        undefined,
      );
    }
  });
}

/** A UTF-16 surrogate without its pair: JSON can escape one (`"\\ud800"`), but it is no character at all. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * PostgreSQL cannot store U+0000 in text nor read a lone surrogate in JSON (every query over an owner's stored
 * specs would then fail), and no client means to send either: both are refused at the edge.
 */
function refuseUnstorable(key: string, value: unknown): unknown {
  if (key.includes('\u0000') || (typeof value === 'string' && value.includes('\u0000'))) {
    throw new Error('strings must not contain the NUL character (\\u0000)');
  }
  if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
    throw new Error('strings must be valid Unicode (a \\ud800-\\udfff escape needs its pair)');
  }
  return value;
}

/**
 * Whether a request refused as too large is read to its end rather than cut off: only a declared length (a chunked
 * body has none), and at most LINGER_BODY_FACTOR times the limit, so that a client cannot make the server read
 * without end.
 */
function lingers(contentLength: string | undefined, limitBytes: number): boolean {
  const declared = Number(contentLength);
  return Number.isFinite(declared) && declared <= limitBytes * LINGER_BODY_FACTOR;
}

/** How far past the body limit a declared body is still read (and discarded) so that its 413 is read. */
const LINGER_BODY_FACTOR = 16;

/** Whose budget a refused body is read from: its owner's once authenticated, its remote address before. */
function tarpitKey(request: FastifyRequest): string {
  const principal = request.principal as Principal | null | undefined;
  return principal ? `owner:${principal.ownerId}` : `ip:${request.ip}`;
}

/** `limitBytes`: the body limit of the route asked for (create and update have a smaller one). */
function toApiError(error: FastifyError, limitBytes: number): ApiError {
  if (error instanceof ApiError) return error;
  if (isDatabaseUnavailable(error)) {
    // Reads and writes alike: what the API answers comes from the database, and nothing is served from memory.
    return new ApiError('DATABASE_UNAVAILABLE', 'the database cannot be reached now; retry shortly');
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new ApiError(
      'BODY_TOO_LARGE',
      `the body is larger than this server accepts here (${limitBytes} bytes)`,
      { limitBytes },
    );
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError('INVALID_FIELD', error.message);
  }
  return new ApiError('INTERNAL', 'internal error; the server log has the details');
}

function observe(app: FastifyInstance, metrics: ApiMetrics): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.duration.observe({ route }, reply.elapsedTime / 1000);
  });
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
