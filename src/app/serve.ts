/**
 * `corral serve`: checks the settings, opens the store, makes sure a key exists, builds the runtime, the traffic
 * side, the replica and the API, listens on both addresses, and starts the controller once the runtime is ready.
 * Everything it opened is closed in reverse order by `close`, or at once when a step fails.
 */
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { rateLimitShare } from '../cluster/shares.js';
import { replicaGpus } from '../cluster/stored-gpus.js';
import { type Config, formatHostPort } from '../config/config.js';
import { listenError } from '../config/startup.js';
import { SecretBox } from '../crypto/secret-box.js';
import type { WorkerState } from '../domain/worker.js';
import { UnavailableCheckpointer } from '../gpu/checkpoint/unavailable-checkpointer.js';
import { systemClock, systemTimers } from '../ports/clock.js';
import type { GpuCheckpointer } from '../ports/gpu-checkpoint.js';
import { idleTiersOff } from '../runtime/idle-tiers.js';
import { runtimeReadiness, runtimeReady, selectRuntime } from '../runtime/select.js';
import type { WorkerRuntime } from '../runtime/types.js';
import { newInstallationId, newReplicaId } from '../service/ids.js';
import { ModelAccess } from '../service/model-access.js';
import { LedgerReader } from '../usage/ledger-reader.js';
import { apiServices, buildApi } from './build-api.js';
import { buildIdlePolicies } from './build-idle-policy.js';
import { buildJobs, jobsForTraffic } from './build-jobs.js';
import { buildModelCache } from './build-model-cache.js';
import { buildReplica, sharedTrafficOf } from './build-replica.js';
import { buildTraffic } from './build-traffic.js';
import { buildWebhooks } from './build-webhooks.js';
import { connectionsUnderFileLimit, guardListener } from './connection-limits.js';
import { ensureKeys } from './first-key.js';
import { gpuCheckpointFor } from './gpu-checkpoint.js';
import { imageAccessGuard, ownerIsAdmin } from './image-guard.js';
import { jobActionsOf } from './job-actions.js';
import { listen, listeningPort } from './listen.js';
import { modelUsers } from './model-users.js';
import { openServeStore, startupSettings } from './startup.js';
import { inventoryFor, logIdleTiers, warnOfTenantEndpoints } from './startup-checks.js';
import {
  kubernetesWorkersUnreachable,
  kubernetesWorkersUrl,
  workerFacingBaseUrl,
} from './worker-facing-url.js';
import { DEFAULT_WORKER_LISTENER_LIMITS, startWorkerListener } from './worker-listener.js';
import { placeWorkerListener, type WorkerListenerPlace } from './worker-listener-place.js';

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
  // The three listeners' connection caps fit under the open-file limit, with files left for the rest of the process.
  const fitted = connectionsUnderFileLimit(configured, DEFAULT_WORKER_LISTENER_LIMITS, logger);
  const config: Config = { ...configured, connections: fitted.connections };
  // Everything that can be wrong with the configuration is found before anything is written.
  const { secretKey, operatorKey } = startupSettings(config, io.env, logger);
  const { store, release } = await openServeStore(config, logger);
  const closers: (() => Promise<void>)[] = [async () => release(), () => store.close()];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close();
  };
  try {
    const installationId = await store.installation.ensure(newInstallationId(), systemClock());
    logger.info({ database: store.describe(), installationId }, 'store ready');
    // Port 0 (any free port) has no URL to print yet: the banner then leaves CORRAL_API_URL out.
    const bannerUrl = config.apiAddr.port === 0 ? undefined : config.apiUrl;
    await ensureKeys(store, { ...io, operatorKey, apiUrl: bannerUrl });
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
    const { gpuScheduler } = runtime;
    // Where the runtime's scheduler places workers, Corral keeps no GPU inventory of its own.
    if (gpuScheduler && config.gpus.kind === 'simulated')
      logger.warn("--gpus is ignored: the runtime's scheduler places workers on the cluster's GPUs");
    const gpus = gpuScheduler ? [] : await inventoryFor(config, logger);
    if (runtime.name === 'local') await warnOfTenantEndpoints(store, logger);
    const tiersOff = idleTiersOff(runtime);
    logIdleTiers(runtime, tiersOff, logger);
    const queueOff = runtime.name === 'kubernetes' ? kubernetesWorkersUnreachable(config.workers) : undefined;
    if (queueOff !== undefined) logger.warn({ reason: queueOff }, 'queue endpoints are refused');
    // Each service once, shared by the API and the traffic side.
    const secrets = new SecretBox({ key: secretKey });
    // Budgets read the usage ledger (cached per owner for a few seconds); the reader prices its sums.
    const usage = new LedgerReader({
      segments: store.usageSegments,
      prices: config.usage,
      clock: systemClock,
    });
    const services = apiServices({
      config,
      store,
      gpus,
      secrets,
      gpuScheduler,
      usage,
      onBudgetReadError: (error, ownerId) =>
        logger.warn({ err: error, ownerId }, 'could not read an owner budget from the usage ledger'),
    });
    const { credentials, ownerSecrets, invokeKeys } = services;
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
    const imageGuard = imageAccessGuard(runtime, config, credentials);
    const replicaId = newReplicaId();
    const sharedParts = sharedTrafficOf({ store, replicaId, logger });
    // The process's own memory, CPU, event-loop delay and GC, beside Corral's metrics.
    collectDefaultMetrics({ register: registry });
    // The jobs side first: the gateway serves its client routes, the controller starts queue workers with its env.
    const late: {
      poke: () => void;
      workers: () => { id: string; endpointId: string; state: string }[];
      workersOf: (endpointId: string) => { id: string; state: WorkerState }[];
      controls: () => boolean;
      leading: () => boolean;
      changed: (endpointId: string) => void;
      gatewayUrl: string | undefined;
      workersUrl: string;
    } = {
      poke: () => {},
      workers: () => [],
      workersOf: () => [],
      controls: () => false,
      leading: () => false,
      changed: () => {},
      gatewayUrl: undefined,
      workersUrl: '',
    };
    const jobs = await buildJobs({
      store,
      settings: config.jobs,
      clock: systemClock,
      timers: systemTimers,
      logger,
      domain: config.domain,
      verifyKey: (key) => invokeKeys.grant(key),
      get workersUrl() {
        return late.workersUrl;
      },
      poke: () => late.poke(),
      replicaId,
      gatewayUrl: () => late.gatewayUrl,
      webhooks: jobWebhooks.webhooks,
      quotaOf: async (ownerId) => (await services.quotas.quotaOf(ownerId)).quota,
      budgets: services.budgets,
      // Replicas split each owner's submission rate as they split the API's (read at each submission).
      submissionRateShare: () =>
        shared ? rateLimitShare(config.jobs.submissionRate, shared.split()) : config.jobs.submissionRate,
      registry,
      // The controller's word where this replica leads and has adopted the runtime's workers; else the store's.
      workerState: (endpointId, workerId) =>
        late.controls()
          ? (late.workersOf(endpointId).find((w) => w.id === workerId)?.state ?? null)
          : undefined,
      runningWorkers: (endpointId) =>
        late
          .workers()
          .filter((w) => w.endpointId === endpointId && w.state === 'running')
          .map((w) => w.id),
    });
    closers.push(() => jobs.close());
    // Idle policies (docs/idle-policies.md): every replica marks its traffic; the leader's pass lowers maxWorkers.
    const idle = buildIdlePolicies({
      store,
      policies: config.idlePolicies,
      leading: () => late.leading(),
      clock: systemClock,
      timers: systemTimers,
      logger: logger.child({ part: 'idle-policy' }),
      onChanged: (endpointId) => late.changed(endpointId),
    });
    closers.push(() => idle.close());
    jobs.events.on('queued', ({ endpointId }) => idle.mark(endpointId, systemClock()));
    const traffic = buildTraffic({
      config,
      store,
      runtime,
      gpus,
      logger,
      registry,
      invokeKeys,
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
      ...(services.budgets ? { budgets: services.budgets } : {}),
      models: { cache: modelCache, token: (ownerId, model) => modelAccess.tokenFor(ownerId, model) },
      ...(sharedParts?.parts ?? {}),
      jobs: jobsForTraffic(jobs),
      onTraffic: (endpointId, at) => idle.mark(endpointId, at),
    });
    late.poke = () => traffic.poke();
    late.workers = () => traffic.controller.workers();
    late.workersOf = (endpointId) => traffic.controller.workersOf(endpointId);
    const { gateway } = traffic;
    const shared = sharedParts?.shared;
    const replica = buildReplica({ config, store, traffic, shared, gpus, replicaId, logger });
    const { leadership, storedGpus, clusterHistory } = replica;
    late.controls = () => leadership.leading() && traffic.controller.adopted;
    late.leading = () => leadership.leading();
    late.changed = (endpointId) => {
      traffic.poke(endpointId);
      shared?.requestPass();
    };
    idle.start();
    if (storedGpus) {
      await storedGpus.start();
      closers.push(() => storedGpus.stop());
    }
    const bound = { apiUrl: config.apiUrl, gatewayPort: config.gatewayAddr.port };
    const app = await buildApi({
      config,
      store,
      usage,
      modelCache,
      models: {
        cache: modelCache,
        users: async (ownerId) => modelUsers(await store.endpoints.listAll(), ownerId),
      },
      gpus,
      logger,
      secrets,
      services,
      jobActions: jobActionsOf(jobs.service),
      ...replicaGpus({
        gpus,
        leading: () => leadership.leading(),
        controller: () => traffic.controller,
        ...(storedGpus ? { stored: storedGpus } : {}),
      }),
      ...(gpuScheduler ? { gpuScheduler } : {}),
      ...(tiersOff === undefined ? {} : { idleTiersOff: tiersOff }),
      ...(queueOff === undefined ? {} : { queueOff }),
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
      databaseTookLastBeat: () => replica.databaseTookLastBeat(),
      onEndpointsChanged: (endpointId) => {
        traffic.poke(endpointId);
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
    // http jobs go through this replica's own gateway, on this host.
    late.gatewayUrl = `http://${formatHostPort({ host: loopbackOf(config.gatewayAddr.host), port: bound.gatewayPort })}`;
    closers.push(() => traffic.close());
    // The worker-facing listener: queue workers take their jobs here (docs/jobs-internals.md). On Docker it binds
    // on the address the runtime says (worker-listener-place.ts), once an awaited engine answers.
    const openWorkersListener = async () => {
      const address = await place.address(runtime.name);
      const workersListener = await startWorkerListener({
        address,
        handler: jobs.workerHandler,
        logger,
        limits: fitted.workers,
      }).catch((error: unknown) => {
        throw new Error(
          `cannot listen on workers.listen ${formatHostPort(address)}: ${error instanceof Error ? error.message : String(error)}`,
        );
      });
      closers.push(() => workersListener.close());
      late.workersUrl =
        runtime.name === 'kubernetes'
          ? kubernetesWorkersUrl({ listen: address, advertiseUrl: config.workers.advertiseUrl })
          : (config.workers.advertiseUrl ??
            workerFacingBaseUrl({
              runtime: runtime.name,
              address: address.host,
              port: workersListener.address.port,
            }));
    };
    const awaitingEngine = !runtimeReadiness(runtime).ready;
    if (!awaitingEngine) await openWorkersListener();
    jobs.start();
    // Deliveries left in the outbox by a process that stopped are sent from now on.
    await jobWebhooks.start();
    closers.push(() => jobWebhooks.stop());
    closers.push(
      ...(await replica.start({ apiUrl: () => bound.apiUrl, gatewayPort: () => bound.gatewayPort })),
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
        await leadership.begin();
      })
      .catch((error: unknown) => logger.error({ err: error }, 'the controller could not start'));
    const apiUrl = `http://${formatHostPort({ host: config.apiAddr.host, port: listeningPort(app) })}`;
    const gatewayUrl = `http://${formatHostPort({ host: config.gatewayAddr.host, port: bound.gatewayPort })}`;
    logger.info(
      {
        apiUrl,
        gatewayUrl,
        workersUrl: late.workersUrl,
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
