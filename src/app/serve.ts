/**
 * `corral serve`: checks the settings, opens the store, makes sure a key exists, builds the runtime, the traffic
 * side, the replica and the API, listens on both addresses, and starts the controller once the runtime is ready.
 * Everything it opened is closed in reverse order by `close`, or at once when a step fails.
 */
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ControllerView } from '../cluster/controller-view.js';
import { rateLimitShare } from '../cluster/shares.js';
import { replicaGpus } from '../cluster/stored-gpus.js';
import { type Config, formatHostPort } from '../config/config.js';
import type { ListenerLimits } from '../config/connection-limits.js';
import { listenError } from '../config/startup.js';
import { SecretBox } from '../crypto/secret-box.js';
import type { GatewayMetrics } from '../gateway/metrics.js';
import { UnavailableCheckpointer } from '../gpu/checkpoint/unavailable-checkpointer.js';
import type { Gpu } from '../gpu/inventory.js';
import { systemClock, systemTimers } from '../ports/clock.js';
import type { GpuCheckpointer } from '../ports/gpu-checkpoint.js';
import { idleTiersOff } from '../runtime/idle-tiers.js';
import { runtimeReadiness, runtimeReady, selectRuntime } from '../runtime/select.js';
import type { WorkerRuntime } from '../runtime/types.js';
import { newInstallationId, newReplicaId } from '../service/ids.js';
import { ModelAccess } from '../service/model-access.js';
import type { Store } from '../store/store.js';
import { LedgerReader } from '../usage/ledger-reader.js';
import { type ApiServices, apiServices, buildApi } from './build-api.js';
import { buildIdlePolicies, type IdlePolicies } from './build-idle-policy.js';
import { buildJobs, type Jobs, jobsForTraffic } from './build-jobs.js';
import { buildModelCache } from './build-model-cache.js';
import { buildReplica, type Replica, type SharedTrafficParts, sharedTrafficOf } from './build-replica.js';
import { buildTraffic, type Traffic, trafficServer } from './build-traffic.js';
import { buildWebhooks } from './build-webhooks.js';
import { connectionsUnderFileLimit, guardListener } from './connection-limits.js';
import { ensureKeys } from './first-key.js';
import { gpuCheckpointFor } from './gpu-checkpoint.js';
import { imageAccessGuard, ownerIsAdmin } from './image-guard.js';
import { jobActionsOf } from './job-actions.js';
import { boundPort, listen, listeningPort } from './listen.js';
import { modelUsers } from './model-users.js';
import { openServeStore, startupSettings } from './startup.js';
import { inventoryFor, logIdleTiers, warnOfTenantEndpoints } from './startup-checks.js';
import { WorkerFacingListener } from './worker-facing-listener.js';
import { kubernetesWorkersUnreachable } from './worker-facing-url.js';
import { DEFAULT_WORKER_LISTENER_LIMITS } from './worker-listener.js';
import { placeWorkerListener, type WorkerListenerPlace } from './worker-listener-place.js';

export interface RunningServer {
  apiUrl: string;
  close(): Promise<void>;
}

/** What `serve` opened, closed in reverse order (the last opened first). */
type Closers = (() => Promise<void>)[];

type ServeIo = { logger: Logger; stdout: (text: string) => void; env: NodeJS.ProcessEnv };

