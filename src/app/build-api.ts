/**
 * The API with every service wired, not listening: `corral serve` listens on it, tests use it with inject() or
 * listen on port 0. `apiServices` builds the services the API shares with the traffic side.
 */

import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type ApiCatalog, buildApp } from '../api/app.js';
import { Authenticator } from '../api/auth.js';
import { loadDashboard } from '../api/dashboard.js';
import { EndpointLinks } from '../api/links.js';
import { ApiMetrics } from '../api/metrics.js';
import { OwnerWriteGate } from '../api/owner-write-gate.js';
import { BYTES_PER_TOKEN, RateLimiter, type RateLimits } from '../api/rate-limit.js';
import { REFUSED_BODY_TARPIT, RefusedBodyTarpit } from '../api/refused-body-tarpit.js';
import type {
  DesiredSource,
  HistorySource,
  OtherReplicasSource,
  TrafficSource,
} from '../api/routes/endpoint-metrics.js';
import type { ModelsReport } from '../api/routes/models.js';
import type { WorkerInsight } from '../api/routes/workers.js';
import { HEARTBEAT_INTERVAL_MS } from '../cluster/heartbeat.js';
import type { Config } from '../config/config.js';
import { validationError } from '../contract/errors.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { quotaFor } from '../domain/quota.js';
import { type Gpu, supportedCudaVersions } from '../gpu/inventory.js';
import {
  productCatalog,
  scheduledCatalog,
  scheduledCudaVersions,
  scheduledGpuRange,
} from '../gpu/products.js';
import { type Clock, systemClock } from '../ports/clock.js';
import type { JobActions } from '../ports/job-actions.js';
import type { ModelCache } from '../ports/model-cache.js';
import type { UsageReader } from '../ports/usage.js';
import type { GpuScheduler } from '../runtime/types.js';
import type { Readiness } from '../runtime/waiting-runtime.js';
import { ApiKeyService } from '../service/api-key-service.js';
import { BudgetService } from '../service/budget-service.js';
import { ClusterService } from '../service/cluster-service.js';
import { CredentialService } from '../service/credential-service.js';
import { EndpointService, type ImageAccessCheck } from '../service/endpoint-service.js';
import { type GpuInventorySource, GpuReportService } from '../service/gpu-report.js';
import { randomIds } from '../service/ids.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';
import { ModelAccess } from '../service/model-access.js';
import { ModelPulls } from '../service/model-pulls.js';
import { QuotaService } from '../service/quota-service.js';
import { SecretService } from '../service/secret-service.js';
import { WebhookSecretService } from '../service/webhook-secret-service.js';
import { WorkerService } from '../service/worker-service.js';
import type { Store } from '../store/store.js';
import { LedgerReader } from '../usage/ledger-reader.js';

