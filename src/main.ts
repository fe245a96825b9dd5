/**
 * Composition root: the only place where the parts are built and connected (`buildApi`, `buildTraffic`), and
 * `serve`, which opens the store, makes sure an API key exists, and listens.
 */
import type { Server } from 'node:http';
import { hostname, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { type ApiCatalog, buildApp } from './api/app.js';
import { Authenticator } from './api/auth.js';
import { loadDashboard } from './api/dashboard.js';
import { EndpointLinks } from './api/links.js';
import { ApiMetrics } from './api/metrics.js';
import { OwnerWriteGate } from './api/owner-write-gate.js';
import { RateLimiter, type RateLimits } from './api/rate-limit.js';
import { REFUSED_BODY_TARPIT, RefusedBodyTarpit } from './api/refused-body-tarpit.js';
import type {
  DesiredSource,
  HistorySource,
  OtherReplicasSource,
  TrafficSource,
} from './api/routes/endpoint-metrics.js';
import type { WorkerInsight } from './api/routes/workers.js';
import { ScalerMetrics } from './autoscaler/metrics.js';
import type { QueueSignals } from './autoscaler/queue-signals.js';
import { Scaler } from './autoscaler/scaler.js';
import type { TermFence } from './cluster/elector.js';
import { FencedRuntime } from './cluster/fenced-runtime.js';
import {
  gatewayLoad,
  HEARTBEAT_INTERVAL_MS,
  HEARTBEAT_PRUNE_AFTER_MS,
  Heartbeat,
} from './cluster/heartbeat.js';
import { leadershipOf } from './cluster/leadership.js';
import { SharedTraffic } from './cluster/shared-traffic.js';
import { rateLimitShare } from './cluster/shares.js';
import { replicaGpus, STORED_GPUS_INTERVAL_MS, StoredGpus } from './cluster/stored-gpus.js';
import { advertisedGatewayUrl, type Config, formatHostPort, type ListenerLimits } from './config/config.js';
import { createDatabaseFile, secureDataDir, type TightenedMode } from './config/data-dir.js';
import { ConfigError } from './config/settings.js';
import { databaseError, listenError } from './config/startup.js';
import { validationError } from './contract/errors.js';
import { Controller, type ControllerOptions } from './controller/controller.js';
import { httpProbe } from './controller/http-probe.js';
import { ControllerMetrics } from './controller/metrics.js';
import { OutputKeeper } from './controller/output-keeper.js';
import { RoutingTable } from './controller/routing-table.js';
import { inventoryPlacement, schedulerPlacement } from './controller/worker-placement.js';
import { workerMemoryGBPerGpu } from './controller/worker-spec.js';
import { loadSecretKey, SecretBox } from './crypto/secret-box.js';
import { quotaFor } from './domain/quota.js';
import { ClusterHistory } from './gateway/cluster-history.js';
import { Gateway, type GatewayForwarding } from './gateway/gateway.js';
import { TrafficHistory } from './gateway/history.js';
import { GatewayMetrics } from './gateway/metrics.js';
import { WorkerPools } from './gateway/pools.js';
import { createGatewayServer } from './gateway/server.js';
import { detectGpus } from './gpu/detect.js';
import { type Gpu, simulatedInventory, supportedCudaVersions } from './gpu/inventory.js';
import { productCatalog, scheduledCatalog, scheduledCudaVersions } from './gpu/products.js';
import { fitConnections } from './listeners/connection-budget.js';
import { guardConnections } from './listeners/connection-guard.js';
import { raiseFileLimit } from './listeners/file-limit.js';
import { ImageAccessGuard } from './registry/image-access-guard.js';
import { registryManifestCheck } from './registry/manifest-check.js';
import { runtimeReadiness, runtimeReady, selectRuntime } from './runtime/select.js';
import type { GpuScheduler, WorkerRuntime } from './runtime/types.js';
import type { Readiness } from './runtime/waiting-runtime.js';
import { ApiKeyService, MIN_OPERATOR_KEY_LENGTH } from './service/api-key-service.js';
import { type Clock, systemClock, systemTimers } from './service/clock.js';
import { ClusterService } from './service/cluster-service.js';
import { CredentialService } from './service/credential-service.js';
import { EndpointService, type ImageAccessCheck } from './service/endpoint-service.js';
import { type GpuInventorySource, GpuReportService } from './service/gpu-report.js';
import { newInstallationId, newReplicaId, randomIds } from './service/ids.js';
import { InvokeKeyService } from './service/invoke-key-service.js';
import { QuotaService } from './service/quota-service.js';
import { SecretService } from './service/secret-service.js';
import { endpointsOfNonAdminOwners } from './service/tenant-endpoints.js';
import { WorkerService } from './service/worker-service.js';
import { openStore, sqliteFileOf } from './store/open.js';
import { lockSqliteDatabase, type ProcessLock } from './store/sqlite/process-lock.js';
import type { Store } from './store/store.js';

/** How often the SQLite WAL is checkpointed, off the event loop (store/sqlite/checkpointer.ts). */
const SQLITE_CHECKPOINT_INTERVAL_MS = 1000;

/** Where `npm run build` puts the dashboard: dist/web, the same folder seen from dist/main.js or src/main.ts. */
export const DASHBOARD_DIR = fileURLToPath(new URL('../dist/web/', import.meta.url));

export interface ApiParts {
  config: Config;
  store: Store;
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
  onEndpointsChanged?: () => void;
  /** The bound addresses, once known (port 0 in the configuration means "any free port"). */
  bound?: { apiUrl: () => string; gatewayPort: () => number };
  /** Whether an owner may run an image, asked at create/update; none: the pull alone decides. */
  imageAccess?: ImageAccessCheck;
  /** Workers run as host processes (the local runtime): only admin keys may create or change endpoints. */
  singleTenant?: boolean;
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
  /** This replica's share of the per-key rate limit now (several replicas); absent: the configured limit. */
  rateLimitShare?: () => RateLimits;
}

/** The API with every service wired, not listening (tests use it with inject() or listen on port 0). */
export async function buildApi(parts: ApiParts): Promise<FastifyInstance> {
  const { config, store, gpus, logger, secrets } = parts;
  const clock = parts.clock ?? systemClock;
  const { gpuScheduler } = parts;
  const inventoryLimits = { ...config.limits, cudaVersions: supportedCudaVersions(gpus) };
  const networkStorages = new Map(config.networkStorages.map((s) => [s.id, s.clusterId]));
  const storageOwners = new Map(config.networkStorages.map((s) => [s.id, s.owners]));
  const products = gpuScheduler
    ? () => scheduledCatalog(gpuScheduler.products(), config.products)
    : () => productCatalog(gpus, config.products, parts.busyGpus?.() ?? new Set());
  const catalog: ApiCatalog = {
    limits: gpuScheduler
      ? () => ({
          ...config.limits,
          cudaVersions: scheduledCudaVersions(gpuScheduler.products(), config.kubernetes.cudaVersion),
        })
      : () => inventoryLimits,
    products,
    productIds: () => new Set(products().map((p) => p.id)),
    networkStorages,
    storageOwners,
  };
  // Quotas not configured follow the GPU inventory, or the scheduler's GPUs (half for minNum, four times for maxNum).
  const gpuCount = gpuScheduler
    ? () => gpuScheduler.products().reduce((sum, p) => sum + p.gpusTotal, 0)
    : () => gpus.length;
  const quotas = new QuotaService({
    store,
    quotaFor: (ownerId, operator) => quotaFor(ownerId, gpuCount(), config.quotas, operator),
  });
  const ownerSecrets = new SecretService({ store, clock, secrets, quotas });
  return buildApp({
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
    endpoints: new EndpointService({
      store,
      catalog,
      clock,
      ids: randomIds,
      toValidationError: validationError,
      quotas,
      ...(parts.onEndpointsChanged ? { onChanged: parts.onEndpointsChanged } : {}),
      ...(parts.imageAccess ? { imageAccess: parts.imageAccess } : {}),
      ...(parts.singleTenant ? { singleTenant: true } : {}),
      secretSizes: (ownerId, names) => ownerSecrets.sizes(ownerId, names),
    }),
    credentials: new CredentialService({ store, clock, ids: randomIds, secrets, quotas }),
    quotas,
    invokeKeys: new InvokeKeyService({ store, clock, quotas }),
    ownerSecrets,
    events: store.events,
    workers: store.workers,
    workerOutputs: store.workerOutputs,
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
      gatewayPort: parts.bound?.gatewayPort ?? (() => config.gatewayAddr.port),
      publicUrl: config.publicUrl,
      apiUrl: parts.bound?.apiUrl ?? (() => config.apiUrl),
    }),
    metrics: new ApiMetrics(parts.registry ? { registry: parts.registry } : {}),
    bodyLimitBytes: config.bodyLimitBytes,
    clientDeadlines: config.connections.api,
    ...(config.metricsToken === undefined ? {} : { metricsToken: config.metricsToken }),
    ...(parts.readiness ? { readiness: parts.readiness } : {}),
    ...(parts.databaseTookLastBeat ? { databaseTookLastBeat: parts.databaseTookLastBeat } : {}),
    specBodyLimitBytes: config.specBodyLimitBytes,
    ping: () => store.ping(),
    ...(parts.replica
      ? {
          replica: parts.replica,
          cluster: new ClusterService({
            store,
            self: parts.replica.id,
            staleAfterMs: 3 * HEARTBEAT_INTERVAL_MS,
          }),
        }
      : {}),
    dashboard: loadDashboard(parts.dashboardDir ?? DASHBOARD_DIR),
    gpus: new GpuReportService({
      source: parts.gpuInventory ?? { snapshot: () => ({ gpus, workers: [], held: new Map() }) },
      store,
    }),
    apiKeys: new ApiKeyService({ store, clock }),
  });
}

