/**
 * The jobs side of `corral serve` (issue 22): the job service and its client routes (a `GatewayRoute` the gateway
 * puts in front of endpoints' URLs), the worker protocol's handler (served on the worker-facing listener), the
 * worker tokens (their key from the store, shared by replicas), the sweeper, and the variables a queue worker is
 * started with. Nothing listens here: app/worker-listener.ts serves `workerHandler`.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { RateLimiter } from '../api/rate-limit.js';
import type { JobsSettings, RateLimit } from '../config/config.js';
import { workerProtocolEnv } from '../contract/runpod-worker.js';
import { queueProbeResult } from '../controller/health/probe-result.js';
import type { EnvVar } from '../domain/endpoint.js';
import type { Quota } from '../domain/quota.js';
import type { GatewayMetrics } from '../gateway/metrics.js';
import { JobClientRoutes } from '../jobs/client-routes.js';
import { cachedEndpoints } from '../jobs/endpoint-cache.js';
import { sendFinishedToWebhooks } from '../jobs/finished-webhooks.js';
import { HttpDelivery } from '../jobs/http-delivery.js';
import { JobEvents } from '../jobs/job-events.js';
import { JobMetrics } from '../jobs/job-metrics.js';
import { JobService } from '../jobs/job-service.js';
import { JobSignals, withJobs } from '../jobs/job-signals.js';
import { JobSweeper } from '../jobs/job-sweeper.js';
import { ModelRouter } from '../jobs/model-router.js';
import { RunBodyParser } from '../jobs/run-body-parser.js';
import { Wakeups } from '../jobs/wakeups.js';
import { WorkerContacts } from '../jobs/worker-contacts.js';
import { WorkerDirectory } from '../jobs/worker-directory.js';
import { WorkerJobs } from '../jobs/worker-jobs.js';
import { recycleOnRequest } from '../jobs/worker-recycle.js';
import { workerRoutes } from '../jobs/worker-routes.js';
import { WorkerTokens } from '../jobs/worker-tokens.js';
import type { BudgetStandings } from '../ports/budgets.js';
import type { Clock, Timers } from '../ports/clock.js';
import type {
  LiveWorkerDirectory,
  ReconcileTrigger,
  WorkerFacingAddress,
} from '../ports/controller-ports.js';
import type { JobWebhooks } from '../ports/job-webhooks.js';
import { CallerKeys } from '../service/caller-keys.js';
import { DeliveryKeys, withDeliveryKeys } from '../service/delivery-keys.js';
import type { EndpointKeyGrant } from '../service/invoke-key-service.js';
import type { Store } from '../store/store.js';
import type { TrafficParts } from './build-traffic.js';

/** How often a long poll looks at the store again (another replica may have changed what it waits for). */
const RECHECK_MS = 500;
/** How often the sweeper runs. */
const SWEEP_INTERVAL_MS = 1_000;
/** How long the worker routes remember an endpoint (an update reaches them within this). */
const ENDPOINT_CACHE_MS = 1_000;
/** How long a replica that does not lead trusts the store's word on a worker (a removal reaches it within this). */
const DIRECTORY_CACHE_MS = 1_000;
/** How long a stop poll is held open. */
const STOP_HOLD_MS = 30_000;
/** How often the autoscaler's view of the job queues is read from the store. */
const SIGNALS_REFRESH_MS = 1_000;
/** How often this process writes one worker's last contact at most. */
const CONTACT_WRITE_MS = 2_000;
/** The name of the worker tokens' key in the store. */
const TOKEN_SECRET = 'worker-tokens';
/** The name of the secret of http jobs' delivery keys (one per endpoint), shared by replicas (a forwarded one). */
const DELIVERY_SECRET = 'gateway-job-deliveries';