/** Where `npm run build` puts the dashboard: dist/web, the same folder seen from dist/app/ or src/app/. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../dist/web/', import.meta.url));

export interface ApiParts {
  config: Config;
  store: Store;
  /** The usage ledger's reader (the billing route), the one the budgets read; absent: one of its own. */
  usage?: UsageReader;
  gpus: Gpu[];
  logger: Logger;
  clock?: Clock;
  secrets: SecretBox;
  /** GPUs held by workers now (for products' gpusFree); none where no controller runs. */
  busyGpus?: () => ReadonlySet<string>;
  /** Where the runtime's scheduler places workers (kubernetes): the products and CUDA versions are its, not `gpus`'. */
  gpuScheduler?: GpuScheduler;
  insight?: WorkerInsight;
  /** An endpoint's traffic through this process's gateway (`GET endpoint/metrics`); none without a gateway. */
  traffic?: TrafficSource;
  /** With several replicas: the other replicas' queued and in-flight requests, added to `traffic`'s; and this one. */
  otherReplicas?: OtherReplicasSource;
  /** Each endpoint's history (`GET endpoint/metrics/history`, the dashboard's charts); none without a gateway. */
  history?: HistorySource;
  /** The autoscaler's desired worker count of an endpoint (`endpoint/metrics`); none without a controller. */
  desiredWorkers?: DesiredSource;
  /** Where /metrics reads from; one registry for every role of this process. */
  registry?: Registry;
  /** Told after every endpoint change and worker drain (the controller's poke, in `corral serve`). */
  onEndpointsChanged?: (endpointId?: string) => void;
  /**
   * The bound addresses, read when a link is made (port 0 in the configuration means "any free port"): the API's
   * URL from its own server (listening or not yet), the gateway's port.
   */
  bound?: { apiUrl: (server: Server) => string; gatewayPort: () => number };
  /** Whether an owner may run an image, asked at create/update; none: the pull alone decides. */
  imageAccess?: ImageAccessCheck;
  /** Workers run as host processes (the local runtime): only admin keys may create or change endpoints. */
  singleTenant?: boolean;
  /** The machine's model cache (issue 34): endpoints' models are checked on its hub at create and update; none: refused. */
  modelCache?: ModelCache;
  /** Why the runtime has no idle tiers (runtime/idle-tiers.ts): keepFrozen and keepSuspended above 0 are refused. */
  idleTiersOff?: string;
  /** Why queue endpoints' workers could not reach the worker-facing listener: such endpoints are refused. */
  queueOff?: string;
  /** Whether workers can run now, for `/healthz` (always, when absent). */
  readiness?: () => Readiness;
  /** Whether the database took this replica's last heartbeat (`/healthz`); absent: not said. */
  databaseTookLastBeat?: () => boolean;
  /** This replica and whether it leads, for `/readyz` and `GET cluster` (docs/operations.md). */
  replica?: { id: string; leading: () => boolean };
  /** The folder of the dashboard's built files; absent: DASHBOARD_DIR (none there: its routes say so). */
  dashboardDir?: string;
  /** The GPUs and who holds them (`GET gpus`); absent: `gpus` with no worker (no controller in this process). */
  gpuInventory?: GpuInventorySource;
  /** The model cache and who names each model (`GET models`, docs/models.md); absent: no route. */
  models?: ModelsReport;
  /** This replica's share of the per-key rate limit now (several replicas); absent: the configured limit. */
  rateLimitShare?: () => RateLimits;
  /** Cancel and retry of an owner's job through the jobs core (`app/job-actions.ts`); absent: those routes are not served. */
  jobActions?: JobActions;
  /** The services `corral serve` shares with the traffic side (each built once); absent: built here. */
  services?: ApiServices;
}

/** The services the API shares with the rest of the process: quotas, registry credentials, secrets, invoke keys. */
export interface ApiServices {
  quotas: QuotaService;
  credentials: CredentialService;
  ownerSecrets: SecretService;
  invokeKeys: InvokeKeyService;
  /** Endpoints' webhook secrets: the owner's routes, and the webhook outbox's signing. */
  webhookSecrets: WebhookSecretService;
  /** Owners' budgets over the usage ledger (`GET quota`, the controller, the gateway, the jobs); absent: none. */
  budgets?: BudgetService;
}

/** Builds the shared services once; quotas not configured follow the GPU inventory or the scheduler's GPUs. */
export function apiServices(options: {
  config: Pick<Config, 'quotas' | 'budgets'>;
  store: Store;
  gpus: Gpu[];
  secrets: SecretBox;
  clock?: Clock;
  gpuScheduler?: GpuScheduler | undefined;
  /** The usage ledger's reader: with budgets configured, they are read from it. */
  usage?: UsageReader | undefined;
  /** A budget read that failed (logged by the caller). */
  onBudgetReadError?: (error: unknown, ownerId: string) => void;
}): ApiServices {
  const { config, store, gpus, secrets, gpuScheduler, usage } = options;
  const clock = options.clock ?? systemClock;
  // Half the GPUs for minNum, four times for maxNum (domain/quota.ts), of the inventory or the scheduler's nodes.
  const gpuCount = gpuScheduler
    ? () => gpuScheduler.products().reduce((sum, p) => sum + p.gpusTotal, 0)
    : () => gpus.length;
  const budgets =
    usage === undefined
      ? undefined
      : new BudgetService({
          usage,
          settings: config.budgets,
          clock,
          isOperator: (ownerId) => store.apiKeys.holdsAdmin(ownerId),
          ...(options.onBudgetReadError ? { onReadError: options.onBudgetReadError } : {}),
        });
  const quotas = new QuotaService({
    store,
    quotaFor: (ownerId, operator) => quotaFor(ownerId, gpuCount(), config.quotas, operator),
    ...(budgets?.configured ? { budgets } : {}),
  });
  return {
    ...(budgets?.configured ? { budgets } : {}),
    quotas,
    credentials: new CredentialService({ store, clock, ids: randomIds, secrets, quotas }),
    ownerSecrets: new SecretService({ store, clock, secrets, quotas }),
    invokeKeys: new InvokeKeyService({ store, clock, quotas }),
    webhookSecrets: new WebhookSecretService({ store, clock, secrets }),
  };
}