export interface TrafficParts<M extends GatewayMetrics> {
  config: Pick<Config, 'domain' | 'gateway' | 'controller' | 'limits' | 'networkStorages'> &
    Partial<Pick<Config, 'workers' | 'history' | 'connections'>>;
  store: Store;
  runtime: WorkerRuntime;
  gpus: Gpu[];
  logger: Logger;
  /** Where the controller's and the gateway's metrics go; one registry for every role of this process. */
  registry: Registry;
  clock?: Clock;
  /** Registry credentials for an image pull, by owner and authId (none: every image is pulled anonymously). */
  revealCredentials?: ControllerOptions['revealCredentials'];
  /** Whether the owner may run the image, before each worker start; none: the pull alone decides. */
  imageAccess?: ControllerOptions['imageAccess'];
  /** This installation's id, labelled on every worker (none: the controller takes every managed worker as its own). */
  installationId?: string;
  /** Resolves `{{ CORRAL_SECRET_name }}` in a starting worker's env (none: env values as written). */
  resolveEnv?: ControllerOptions['resolveEnv'];
  /** The gateway's metrics object (a benchmark records more than `GatewayMetrics` does). */
  gatewayMetrics?: (options: { registry: Registry }) => M;
  /** The autoscaler's metrics object (a benchmark records each decision). */
  scalerMetrics?: (options: { registry: Registry }) => ScalerMetrics;
  /** Several replicas: the table the gateway routes by, filled from the store (none: the controller's own). */
  gatewayRoutes?: RoutingTable;
  /** Several replicas: the scaler's signals over this gateway's (none: this gateway's alone). */
  signals?: (local: QueueSignals) => QueueSignals;
  /** Several replicas: also waits for the other gateways' requests on a worker before its removal. */
  remoteDrained?: (endpointId: string, workerId: string, timeoutMs: number) => Promise<void>;
  /** Several replicas: where the gateway forwards what it holds no slot for (its own pools to the others). */
  forwarding?: Omit<GatewayForwarding, 'pools'>;
}