export interface JobsParts {
  store: Store;
  settings: JobsSettings;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** The gateway's domain (its endpoints' Hosts are not the jobs API's). */
  domain: string;
  /** What a client key allows (the store's answer; the callers' cache and the delivery keys go in front). */
  verifyKey: (key: string) => Promise<EndpointKeyGrant | undefined>;
  /** The worker-facing listener's URL as workers reach it ('' until it listens). */
  workersAddress: WorkerFacingAddress;
  /**
   * The leading controller's live workers: a worker's state (frozen or suspended: it takes no job until it runs
   * again; draining: none more; null: its token no longer holds; undefined where this replica's controller does not
   * lead: the store's row says), and the running ones for `health`. Absent: every worker with a good token is taken
   * as serving, and `health` counts none.
   */
  directory?: LiveWorkerDirectory;
  /** Asks the controller for a pass (a worker to replace was marked). */
  trigger?: ReconcileTrigger;
  /** Jobs' webhooks (app/build-webhooks.ts): targets checked at `run`, a terminal status delivered. */
  webhooks?: JobWebhooks;
  /** This replica's part of the submission rate (several replicas split it); none: `settings.submissionRate`. */
  submissionRateShare?: () => RateLimit;
  /** The owner's quotas (service/quota-service.ts): its job quotas bound each submission; none: no job quota. */
  quotaOf?: (ownerId: string) => Promise<Quota>;
  /** Owners' budgets: a queued job of an owner past its budget says BUDGET_EXCEEDED in its status. */
  budgets?: BudgetStandings | undefined;
  /** This replica's id: the jobs of `http` endpoints it delivers are taken as `gateway:{replicaId}`. */
  replicaId: string;
  /** This replica's gateway URL on this host (http jobs go through it); undefined until it listens. */
  gatewayUrl: () => string | undefined;
  /** Where the jobs' metrics go (the registry `/metrics` serves); none: a registry of their own, never served. */
  registry?: Registry;
}

export interface Jobs {
  service: JobService;
  workers: WorkerJobs;
  events: JobEvents;
  /** The client routes, for the gateway's router. */
  clientRoute: JobClientRoutes;
  /** The model router (`/openai/v1/...` by the body's model), for the gateway's router, which it reroutes through. */
  modelRoute: ModelRouter;
  /** The worker protocol's handler, for the worker-facing listener (app/worker-listener.ts): false, not its route. */
  workerHandler: (req: IncomingMessage, res: ServerResponse) => boolean;
  tokens: WorkerTokens;
  /** Queued jobs as the autoscaler's signals (`withJobs` adds them to the gateway's). */
  signals: JobSignals;
  /** Queue workers' last polls and pings: their health. */
  contacts: WorkerContacts;
  /** Jobs in `/metrics` and the history: finished by outcome, retried, times, and the live counts. */
  metrics: JobMetrics;
  /** A worker ended (failed or removed): the jobs it held go back to the queue now. */
  workerEnded(workerId: string, reason: string): void;
  /** The protocol's variables for a queue endpoint's worker (the endpoint's own envs go after, and win). */
  protocolEnv(endpointId: string, workerId: string): EnvVar[];
  /**
   * The one cache of callers' key checks, for the jobs routes and the gateway's endpoint URLs, with the keys of this
   * side's deliveries of `http` jobs (one per endpoint, for its URL alone; no worker sees one).
   */
  callerKeys: CallerKeys;
  /** Starts the sweeper. */
  start(): void;
  close(): Promise<void>;
}

export async function buildJobs(parts: JobsParts): Promise<Jobs> {
  const { store, settings, clock } = parts;
  const logger = parts.logger.child({ role: 'jobs' });
  const { tokens, deliveryKeys, callerKeys } = await jobKeys(parts);
  const wakeups = new Wakeups({ timers: parts.timers, recheckMs: RECHECK_MS });
  const events = new JobEvents();
  const { signals, metrics, contacts } = jobReadings(parts, events, logger);
  const service = jobService(parts, { wakeups, events, signals, callerKeys });
  const directory = parts.directory && workerDirectory(parts, parts.directory);
  const workers = new WorkerJobs({
    jobs: store.jobs,
    clock,
    wakeups,
    events,
    maxAttempts: settings.maxAttempts,
    ...(directory ? { standing: (endpointId, workerId) => directory.standing(endpointId, workerId) } : {}),
    stream: settings.stream,
    logger,
  });
  if (parts.webhooks) sendFinishedToWebhooks({ events, webhooks: parts.webhooks, clock, logger });
  recycleOnRequest({ events, store, clock, trigger: parts.trigger, logger });
  const background = jobsBackground(parts, { wakeups, events, deliveryKeys }, logger);
  const runBodies = new RunBodyParser();
  return {
    service,
    workers,
    events,
    tokens,
    signals,
    contacts,
    metrics,
    callerKeys,
    clientRoute: clientRoutes(parts, service, runBodies, logger),
    modelRoute: new ModelRouter({ service, domain: parts.domain, logger }),
    workerHandler: workerRoutes({
      workers,
      tokens,
      findEndpoint: cachedEndpoints(async (id) => (await store.endpoints.getMany([id]))[0]?.endpoint, {
        clock,
        ttlMs: ENDPOINT_CACHE_MS,
      }),
      ...(directory ? { standing: (endpointId, workerId) => directory.check(endpointId, workerId) } : {}),
      logger,
      takeHoldMs: settings.takeHoldSeconds * 1000,
      stopHoldMs: STOP_HOLD_MS,
    }),
    workerEnded: (workerId, reason) => {
      void workers
        .workerEnded(workerId, reason)
        .catch((error: unknown) =>
          logger.warn(
            { workerId, err: error instanceof Error ? error.message : String(error) },
            'jobs of an ended worker not returned',
          ),
        );
    },
    protocolEnv: (endpointId, workerId) =>
      workerProtocolEnv({
        base: parts.workersAddress.url(),
        endpointId,
        workerId,
        token: tokens.issue(endpointId, workerId),
      }),
    start: () => {
      background.sweeper.start();
      signals.start();
      background.delivery.start();
    },
    close: async () => {
      await runBodies.close();
      await background.delivery.close();
      await background.sweeper.close();
      await signals.close();
      metrics.close();
    },
  };
}

