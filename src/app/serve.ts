/**
 * `corral serve`: checks the settings, opens the store, makes sure a key exists, and builds the parts in one order
 * (the machine, the shared services, what later parts are reached through, the jobs side, the idle policies, the
 * traffic side, the replica, the API), listens on both addresses, and starts the controller once the runtime is
 * ready. Everything it opened is closed in reverse order by `close`, or at once when a step fails.
 */
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ControllerView } from '../cluster/controller-view.js';
import { rateLimitShare } from '../cluster/shares.js';
import { replicaGpus } from '../cluster/stored-gpus.js';
import { type Config, formatHostPort } from '../config/config.js';
import type { ListenerLimits } from '../config/connection-limits.js';
import { listenError } from '../config/startup.js';
import type { GatewayMetrics } from '../gateway/metrics.js';
import { systemClock, systemTimers } from '../ports/clock.js';
import { runtimeReadiness, runtimeReady } from '../runtime/select.js';
import { newInstallationId } from '../service/ids.js';
import type { Store } from '../store/store.js';
import { buildApi } from './build-api.js';
import { buildIdlePolicies, type IdlePolicies } from './build-idle-policy.js';
import { buildJobs, type Jobs, jobsForTraffic } from './build-jobs.js';
import { buildMachine, type Machine } from './build-machine.js';
import { buildReplica, type Replica } from './build-replica.js';
import { buildShared, type Shared } from './build-shared.js';
import { buildTraffic, type Traffic, trafficServer } from './build-traffic.js';
import { connectionsUnderFileLimit, guardListener } from './connection-limits.js';
import { ensureKeys } from './first-key.js';
import { ownerIsAdmin } from './image-guard.js';
import { jobActionsOf } from './job-actions.js';
import { boundPort, listen, listeningPort } from './listen.js';
import { modelUsers } from './model-users.js';
import { openServeStore, startupSettings } from './startup.js';
import { WorkerFacingListener } from './worker-facing-listener.js';
import { DEFAULT_WORKER_LISTENER_LIMITS } from './worker-listener.js';

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
      controller,
      gatewayServer: ahead.gatewayServer,
    });
    const replica = buildReplica({
      ...base,
      traffic,
      shared: shared.replicaParts?.shared,
      gpus: machine.gpus,
      replicaId: shared.replicaId,
    });
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
  controller: ControllerView;
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
      // On Kubernetes with node agents, the GPU nodes' caches, filled by their agents (docs/models.md).
      cache: machine.runtime.modelCache ?? shared.modelCache,
      token: (ownerId, model) => shared.modelAccess.tokenFor(ownerId, model),
    },
    ...(shared.replicaParts?.parts ?? {}),
    jobs: jobsForTraffic(options.jobs),
    onTraffic: (endpointId, at) => idle.mark(endpointId, at),
    termObserver: options.controller,
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
  const { clusterSignals } = traffic;
  const { imageGuard, modelCache, replicaId } = shared;
  return buildApi({
    config,
    store,
    usage: shared.usage,
    modelCache,
    models: {
      cache: modelCache,
      // On Kubernetes with node agents, each GPU node's cache too: listed per node, pulled into and removed from every node.
      machines: runtime.modelCache,
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
    ...(clusterSignals
      ? { otherReplicas: { replicaId, load: (id: string) => clusterSignals.othersLoad(id) } }
      : {}),
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