/** The worker and traffic side of `corral serve`, built and connected; nothing listens or runs until `start`. */
export interface Traffic<M extends GatewayMetrics> {
  /** The controller of the term under way (with one process, the one `start` starts). */
  readonly controller: Controller;
  gateway: Gateway;
  scaler: Scaler;
  /** The endpoints and routable workers the controller publishes and the gateway routes by. */
  routes: RoutingTable;
  gatewayMetrics: M;
  /** Each endpoint's samples for the dashboard's charts; none where `config.history` is absent or keeps none. */
  history: TrafficHistory | undefined;
  /** The gateway's HTTP server (requests and upgrades), not listening: the caller picks the address. */
  server: Server;
  /** Starts the controller's loop (one process: it always leads). */
  start(): void;
  /** Asks the running controller for a pass; nothing while none runs (a replica that does not lead). */
  poke(): void;
  /** A term begins (several replicas): a fresh controller, fenced by `fence`, runs until `stepDown`. */
  lead(fence: TermFence): Promise<void>;
  /** The term is over: the controller stops; its successor starts from what the runtime and the store say. */
  stepDown(): Promise<void>;
  /** Stops the gateway (queued requests get 503), its server and connections, and the controller. */
  close(): Promise<void>;
}

/**
 * The traffic side, built in dependency order with no part referring to one built after it: the routing table
 * (the controller writes it, the gateway reads it and asks it for a fresh look), the gateway (its queues are the
 * autoscaler's signals), the scaler (asked by the controller how many workers each endpoint wants and which go;
 * it asks the controller for a pass when a request queues), and the controller (waits for the gateway to drain a
 * worker before removing it).
 */