/** The worker tokens' key and the delivery keys' secret, from the store (shared by replicas), and the callers' cache. */
async function jobKeys(parts: JobsParts) {
  const { store, clock } = parts;
  const secretOf = (name: string) =>
    store.serverSecrets.getOrCreate(name, () => randomBytes(32).toString('base64url'), clock());
  const tokens = new WorkerTokens({ secret: await secretOf(TOKEN_SECRET) });
  const deliveryKeys = new DeliveryKeys({ secret: await secretOf(DELIVERY_SECRET) });
  const callerKeys = callerKeyChecks({
    deliveryKeys,
    verifyKey: parts.verifyKey,
    store,
    clock,
    timers: parts.timers,
  });
  return { tokens, deliveryKeys, callerKeys };
}

/** What the jobs side reads of its queues: the autoscaler's signals, the metrics, the queue workers' contacts. */
function jobReadings(parts: JobsParts, events: JobEvents, logger: Logger) {
  const { store, clock, timers, settings } = parts;
  const signals = new JobSignals({
    jobs: store.jobs,
    events,
    clock,
    timers,
    logger,
    refreshMs: SIGNALS_REFRESH_MS,
  });
  // The jobs' metrics: counted from the events; the live counts are the signals' snapshot (no read of their own).
  const metrics = new JobMetrics({
    registry: parts.registry ?? new Registry(),
    events,
    live: () => signals.live(),
  });
  const contacts = new WorkerContacts({
    jobs: store.jobs,
    clock,
    logger,
    writeEveryMs: CONTACT_WRITE_MS,
    silentAfterMs: settings.lostAfterSeconds * 1000,
  });
  events.on('contact', ({ endpointId, workerId }) => contacts.seen(endpointId, workerId));
  return { signals, metrics, contacts };
}

/** The job service: submissions, status, cancel, `health` (with the controller's running workers). */
function jobService(
  parts: JobsParts,
  core: { wakeups: Wakeups; events: JobEvents; signals: JobSignals; callerKeys: CallerKeys },
): JobService {
  const { store, settings } = parts;
  return new JobService({
    jobs: store.jobs,
    clock: parts.clock,
    wakeups: core.wakeups,
    events: core.events,
    findEndpoints: (ref, reach, limit) => store.endpoints.matching(ref, reach, limit),
    findModelEndpoints: (reach, limit) => store.endpoints.withOpenAIModel(reach, limit),
    keys: core.callerKeys,
    retention: { asyncMs: settings.retentionSeconds * 1000, syncMs: settings.syncRetentionSeconds * 1000 },
    workerCounts: (endpointId) => {
      const running = parts.directory?.runningWorkers(endpointId) ?? [];
      const busy = core.signals.signal(endpointId, () => true)?.inProgress ?? {};
      return { idle: running.filter((id) => !busy[id]).length, running: running.length };
    },
    ...(parts.webhooks ? { webhooks: parts.webhooks } : {}),
    ...(parts.quotaOf ? { quotaOf: parts.quotaOf } : {}),
    streamReadBytes: settings.stream.readBytes,
  });
}