/** `corral serve`: opens the store, makes sure a key exists, and serves the API until closed. */
export async function serve(configured: Config, io: ServeIo): Promise<RunningServer> {
  const { logger } = io;
  // The three listeners' connection caps fit under the open-file limit, with files left for the rest of the process.
  const fitted = connectionsUnderFileLimit(configured, DEFAULT_WORKER_LISTENER_LIMITS, logger);
  const config: Config = { ...configured, connections: fitted.connections };
  // Everything that can be wrong with the configuration is found before anything is written.
  const { secretKey, operatorKey } = startupSettings(config, io.env, logger);
  const { store, release } = await openServeStore(config, logger);
  const closers: Closers = [async () => release(), () => store.close()];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
  };
  try {
    const installationId = await storeReady(store, config, io, operatorKey);
    const machine = await buildMachine(config, store, installationId, logger, closers);
    const shared = buildShared({ config, store, machine, secretKey, logger });
    // What every build below takes: the settings, the store, the log.
    const base = { config, store, logger };
    const ahead = builtAhead(config, machine, shared, fitted.workers, logger);
    const { controller, workersListener } = ahead;
    const jobs = await buildServeJobs({ ...base, shared, ...ahead });
    closers.push(() => jobs.close());
    const idle = buildServeIdle({ ...base, jobs, controller });
    closers.push(() => idle.close());
    const traffic = buildServeTraffic({
      ...base,
      machine,
      shared,
      jobs,
      idle,
      gatewayServer: ahead.gatewayServer,
    });
    const replica = buildReplica({
      ...base,
      traffic,
      shared: shared.replicaParts?.shared,
      gpus: machine.gpus,
      replicaId: shared.replicaId,
    });
    controller.connect(traffic, () => replica.leadership.leading());
    idle.start();
    const { storedGpus } = replica;
    if (storedGpus) {
      await storedGpus.start();
      closers.push(() => storedGpus.stop());
    }
    const app = await buildServeApi({ ...base, machine, shared, jobs, traffic, replica, controller });
    closers.push(() => app.close());
    await listenApiAndGateway(config, app, traffic, logger);
    closers.push(() => traffic.close());
    const running = { config, machine, shared, jobs, replica, workersListener, app, traffic, logger };
    await startRunning({ ...running, closers });
    const apiUrl = logListening(running);
    return { apiUrl, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * Built before the parts that need them (the jobs side and the idle policies come before the controller, which
 * starts queue workers with the jobs' env): the controller as they see it, the worker-facing listener, the
 * gateway's server (its address is where http jobs go).
 */
function builtAhead(
  config: Config,
  machine: Machine,
  shared: Shared,
  workerLimits: ListenerLimits,
  logger: Logger,
) {
  const controller = new ControllerView({
    requestPass: () => shared.replicaParts?.shared.requestPass(),
  });
  const workersListener = new WorkerFacingListener({
    place: machine.place,
    runtime: machine.runtime.name,
    workers: config.workers,
    limits: workerLimits,
    logger,
  });
  return { controller, workersListener, gatewayServer: trafficServer(config) };
}

/**
 * Idle policies (docs/idle-policies.md): every replica marks its traffic (the gateway's requests, the jobs
 * queued); the leader's pass lowers maxWorkers and has the controller reconcile the endpoint.
 */
function buildServeIdle(options: {
  config: Config;
  store: Store;
  logger: Logger;
  jobs: Jobs;
  controller: ControllerView;
}): IdlePolicies {
  const { controller } = options;
  const idle = buildIdlePolicies({
    store: options.store,
    policies: options.config.idlePolicies,
    leading: () => controller.leading(),
    clock: systemClock,
    timers: systemTimers,
    logger: options.logger.child({ part: 'idle-policy' }),
    onChanged: (endpointId) => controller.changed(endpointId),
  });
  options.jobs.events.on('queued', ({ endpointId }) => idle.mark(endpointId, systemClock()));
  return idle;
}

/** Says where everything listens ('corral API listening'); answers the API's URL. */
function logListening(options: {
  config: Config;
  machine: Machine;
  shared: Shared;
  app: FastifyInstance;
  traffic: Traffic<GatewayMetrics>;
  workersListener: WorkerFacingListener;
  logger: Logger;
}): string {
  const { config, machine } = options;
  const apiUrl = `http://${formatHostPort({ host: config.apiAddr.host, port: listeningPort(options.app) })}`;
  const gatewayPort = boundPort(options.traffic.server) ?? 0;
  const gatewayUrl = `http://${formatHostPort({ host: config.gatewayAddr.host, port: gatewayPort })}`;
  options.logger.info(
    {
      apiUrl,
      gatewayUrl,
      workersUrl: options.workersListener.url(),
      runtime: machine.runtime.name,
      gpus: machine.gpus.length,
      simulatedGpus: config.gpus.kind === 'simulated',
      domain: config.domain,
      replicaId: options.shared.replicaId,
    },
    'corral API listening',
  );
  return apiUrl;
}

/** The installation's id in the store, and the first keys (the banner leaves a port-0 URL out: none known yet). */
async function storeReady(store: Store, config: Config, io: ServeIo, operatorKey: string | undefined) {
  const installationId = await store.installation.ensure(newInstallationId(), systemClock());
  io.logger.info({ database: store.describe(), installationId }, 'store ready');
  const bannerUrl = config.apiAddr.port === 0 ? undefined : config.apiUrl;
  await ensureKeys(store, { ...io, operatorKey, apiUrl: bannerUrl });
  return installationId;
}

/** This machine: the GPU checkpointer, the runtime, the GPUs, and what the runtime cannot offer. */
interface Machine {
  installationId: string;
  runtime: WorkerRuntime;
  place: WorkerListenerPlace;
  gpus: Gpu[];
  /** Why the runtime has no idle tiers; undefined: it has them. */
  tiersOff: string | undefined;
  /** Why queue endpoints are refused (Kubernetes workers could not reach this replica); undefined: served. */
  queueOff: string | undefined;
}

async function buildMachine(
  config: Config,
  store: Store,
  installationId: string,
  logger: Logger,
  closers: Closers,
): Promise<Machine> {
  // Whether idle workers can be suspended on the GPU (issue 24), asked of the driver while the runtime starts.
  const gpuCheckpoint = await gpuCheckpointFor({ gpus: config.gpus, runtime: config.runtime, logger });
  const { availability } = gpuCheckpoint;
  // Closed after the runtime (closers run in reverse): its helper process ends last.
  closers.push(async () => gpuCheckpoint.close());
  const checkpointer =
    gpuCheckpoint.checkpointer ??
    new UnavailableCheckpointer(availability.available ? 'no GPU checkpointer' : availability.reason);
  // On Docker the worker-facing listener's port is fixed before the runtime opens the host guard's hole for it.
  const place = await placeWorkerListener({ listen: config.workers.listen, runtimeChoice: config.runtime });
  const runtime = await runtimeFor(config, installationId, logger, checkpointer, place);
  closers.push(() => runtime.close());
  // Where the runtime's scheduler places workers, Corral keeps no GPU inventory of its own.
  if (runtime.gpuScheduler && config.gpus.kind === 'simulated')
    logger.warn("--gpus is ignored: the runtime's scheduler places workers on the cluster's GPUs");
  const gpus = runtime.gpuScheduler ? [] : await inventoryFor(config, logger);
  if (runtime.name === 'local') await warnOfTenantEndpoints(store, logger);
  const tiersOff = idleTiersOff(runtime);
  logIdleTiers(runtime, tiersOff, logger);
  const queueOff = runtime.name === 'kubernetes' ? kubernetesWorkersUnreachable(config.workers) : undefined;
  if (queueOff !== undefined) logger.warn({ reason: queueOff }, 'queue endpoints are refused');
  return { installationId, runtime, place, gpus, tiersOff, queueOff };
}

/** The services the API, the jobs and the traffic side share, each built once, and this replica's own parts. */
interface Shared {
  secrets: SecretBox;
  usage: LedgerReader;
  services: ApiServices;
  modelCache: ReturnType<typeof buildModelCache>;
  modelAccess: ModelAccess;
  /** One registry for every role of this process (`/metrics`). */
  registry: Registry;
  jobWebhooks: ReturnType<typeof buildWebhooks>;
  imageGuard: ReturnType<typeof imageAccessGuard>;
  replicaId: string;
  /** Several replicas (PostgreSQL): the shared traffic and the parts it adds to the traffic side; else none. */
  replicaParts: SharedTrafficParts | undefined;
}

function buildShared(options: {
  config: Config;
  store: Store;
  machine: Machine;
  secretKey: Buffer;
  logger: Logger;
}): Shared {
  const { config, store, machine, logger } = options;
  const secrets = new SecretBox({ key: options.secretKey });
  // Budgets read the usage ledger (cached per owner for a few seconds); the reader prices its sums.
  const usage = new LedgerReader({ segments: store.usageSegments, prices: config.usage, clock: systemClock });
  const services = apiServices({
    config,
    store,
    gpus: machine.gpus,
    secrets,
    gpuScheduler: machine.runtime.gpuScheduler,
    usage,
    onBudgetReadError: (error, ownerId) =>
      logger.warn({ err: error, ownerId }, 'could not read an owner budget from the usage ledger'),
  });
  const { ownerSecrets } = services;
  // The machine's model cache (issue 34): endpoints' models checked at create, fetched before a worker holds a GPU.
  const modelCache = buildModelCache({
    config,
    logger,
    namedModels: async () => new Set(modelUsers(await store.endpoints.listAll(), null).keys()),
  });
  const modelAccess = new ModelAccess({
    cache: modelCache,
    secretValue: (ownerId, name) => ownerSecrets.value(ownerId, name),
  });
  // Jobs' webhooks: `jobWebhooks.webhooks` (checkTarget, enqueue) is what the jobs core is handed.
  const registry = new Registry();
  const jobWebhooks = buildWebhooks({
    config,
    store,
    secrets: services.webhookSecrets,
    logger: logger.child({ part: 'webhooks' }),
    registry,
  });
  const imageGuard = imageAccessGuard(machine.runtime, config, services.credentials);
  const replicaId = newReplicaId();
  const replicaParts = sharedTrafficOf({ store, replicaId, logger });
  // The process's own memory, CPU, event-loop delay and GC, beside Corral's metrics.
  collectDefaultMetrics({ register: registry });
  return {
    secrets,
    usage,
    services,
    modelCache,
    modelAccess,
    registry,
    jobWebhooks,
    imageGuard,
    replicaId,
    replicaParts,
  };
}

/** The jobs side: the gateway serves its client routes, the controller starts queue workers with its env. */
function buildServeJobs(options: {
  config: Config;
  store: Store;
  logger: Logger;
  shared: Shared;
  controller: ControllerView;
  workersListener: WorkerFacingListener;
  gatewayServer: Server;
}): Promise<Jobs> {
  const { config, shared, controller } = options;
  const { services, replicaParts } = shared;
  return buildJobs({
    store: options.store,
    settings: config.jobs,
    clock: systemClock,
    timers: systemTimers,
    logger: options.logger,
    domain: config.domain,
    verifyKey: (key) => services.invokeKeys.grant(key),
    workersAddress: options.workersListener,
    // The controller's word where this replica leads and has adopted the runtime's workers; else the store's.
    directory: controller,
    trigger: controller,
    replicaId: shared.replicaId,
    // http jobs go through this replica's own gateway, on this host, once it listens.
    gatewayUrl: () => {
      const port = boundPort(options.gatewayServer);
      const host = loopbackOf(config.gatewayAddr.host);
      return port === undefined ? undefined : `http://${formatHostPort({ host, port })}`;
    },
    webhooks: shared.jobWebhooks.webhooks,
    quotaOf: async (ownerId) => (await services.quotas.quotaOf(ownerId)).quota,
    budgets: services.budgets,
    // Replicas split each owner's submission rate as they split the API's (read at each submission).
    submissionRateShare: () =>
      replicaParts
        ? rateLimitShare(config.jobs.submissionRate, replicaParts.shared.split())
        : config.jobs.submissionRate,
    registry: shared.registry,
  });
}

/** The traffic side (routing table, gateway, scaler, controller) on the gateway's server made first. */
function buildServeTraffic(options: {
  config: Config;
  store: Store;
  logger: Logger;
  machine: Machine;
  shared: Shared;
  jobs: Jobs;
  idle: IdlePolicies;
  gatewayServer: Server;
}): Traffic<GatewayMetrics> {
  const { config, store, machine, shared, idle } = options;
  const { services, imageGuard } = shared;
  return buildTraffic({
    config,
    store,
    runtime: machine.runtime,
    gpus: machine.gpus,
    logger: options.logger,
    registry: shared.registry,
    invokeKeys: services.invokeKeys,
    revealCredentials: (ownerId, id) => services.credentials.reveal(ownerId, id),
    ...(imageGuard
      ? {
          imageAccess: (request) =>
            imageGuard.check({ ...request, at: 'start', admin: () => ownerIsAdmin(store, request.ownerId) }),
        }
      : {}),
    installationId: machine.installationId,
    resolveEnv: (ownerId, env) => services.ownerSecrets.resolveEnv(ownerId, env),
    ...(services.budgets ? { budgets: services.budgets } : {}),
    models: {
      cache: shared.modelCache,
      token: (ownerId, model) => shared.modelAccess.tokenFor(ownerId, model),
    },
    ...(shared.replicaParts?.parts ?? {}),
    jobs: jobsForTraffic(options.jobs),
    onTraffic: (endpointId, at) => idle.mark(endpointId, at),
    server: options.gatewayServer,
  });
}
/** The API over the shared services and the built parts; its links read the bound addresses (port 0: any free one). */
function buildServeApi(options: {
  config: Config;
  store: Store;
  logger: Logger;
  machine: Machine;
  shared: Shared;
  jobs: Jobs;
  traffic: Traffic<GatewayMetrics>;
  replica: Replica;
  controller: ControllerView;
}): Promise<FastifyInstance> {
  const { config, store, machine, shared, traffic, replica, controller } = options;
  const { gpus, runtime, gpuScheduler } = { ...machine, gpuScheduler: machine.runtime.gpuScheduler };
  const { leadership, storedGpus, clusterHistory } = replica;
  const others = shared.replicaParts?.shared;
  const { imageGuard, modelCache, replicaId } = shared;
  return buildApi({
    config,
    store,
    usage: shared.usage,
    modelCache,
    models: {
      cache: modelCache,
      users: async (ownerId) => modelUsers(await store.endpoints.listAll(), ownerId),
    },
    gpus,
    logger: options.logger,
    secrets: shared.secrets,
    services: shared.services,
    jobActions: jobActionsOf(options.jobs.service),
    ...replicaGpus({
      gpus,
      leading: () => leadership.leading(),
      controller: () => traffic.controller,
      ...(storedGpus ? { stored: storedGpus } : {}),
    }),
    ...(gpuScheduler ? { gpuScheduler } : {}),
    ...(machine.tiersOff === undefined ? {} : { idleTiersOff: machine.tiersOff }),
    ...(machine.queueOff === undefined ? {} : { queueOff: machine.queueOff }),
    insight: {
      logs: (workerId, logOptions) => runtime.logs(workerId, logOptions),
      stats: (workerId) => runtime.stats(workerId),
      load: (endpointId, workerId) => traffic.gateway.workerLoad(endpointId, workerId),
    },
    traffic: (endpointId) => traffic.gatewayMetrics.summary(endpointId),
    // Several replicas: queued and in flight now are every live replica's (docs/operations.md).
    ...(others ? { otherReplicas: { replicaId, load: (id: string) => others.othersLoad(id) } } : {}),
    ...((clusterHistory ?? traffic.history) ? { history: clusterHistory ?? traffic.history } : {}),
    desiredWorkers: clusterHistory
      ? (endpointId) => clusterHistory.desired(endpointId)
      : (endpointId) => traffic.scaler.desired(endpointId),
    registry: shared.registry,
    databaseTookLastBeat: () => replica.databaseTookLastBeat(),
    onEndpointsChanged: (endpointId) => controller.changed(endpointId),
    bound: {
      apiUrl: (server) => boundApiUrl(config, server),
      gatewayPort: () => gatewayPort(config, traffic),
    },
    ...(imageGuard ? { imageAccess: (request) => imageGuard.check({ ...request, at: 'create' }) } : {}),
    singleTenant: runtime.name === 'local',
    readiness: () => runtimeReadiness(runtime),
    replica: { id: replicaId, leading: () => leadership.leading() },
    // Replicas split the API's per-key rate limit between the live ones (docs/operations.md); SQLite: one process.
    ...(others ? { rateLimitShare: () => rateLimitShare(config.rateLimit, others.split()) } : {}),
  });
}

/** The API's URL: the configured one, or where its URL is the address's, the port bound once it listens. */
function boundApiUrl(config: Config, server: Server): string {
  const port = boundPort(server);
  if (port === undefined || config.apiUrl !== `http://${formatHostPort(config.apiAddr)}`)
    return config.apiUrl;
  return `http://${formatHostPort({ host: config.apiAddr.host, port })}`;
}

/** The gateway's port: the one bound once it listens, else the configured one. */
function gatewayPort(config: Config, traffic: Traffic<GatewayMetrics>): number {
  return boundPort(traffic.server) ?? config.gatewayAddr.port;
}

/** The API, then the gateway, listen on their configured addresses, each connection-capped; a failure names it. */
async function listenApiAndGateway(
  config: Config,
  app: FastifyInstance,
  traffic: Traffic<GatewayMetrics>,
  logger: Logger,
): Promise<void> {
  guardListener(app.server, 'api', config.connections.api, logger);
  guardListener(traffic.server, 'gateway', config.connections.gateway, logger);
  await app.listen({ host: config.apiAddr.host, port: config.apiAddr.port }).catch((error: unknown) => {
    throw listenError('apiAddr', config.apiAddr, error);
  });
  await listen(traffic.server, config.gatewayAddr).catch((error: unknown) => {
    throw listenError('gatewayAddr', config.gatewayAddr, error);
  });
}

/**
 * What runs once both listen: the worker-facing listener (on an awaited Docker engine, once it answers: on Docker
 * it binds on the address the runtime says), the jobs' background, webhook deliveries left in the outbox, the
 * replica's heartbeat and shared traffic, and the controller's passes once the runtime is ready.
 */
async function startRunning(options: {
  config: Config;
  machine: Machine;
  shared: Shared;
  jobs: Jobs;
  replica: Replica;
  workersListener: WorkerFacingListener;
  app: FastifyInstance;
  traffic: Traffic<GatewayMetrics>;
  closers: Closers;
  logger: Logger;
}): Promise<void> {
  const { config, machine, shared, jobs, replica, workersListener, closers, logger } = options;
  const { runtime } = machine;
  const openWorkersListener = async () => {
    await workersListener.open(jobs.workerHandler);
    closers.push(() => workersListener.close());
  };
  const awaitingEngine = !runtimeReadiness(runtime).ready;
  if (!awaitingEngine) await openWorkersListener();
  jobs.start();
  // Deliveries left in the outbox by a process that stopped are sent from now on.
  await shared.jobWebhooks.start();
  closers.push(() => shared.jobWebhooks.stop());
  closers.push(
    ...(await replica.start({
      apiUrl: () => boundApiUrl(config, options.app.server),
      gatewayPort: () => gatewayPort(config, options.traffic),
    })),
  );
  // An awaited Docker engine: the controller's passes begin once it answers (until then nothing can run).
  let closing = false;
  closers.push(async () => {
    closing = true;
  });
  void runtimeReady(runtime)
    .then(async (ready) => {
      if (!ready || closing) return;
      if (awaitingEngine) await openWorkersListener();
      await replica.leadership.begin();
    })
    .catch((error: unknown) => logger.error({ err: error }, 'the controller could not start'));
}

/** An address this host reaches its own listener on: a wildcard address's loopback, else the address. */
function loopbackOf(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host;
}

/** The runtime the configuration chooses (docker, kubernetes, local), connected or waited for. */
function runtimeFor(
  config: Config,
  installationId: string,
  logger: Logger,
  checkpointer: GpuCheckpointer,
  place: WorkerListenerPlace,
): Promise<WorkerRuntime> {
  return selectRuntime({
    installationId,
    choice: config.runtime,
    dataDir: config.dataDir,
    logger,
    simulatedGpus: config.gpus.kind === 'simulated',
    sandbox: config.workers.sandbox,
    checkpointer,
    allowRoot: config.localAllowRoot,
    workerListener: { port: place.port, onAddress: (address) => place.onAddress(address) },
    kubernetes: {
      ...(config.kubeconfig === undefined ? {} : { kubeconfig: config.kubeconfig }),
      namespace: config.namespace,
      products: config.products,
      networkStorages: config.networkStorages,
      gpuResource: config.kubernetes.gpuResource,
      terminationGraceSeconds: config.kubernetes.terminationGraceSeconds,
      ...(config.kubernetes.imagePullPolicy === undefined
        ? {}
        : { imagePullPolicy: config.kubernetes.imagePullPolicy }),
      ...(config.workers.memoryGBPerGpu === undefined
        ? {}
        : { memoryGBPerGpu: config.workers.memoryGBPerGpu }),
      capAdd: config.workers.sandbox.capAdd,
      ...(config.kubernetes.nodeAgent === undefined ? {} : { nodeAgent: config.kubernetes.nodeAgent }),
    },
  });
}