export function buildTraffic<M extends GatewayMetrics = GatewayMetrics>(parts: TrafficParts<M>): Traffic<M> {
  const { config, store, runtime, logger, registry } = parts;
  const clock = parts.clock ?? systemClock;
  const drainTimeoutMs = config.limits.requestTimeoutSeconds.max * 1000;
  const routes = new RoutingTable();
  // Corral places workers on its GPU inventory, unless the runtime's own scheduler places them (kubernetes).
  const placement = runtime.gpuScheduler
    ? schedulerPlacement(runtime.gpuScheduler)
    : inventoryPlacement(parts.gpus);
  const gatewayMetrics = parts.gatewayMetrics
    ? parts.gatewayMetrics({ registry })
    : (new GatewayMetrics({ registry }) as M);
  const pools = new WorkerPools({ keepAliveTimeoutMs: config.gateway.workerKeepAliveMs });
  const keys = new InvokeKeyService({ store, clock });
  const peerPools =
    parts.forwarding && new WorkerPools({ keepAliveTimeoutMs: config.gateway.workerKeepAliveMs });
  const gateway = new Gateway({
    metrics: gatewayMetrics,
    routing: parts.gatewayRoutes ?? routes,
    pools,
    domain: config.domain,
    clock,
    logger: logger.child({ role: 'gateway' }),
    bodyLimitBytes: config.gateway.bodyLimitBytes,
    maxQueueLength: config.gateway.maxQueueLength,
    queueTimeoutMs: config.gateway.queueTimeoutSeconds * 1000,
    findEndpoint: (appName) => store.endpoints.findByAppName(appName),
    neverPlaceable: (endpoint) => placement.whyNeverPlaceable(endpoint.spec),
    verifyKey: (key) => keys.grant(key),
    ...(parts.forwarding && peerPools ? { forwarding: { ...parts.forwarding, pools: peerPools } } : {}),
  });
  const scaler = new Scaler({
    signals: parts.signals ? parts.signals(gateway) : gateway,
    clock,
    timers: systemTimers,
    metrics: parts.scalerMetrics ? parts.scalerMetrics({ registry }) : new ScalerMetrics({ registry }),
  });
  const controllerMetrics = new ControllerMetrics({ registry, runtime: runtime.name });
  // Configured, or each GPU's share of the machine; callers without a `workers` section keep no limit.
  const memoryGBPerGpu =
    config.workers && workerMemoryGBPerGpu(config.workers.memoryGBPerGpu, totalmem(), parts.gpus.length);
  if (config.workers)
    logger.info({ memoryGBPerGpu: memoryGBPerGpu ?? 'none' }, 'worker memory limit per GPU');
  // Kept in the store, which the API reads: a worker's last output outlives its container (docs/workers.md).
  const outputs = new OutputKeeper({
    logs: (workerId, options) => runtime.logs(workerId, options),
    outputs: store.workerOutputs,
    clock,
    timers: systemTimers,
    logger: logger.child({ role: 'controller' }),
  });
  const controllerOptions: ControllerOptions = {
    store,
    runtime,
    gpus: parts.gpus,
    placement,
    probe: httpProbe,
    logger: logger.child({ role: 'controller' }),
    clock,
    routes,
    scaling: scaler,
    storagePaths: new Map(config.networkStorages.map((s) => [s.id, s.hostPath])),
    ...(parts.installationId === undefined ? {} : { installationId: parts.installationId }),
    readOnlyStorages: new Set(config.networkStorages.filter((s) => s.readOnly).map((s) => s.id)),
    revealCredentials: parts.revealCredentials ?? (async () => undefined),
    ...(parts.imageAccess ? { imageAccess: parts.imageAccess } : {}),
    ...(parts.resolveEnv ? { resolveEnv: parts.resolveEnv } : {}),
    startupTimeoutMs: config.controller.startupTimeoutSeconds * 1000,
    crashResetMs: config.controller.crashResetSeconds * 1000,
    unhealthyTimeoutMs: config.controller.unhealthyTimeoutSeconds * 1000,
    ...(memoryGBPerGpu === undefined ? {} : { memoryGBPerGpu }),
    intervalMs: config.controller.reconcileIntervalMs,
    awaitDrained: async (endpointId, workerId) => {
      await Promise.all([
        gateway.awaitDrained(endpointId, workerId, drainTimeoutMs),
        parts.remoteDrained?.(endpointId, workerId, drainTimeoutMs),
      ]);
    },
    metrics: controllerMetrics,
    outputs,
  };
  // One process: this controller always. Replicas: a fresh one per term, its runtime and store writes fenced.
  const newController = (fence?: TermFence) =>
    new Controller(
      fence
        ? {
            ...controllerOptions,
            fence,
            runtime: new FencedRuntime({ runtime, fence, leases: store.leases }),
          }
        : controllerOptions,
    );
  let controller = newController();
  let running = false;
  // Terms begin and end one at a time, in the order the elector decides them.
  let terms = Promise.resolve();
  const inTurn = (step: () => Promise<void>) => {
    terms = terms.then(step, step);
    return terms;
  };
  controllerMetrics.readFrom({ workerStates: () => controller.workers().map((w) => w.state) });
  const history =
    config.history && config.history.samples > 0
      ? new TrafficHistory({
          ...config.history,
          sources: {
            counters: () => gatewayMetrics.counters(),
            load: () => gateway.stats(),
            workers: () => controller.workers(),
            desired: (endpointId) => scaler.desired(endpointId),
            // The gateway's table: a follower's controller publishes none, and its history must keep its traffic.
            exists: (endpointId) => (parts.gatewayRoutes ?? routes).endpointById(endpointId) !== undefined,
          },
          clock,
          timers: systemTimers,
        })
      : undefined;
  gatewayMetrics.readFrom({ load: () => gateway.stats(), workers: () => controller.workers() });
  const server = createGatewayServer(gateway, {
    maxRequestTimeoutSeconds: config.limits.requestTimeoutSeconds.max,
    queueTimeoutSeconds: config.gateway.queueTimeoutSeconds,
    ...(config.connections ? { limits: config.connections.gateway } : {}),
  });
  return {
    get controller() {
      return controller;
    },
    gateway,
    scaler,
    routes,
    gatewayMetrics,
    history,
    server,
    start() {
      running = true;
      controller.start();
    },
    poke() {
      if (running) controller.poke();
    },
    lead: (fence) =>
      inTurn(async () => {
        running = false;
        await controller.stop();
        controller = newController(fence);
        running = true;
        controller.start();
      }),
    stepDown: () =>
      inTurn(async () => {
        running = false;
        await controller.stop();
        // Followers show no workers of their own (metrics, held GPUs); the next term starts afresh.
        controller = newController();
      }),
    async close() {
      running = false;
      history?.stop();
      await terms;
      await controller.stop();
      await outputs.close();
      scaler.close();
      gateway.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await pools.close();
      await peerPools?.close();
    },
  };
}