/** Where a worker stands: the leading controller's word, else the store's row (cached briefly). */
function workerDirectory(parts: JobsParts, live: LiveWorkerDirectory): WorkerDirectory {
  const { store } = parts;
  return new WorkerDirectory({
    controllerState: (endpointId, workerId) => live.workerState(endpointId, workerId),
    storedWorker: async (workerId) => {
      const worker = await store.workers.get(workerId);
      return worker && { endpointId: worker.endpointId, state: worker.status.state };
    },
    clock: parts.clock,
    storeCacheMs: DIRECTORY_CACHE_MS,
  });
}

/** The client routes (`/v2/...`), with the API's rate limiter over submissions (one cost rule), per owner. */
function clientRoutes(parts: JobsParts, service: JobService, runBodies: RunBodyParser, logger: Logger) {
  const { clock } = parts;
  return new JobClientRoutes({
    service,
    clock,
    domain: parts.domain,
    logger,
    ...(parts.budgets ? { budgets: parts.budgets } : {}),
    submissions: new RateLimiter({
      ...parts.settings.submissionRate,
      clock,
      ...(parts.submissionRateShare ? { share: parts.submissionRateShare } : {}),
    }),
    runBodies,
  });
}

/** What runs from `start`: http jobs' delivery through this replica's gateway, and the sweeper. */
function jobsBackground(
  parts: JobsParts,
  core: { wakeups: Wakeups; events: JobEvents; deliveryKeys: DeliveryKeys },
  logger: Logger,
) {
  const { store, settings, clock, timers } = parts;
  const { wakeups, events, deliveryKeys } = core;
  const delivery = new HttpDelivery({
    jobs: store.jobs,
    events,
    wakeups,
    clock,
    timers,
    logger,
    deliveryWorkerId: `gateway:${parts.replicaId}`,
    findEndpoint: async (id) => (await store.endpoints.getMany([id]))[0]?.endpoint,
    gateway: () => {
      const url = parts.gatewayUrl();
      return url === undefined ? undefined : { url, keyFor: (endpointId) => deliveryKeys.keyFor(endpointId) };
    },
    scanMs: SWEEP_INTERVAL_MS,
    keepAliveMs: Math.max(1_000, (settings.lostAfterSeconds * 1000) / 3),
    stopCheckMs: RECHECK_MS,
    backstopMs: settings.stopGraceSeconds * 1000,
    maxAttempts: settings.maxAttempts,
  });
  const sweeper = new JobSweeper({
    jobs: store.jobs,
    clock,
    timers,
    wakeups,
    events,
    logger,
    intervalMs: SWEEP_INTERVAL_MS,
    lostAfterMs: settings.lostAfterSeconds * 1000,
    stopGraceMs: settings.stopGraceSeconds * 1000,
    maxAttempts: settings.maxAttempts,
  });
  return { delivery, sweeper };
}

/**
 * `corral serve`'s one cache of callers' key checks: a delivery key grants its one endpoint (of that endpoint's
 * owner), any other key is `verifyKey`'s to answer.
 */
export function callerKeyChecks(parts: {
  deliveryKeys: DeliveryKeys;
  verifyKey: (key: string) => Promise<EndpointKeyGrant | undefined>;
  store: Store;
  clock: Clock;
  timers: Timers;
}): CallerKeys {
  const { store } = parts;
  return new CallerKeys({
    verify: withDeliveryKeys(
      parts.deliveryKeys,
      parts.verifyKey,
      async (endpointId) => (await store.endpoints.getMany([endpointId]))[0]?.endpoint.ownerId,
    ),
    clock: parts.clock,
    timers: parts.timers,
  });
}

/** What the traffic side takes of the jobs side: routes, signals, a queue worker's env and health. */
export function jobsForTraffic(jobs: Jobs): NonNullable<TrafficParts<GatewayMetrics>['jobs']> {
  return {
    routes: [jobs.modelRoute, jobs.clientRoute],
    callerKeys: jobs.callerKeys,
    signals: (signals) => withJobs(signals, jobs.signals),
    protocolEnv: jobs.protocolEnv,
    workerEnded: (_endpointId, workerId, reason) => jobs.workerEnded(workerId, reason),
    history: {
      counters: (exists) => jobs.metrics.counters(exists),
      live: () => jobs.metrics.live(),
    },
    queueProbe: async (_endpointId, workerId) => queueProbeResult(await jobs.contacts.verdict(workerId)),
  };
}