/** The API with every service wired, not listening (tests use it with inject() or listen on port 0). */
export async function buildApi(parts: ApiParts): Promise<FastifyInstance> {
  const { config, store, gpus, logger, secrets } = parts;
  const clock = parts.clock ?? systemClock;
  const catalog = apiCatalog(parts);
  const services =
    parts.services ?? apiServices({ config, store, gpus, secrets, clock, gpuScheduler: parts.gpuScheduler });
  const { quotas } = services;
  const { bound } = parts;
  // The links read the API's URL from its own server: with port 0, the port is known once it listens.
  const app: FastifyInstance = await buildApp({
    logger,
    authenticator: new Authenticator({ store, clock }),
    rateLimiter: new RateLimiter({
      ...config.rateLimit,
      clock,
      ...(parts.rateLimitShare ? { share: parts.rateLimitShare } : {}),
    }),
    // At most 16 of one owner's creates and updates wait their turn; more are answered 429 at once.
    writeGate: new OwnerWriteGate({ maxWaiting: 16 }),
    refusedBodies: new RefusedBodyTarpit({ ...REFUSED_BODY_TARPIT, clock }),
    endpoints: endpointService(parts, services, catalog, clock),
    credentials: services.credentials,
    quotas,
    rates: {
      api: { ...config.rateLimit, per: 'key', bytesPerToken: BYTES_PER_TOKEN },
      jobSubmissions: { ...config.jobs.submissionRate, per: 'owner', bytesPerToken: BYTES_PER_TOKEN },
    },
    invokeKeys: services.invokeKeys,
    webhookSecrets: services.webhookSecrets,
    ownerJobs: { reads: store.jobs, clock, ...(parts.jobActions ? { actions: parts.jobActions } : {}) },
    ownerSecrets: services.ownerSecrets,
    events: store.events,
    workers: store.workers,
    workerOutputs: store.workerOutputs,
    jobCounts: async (endpointId) => {
      const counts = await store.jobs.counts(endpointId);
      return { inQueue: counts.IN_QUEUE, inProgress: counts.IN_PROGRESS };
    },
    workerService: new WorkerService({
      store,
      clock,
      ...(parts.onEndpointsChanged ? { onChanged: parts.onEndpointsChanged } : {}),
    }),
    ...(parts.insight ? { insight: parts.insight } : {}),
    ...(parts.traffic ? { traffic: parts.traffic } : {}),
    ...(parts.otherReplicas ? { otherReplicas: parts.otherReplicas } : {}),
    ...(parts.history ? { history: parts.history } : {}),
    ...(parts.desiredWorkers ? { desiredWorkers: parts.desiredWorkers } : {}),
    catalog,
    links: new EndpointLinks({
      domain: config.domain,
      gatewayPort: bound?.gatewayPort ?? (() => config.gatewayAddr.port),
      publicUrl: config.publicUrl,
      apiUrl: bound ? () => bound.apiUrl(app.server) : () => config.apiUrl,
    }),
    metrics: new ApiMetrics(parts.registry ? { registry: parts.registry } : {}),
    bodyLimitBytes: config.bodyLimitBytes,
    clientDeadlines: config.connections.api,
    ...(config.metricsToken === undefined ? {} : { metricsToken: config.metricsToken }),
    ...(parts.readiness ? { readiness: parts.readiness } : {}),
    ...(parts.databaseTookLastBeat ? { databaseTookLastBeat: parts.databaseTookLastBeat } : {}),
    specBodyLimitBytes: config.specBodyLimitBytes,
    ping: () => store.ping(),
    ...(parts.replica ? { replica: parts.replica, cluster: clusterService(store, parts.replica.id) } : {}),
    dashboard: loadDashboard(parts.dashboardDir ?? DASHBOARD_DIR),
    gpus: new GpuReportService({
      source: parts.gpuInventory ?? { snapshot: () => ({ gpus, workers: [], held: new Map() }) },
      store,
    }),
    apiKeys: new ApiKeyService({ store, clock }),
    ...(parts.models ? { models: withPulls(parts.models, parts.modelCache, services, clock, logger) } : {}),
    usage: parts.usage ?? new LedgerReader({ segments: store.usageSegments, prices: config.usage, clock }),
  });
  return app;
}