export async function inventoryFor(config: Config, logger: Logger): Promise<Gpu[]> {
  if (config.gpus.kind === 'simulated') return simulatedInventory(config.gpus.groups);
  const detected = await detectGpus();
  if (detected.problem) {
    logger.warn(
      { problem: detected.problem },
      'no GPUs found; endpoints cannot be placed (simulate some with --gpus h100-80g:8)',
    );
  }
  return detected.gpus;
}

export interface RunningServer {
  apiUrl: string;
  close(): Promise<void>;
}

/** `corral serve`: opens the store, makes sure a key exists, and serves the API until closed. */
export async function serve(
  configured: Config,
  io: { logger: Logger; stdout: (text: string) => void; env: NodeJS.ProcessEnv },
): Promise<RunningServer> {
  const { logger } = io;
  // Both listeners' connection caps fit under the open-file limit, with files left for the rest of the process.
  const config: Config = { ...configured, connections: connectionsUnderFileLimit(configured, logger) };
  // Everything that can be wrong with the configuration is found before anything is written.
  const tightened = secureDataDirSetting(config);
  const secretKey = loadSecretKeySetting(io.env, config.dataDir);
  for (const change of tightened) {
    logger.warn(
      change,
      "tightened the mode of a data file (it holds secrets; only Corral's user may read it)",
    );
  }
  const operatorKey = io.env.CORRAL_API_KEY || undefined;
  if (operatorKey !== undefined && operatorKey.length < MIN_OPERATOR_KEY_LENGTH) {
    throw new ConfigError(
      `invalid CORRAL_API_KEY: use at least ${MIN_OPERATOR_KEY_LENGTH} random characters`,
    );
  }
  const sqliteFile = sqliteFileOf({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  createDatabaseFile(sqliteFile);
  // SQLite serves one process: a second `corral serve` on the same file is refused here (docs/operations.md).
  const sqliteLock = sqliteFile === undefined ? undefined : lockSqliteSetting(sqliteFile);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    sqlite: {
      backgroundCheckpoints: {
        intervalMs: SQLITE_CHECKPOINT_INTERVAL_MS,
        onError: (reason) => logger.warn({ reason }, 'an SQLite checkpoint failed; the next one is tried'),
      },
    },
    onConnectionError: (error) =>
      logger.warn({ reason: error.message }, 'a database connection broke; the next query opens a new one'),
  }).catch((error: unknown) => {
    sqliteLock?.release();
    throw databaseError(error);
  });
  const closers: (() => Promise<void>)[] = [async () => sqliteLock?.release(), () => store.close()];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
  };
  try {
    const installationId = await store.installation.ensure(newInstallationId(), systemClock());
    logger.info({ database: store.describe(), installationId }, 'store ready');
    // Port 0 (any free port) has no URL to print yet: the banner then leaves CORRAL_API_URL out.
    const bannerUrl = config.apiAddr.port === 0 ? undefined : config.apiUrl;
    await ensureKeys(store, { ...io, operatorKey, apiUrl: bannerUrl });
    const secrets = new SecretBox({ key: secretKey });
    const runtime = await selectRuntime({
      installationId,
      choice: config.runtime,
      dataDir: config.dataDir,
      logger,
      simulatedGpus: config.gpus.kind === 'simulated',
      sandbox: config.workers.sandbox,
      allowRoot: config.localAllowRoot,
      kubernetes: {
        ...(config.kubeconfig === undefined ? {} : { kubeconfig: config.kubeconfig }),
        namespace: config.namespace,
        products: config.products,
        networkStorages: config.networkStorages,
        gpuResource: config.kubernetes.gpuResource,
        terminationGraceSeconds: config.kubernetes.terminationGraceSeconds,
        ...(config.workers.memoryGBPerGpu === undefined
          ? {}
          : { memoryGBPerGpu: config.workers.memoryGBPerGpu }),
        capAdd: config.workers.sandbox.capAdd,
      },
    });
    closers.push(() => runtime.close());
    const { gpuScheduler } = runtime;
    // Where the runtime's scheduler places workers, Corral keeps no GPU inventory of its own.
    if (gpuScheduler && config.gpus.kind === 'simulated')
      logger.warn("--gpus is ignored: the runtime's scheduler places workers on the cluster's GPUs");
    const gpus = gpuScheduler ? [] : await inventoryFor(config, logger);
    if (runtime.name === 'local') await warnOfTenantEndpoints(store, logger);
    const credentials = new CredentialService({ store, clock: systemClock, ids: randomIds, secrets });
    const imageGuard = imageAccessGuard(runtime, config, credentials);
    const ownerSecrets = new SecretService({ store, clock: systemClock, secrets });
    const registry = new Registry();
    const replicaId = newReplicaId();
    // Several replicas (PostgreSQL): every gateway routes from the store, and the slots and queues are shared.
    const gatewayRoutes = store.listener ? new RoutingTable() : undefined;
    const shared =
      gatewayRoutes &&
      new SharedTraffic({
        store,
        replicaId,
        gatewayRoutes,
        logger: logger.child({ role: 'cluster', replicaId }),
      });
    // The process's own memory, CPU, event-loop delay and GC, beside Corral's metrics.
    collectDefaultMetrics({ register: registry });
    const traffic = buildTraffic({
      config,
      store,
      runtime,
      gpus,
      logger,
      registry,
      revealCredentials: (ownerId, id) => credentials.reveal(ownerId, id),
      ...(imageGuard
        ? {
            imageAccess: (request) =>
              imageGuard.check({
                ...request,
                at: 'start',
                admin: () => ownerIsAdmin(store, request.ownerId),
              }),
          }
        : {}),
      installationId,
      resolveEnv: (ownerId, env) => ownerSecrets.resolveEnv(ownerId, env),
      ...(shared && gatewayRoutes
        ? {
            gatewayRoutes,
            signals: (local) => shared.signalsOf(local),
            remoteDrained: (endpointId, workerId, timeoutMs) =>
              shared.awaitRemoteDrained(endpointId, workerId, timeoutMs),
            forwarding: {
              self: replicaId,
              target: (workers, capacity) => shared.forwardTarget(workers, capacity),
            },
          }
        : {}),
    });
    const { gateway } = traffic;
    shared?.attach({ gateway, controllerRoutes: traffic.routes, poke: () => traffic.poke() });
    const leadership = leadershipOf({
      store,
      terms: shared ? shared.terms(traffic) : traffic,
      replicaId,
      logger: logger.child({ role: 'election', replicaId }),
    });
    // A follower shows the GPUs' holders from the workers rows (docs/operations.md); the leader, its controller's.
    // Read every second where gpusFree counts them (none on kubernetes: the scheduler's nodes count), else on demand.
    const storedGpus =
      store.dialect === 'postgres'
        ? new StoredGpus({
            workers: store.workers,
            ...(gpus.length > 0 ? { intervalMs: STORED_GPUS_INTERVAL_MS } : {}),
            timers: systemTimers,
            logger,
          })
        : undefined;
    if (storedGpus) {
      await storedGpus.start();
      closers.push(() => storedGpus.stop());
    }
    // Several replicas: the history answered is every replica's, merged from the store (docs/operations.md).
    const clusterHistory =
      shared && traffic.history && config.history
        ? new ClusterHistory({
            replicaId,
            history: traffic.history,
            samples: store.historySamples,
            term: () => shared.term(),
            localDesired: (endpointId) => traffic.scaler.desired(endpointId),
            clock: systemClock,
            timers: systemTimers,
            intervalSeconds: config.history.intervalSeconds,
            capacity: config.history.samples,
            logger: logger.child({ role: 'cluster', replicaId }),
          })
        : undefined;
    const bound = { apiUrl: config.apiUrl, gatewayPort: config.gatewayAddr.port };
    // Whether the database took the last heartbeat: /healthz says an outage without a query of its own.
    const beats = { accepted: true };
    const app = await buildApi({
      config,
      store,
      gpus,
      logger,
      secrets,
      ...replicaGpus({
        gpus,
        leading: () => leadership.leading(),
        controller: () => traffic.controller,
        ...(storedGpus ? { stored: storedGpus } : {}),
      }),
      ...(gpuScheduler ? { gpuScheduler } : {}),
      insight: {
        logs: (workerId, options) => runtime.logs(workerId, options),
        stats: (workerId) => runtime.stats(workerId),
        load: (endpointId, workerId) => gateway.workerLoad(endpointId, workerId),
      },
      traffic: (endpointId) => traffic.gatewayMetrics.summary(endpointId),
      // Several replicas: queued and in flight now are every live replica's (docs/operations.md).
      ...(shared ? { otherReplicas: { replicaId, load: (id: string) => shared.othersLoad(id) } } : {}),
      ...((clusterHistory ?? traffic.history) ? { history: clusterHistory ?? traffic.history } : {}),
      desiredWorkers: clusterHistory
        ? (endpointId) => clusterHistory.desired(endpointId)
        : (endpointId) => traffic.scaler.desired(endpointId),
      registry,
      databaseTookLastBeat: () => beats.accepted,
      onEndpointsChanged: () => {
        traffic.poke();
        shared?.requestPass();
      },
      bound: { apiUrl: () => bound.apiUrl, gatewayPort: () => bound.gatewayPort },
      ...(imageGuard ? { imageAccess: (request) => imageGuard.check({ ...request, at: 'create' }) } : {}),
      singleTenant: runtime.name === 'local',
      readiness: () => runtimeReadiness(runtime),
      replica: { id: replicaId, leading: () => leadership.leading() },
      // Replicas split the API's per-key rate limit between the live ones (docs/operations.md); SQLite: one process.
      ...(shared ? { rateLimitShare: () => rateLimitShare(config.rateLimit, shared.split()) } : {}),
    });
    closers.push(() => app.close());
    guardListener(app.server, 'api', config.connections.api, logger);
    guardListener(traffic.server, 'gateway', config.connections.gateway, logger);
    await app.listen({ host: config.apiAddr.host, port: config.apiAddr.port }).catch((error: unknown) => {
      throw listenError('apiAddr', config.apiAddr, error);
    });
    if (config.apiUrl === `http://${formatHostPort(config.apiAddr)}`) {
      bound.apiUrl = `http://${formatHostPort({ host: config.apiAddr.host, port: listeningPort(app) })}`;
    }
    await listen(traffic.server, config.gatewayAddr).catch((error: unknown) => {
      throw listenError('gatewayAddr', config.gatewayAddr, error);
    });
    const gatewayAddress = traffic.server.address();
    bound.gatewayPort = typeof gatewayAddress === 'object' && gatewayAddress ? gatewayAddress.port : 0;
    closers.push(() => traffic.close());
    if (clusterHistory) {
      clusterHistory.start();
      closers.push(() => clusterHistory.stop());
    } else traffic.history?.start();
    const heartbeat = new Heartbeat({
      replicas: store.replicas,
      beat: () => ({
        id: replicaId,
        host: hostname(),
        pid: process.pid,
        apiUrl: bound.apiUrl,
        gatewayUrl: advertisedGatewayUrl(config, bound.gatewayPort, hostname()),
        ...gatewayLoad(gateway.stats()),
        ...(shared ? { settled: shared.settled() } : {}),
      }),
      intervalMs: HEARTBEAT_INTERVAL_MS,
      pruneAfterMs: HEARTBEAT_PRUNE_AFTER_MS,
      timers: systemTimers,
      logger,
      onBeat: (accepted) => {
        beats.accepted = accepted;
      },
    });
    await heartbeat.start();
    closers.push(() => heartbeat.stop());
    if (shared) {
      await shared.start();
      closers.push(() => shared.close());
    }
    // At a stop the leader steps down first and releases its lease: another replica takes over at once.
    closers.push(() => leadership.end());
    // An awaited Docker engine: the controller's passes begin once it answers (until then nothing can run).
    let closing = false;
    closers.push(async () => {
      closing = true;
    });
    void runtimeReady(runtime)
      .then(async (ready) => {
        if (ready && !closing) await leadership.begin();
      })
      .catch((error: unknown) => logger.error({ err: error }, 'the controller could not start'));
    const apiUrl = `http://${formatHostPort({ host: config.apiAddr.host, port: listeningPort(app) })}`;
    const gatewayUrl = `http://${formatHostPort({ host: config.gatewayAddr.host, port: bound.gatewayPort })}`;
    logger.info(
      {
        apiUrl,
        gatewayUrl,
        runtime: runtime.name,
        gpus: gpus.length,
        simulatedGpus: config.gpus.kind === 'simulated',
        domain: config.domain,
        replicaId,
      },
      'corral API listening',
    );
    return { apiUrl, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * Private images stay private (docs/api.md, Private images): on a runtime that holds images, the registry is asked
 * whether the owner's own credentials pull an image, at create/update and before each worker start.
 */
function imageAccessGuard(
  runtime: WorkerRuntime,
  config: Config,
  credentials: CredentialService,
): ImageAccessGuard | undefined {
  const localImage = runtime.localImage?.bind(runtime);
  if (!localImage) return undefined;
  return new ImageAccessGuard({
    localImage,
    checkManifest: registryManifestCheck(),
    login: (ownerId, authId) => credentials.reveal(ownerId, authId),
    allowLocal: config.allowLocalImages,
    clock: systemClock,
  });
}

/** Whether the owner holds an admin key that is not revoked (a worker start has no caller to ask). */
async function ownerIsAdmin(store: Store, ownerId: string): Promise<boolean> {
  return (await store.apiKeys.list(ownerId)).some((key) => key.admin && key.revokedAt === null);
}

async function ensureKeys(
  store: Store,
  io: {
    logger: Logger;
    stdout: (text: string) => void;
    operatorKey: string | undefined;
    apiUrl: string | undefined;
  },
): Promise<void> {
  const keys = new ApiKeyService({ store, clock: systemClock });
  const { operatorKey } = io;
  if (operatorKey) {
    const outcome = await keys.ensureOperatorKey(operatorKey);
    if (outcome === 'revoked') io.logger.warn('CORRAL_API_KEY has been revoked and is not accepted');
    else io.logger.info({ outcome }, 'CORRAL_API_KEY accepted as an admin key');
  }
  const first = await keys.ensureFirstKey();
  if (first) io.stdout(firstKeyBanner(first.key, io.apiUrl));
}

/** What the first start prints: the key, once, and the lines that set up the CLI, ready to paste. */
function firstKeyBanner(key: string, apiUrl: string | undefined): string {
  const exports = [`  export CORRAL_API_KEY=${key}`];
  if (apiUrl !== undefined) exports.push(`  export CORRAL_API_URL=${apiUrl}`);
  return [
    '',
    'Created the first API key (owner "default", admin). It is shown only this once; keep it safe:',
    '',
    `  ${key}`,
    '',
    'Use it as: Authorization: Bearer <key>   (manage keys with: corral keys create|list|revoke)',
    'For the corral CLI, paste:',
    '',
    ...exports,
    '',
    '',
  ].join('\n');
}

/** Endpoints made before by owners without an admin key would run as host processes on the local runtime. */
async function warnOfTenantEndpoints(store: Store, logger: Logger): Promise<void> {
  const endpoints = await endpointsOfNonAdminOwners(store);
  if (endpoints.length === 0) return;
  logger.warn(
    { count: endpoints.length, endpoints: endpoints.slice(0, 20) },
    'endpoints of owners without an admin key exist; on the local runtime their workers run as host processes ' +
      "with Corral's rights: stop or delete them unless you trust their owners",
  );
}

/**
 * The open-file limit, its soft limit raised to the hard one where it is below (node does so itself at start on
 * most systems), logged; and the connection caps of both listeners lowered where they would not fit under it.
 */
function connectionsUnderFileLimit(config: Config, logger: Logger): Config['connections'] {
  const files = raiseFileLimit();
  const fitted = fitConnections(config.connections, files.limit?.soft);
  const count = (n: number | undefined) =>
    n === undefined ? 'unknown' : Number.isFinite(n) ? n : 'unlimited';
  const caps = (listener: ListenerLimits) => ({
    maxConnections: listener.maxConnections,
    maxConnectionsPerClient: listener.maxConnectionsPerClient,
  });
  logger.info(
    {
      openFiles: count(files.limit?.soft),
      openFilesHard: count(files.limit?.hard),
      ...(files.raisedFrom === undefined ? {} : { raisedFrom: files.raisedFrom }),
      reservedFiles: fitted.reservedFiles,
      api: caps(fitted.api),
      gateway: caps(fitted.gateway),
    },
    'open-file limit and connection caps',
  );
  if (files.notRaised !== undefined) {
    logger.warn({ reason: files.notRaised }, 'could not raise the open-file soft limit to the hard limit');
  }
  if (fitted.lowered) {
    logger.warn(
      { configured: { api: caps(config.connections.api), gateway: caps(config.connections.gateway) } },
      'connection caps lowered to fit under the open-file limit; raise the hard limit (ulimit -Hn, LimitNOFILE=) to keep them',
    );
  }
  const { lowered: _logged, ...connections } = fitted;
  return connections;
}

/** Caps the listener's connections, in all and per client address (listeners/connection-guard.ts). */
function guardListener(server: Server, listener: string, limits: ListenerLimits, logger: Logger): void {
  guardConnections(server, {
    listener,
    maxConnections: limits.maxConnections,
    maxConnectionsPerClient: limits.maxConnectionsPerClient,
    logger,
    clock: systemClock,
  });
}

/** The bound port, which differs from the configured one when that was 0. */
function listeningPort(app: FastifyInstance): number {
  const address = app.server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** The data directory holds key hashes and sealed secrets: 0700, its key and database 0600 (config/data-dir.ts). */
function secureDataDirSetting(config: Config): TightenedMode[] {
  try {
    return secureDataDir({
      dataDir: config.dataDir,
      databaseFile: sqliteFileOf({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }),
    });
  } catch (error) {
    throw new ConfigError(
      `invalid --data-dir (CORRAL_DATA_DIR) ${config.dataDir}: ${(error as Error).message}`,
    );
  }
}

function lockSqliteSetting(databaseFile: string): ProcessLock {
  try {
    return lockSqliteDatabase(databaseFile);
  } catch (error) {
    throw databaseError(error);
  }
}

function loadSecretKeySetting(env: NodeJS.ProcessEnv, dataDir: string): Buffer {
  try {
    return loadSecretKey({ envValue: env.CORRAL_SECRET_KEY, path: join(dataDir, 'secret.key') });
  } catch (error) {
    const setting = env.CORRAL_SECRET_KEY ? 'CORRAL_SECRET_KEY' : `--data-dir (CORRAL_DATA_DIR) ${dataDir}`;
    throw new ConfigError(`invalid ${setting}: ${(error as Error).message}`);
  }
}

function listen(server: Server, address: { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