/** The GPU products, limits and storages endpoints are checked against: the scheduler's, else the inventory's. */
function apiCatalog(parts: ApiParts): ApiCatalog {
  const { config, gpus, gpuScheduler } = parts;
  const inventoryLimits = { ...config.limits, cudaVersions: supportedCudaVersions(gpus) };
  const products = gpuScheduler
    ? () => scheduledCatalog(gpuScheduler.products(), config.products)
    : () => productCatalog(gpus, config.products, parts.busyGpus?.() ?? new Set());
  return {
    limits: gpuScheduler
      ? () => {
          const scheduled = gpuScheduler.products();
          return {
            ...config.limits,
            gpus: scheduledGpuRange(scheduled, config.limits.gpus),
            cudaVersions: scheduledCudaVersions(scheduled, config.kubernetes.cudaVersion),
          };
        }
      : () => inventoryLimits,
    products,
    productIds: () => new Set(products().map((p) => p.id)),
    networkStorages: new Map(config.networkStorages.map((s) => [s.id, s.clusterId])),
    storageOwners: new Map(config.networkStorages.map((s) => [s.id, s.owners])),
    ...(parts.idleTiersOff === undefined ? {} : { idleTiersOff: parts.idleTiersOff }),
    ...(parts.queueOff === undefined ? {} : { queueOff: parts.queueOff }),
  };
}

/** Endpoints' create, update and delete, with quotas, the image check, the models' check on the hub. */
function endpointService(parts: ApiParts, services: ApiServices, catalog: ApiCatalog, clock: Clock) {
  return new EndpointService({
    store: parts.store,
    catalog,
    clock,
    ids: randomIds,
    toValidationError: validationError,
    quotas: services.quotas,
    ...(parts.onEndpointsChanged ? { onChanged: parts.onEndpointsChanged } : {}),
    ...(parts.imageAccess ? { imageAccess: parts.imageAccess } : {}),
    ...(parts.singleTenant ? { singleTenant: true } : {}),
    secretSizes: (ownerId, names) => services.ownerSecrets.sizes(ownerId, names),
    ...(parts.modelCache
      ? {
          models: new ModelAccess({
            cache: parts.modelCache,
            secretValue: (ownerId, name) => services.ownerSecrets.value(ownerId, name),
          }),
        }
      : {}),
  });
}

/** The replicas as `GET cluster` lists them: one is stale after three missed heartbeats. */
function clusterService(store: Store, self: string): ClusterService {
  return new ClusterService({ store, self, staleAfterMs: 3 * HEARTBEAT_INTERVAL_MS });
}

/** `POST models` and `DELETE models/...` beside `GET models` when there is a cache to pull into (none: GET only). */
function withPulls(
  report: ModelsReport,
  cache: ModelCache | undefined,
  services: ApiServices,
  clock: () => number,
  logger: Logger,
): ModelsReport {
  if (!cache) return report;
  const pulls = new ModelPulls({
    cache,
    machines: report.machines,
    secretValue: (ownerId, name) => services.ownerSecrets.value(ownerId, name),
    users: () => report.users(null),
    toValidationError: (issues) => validationError(issues, (field) => field),
    clock,
    logger: logger.child({ component: 'model-pulls' }),
  });
  return { ...report, pulls };
}
