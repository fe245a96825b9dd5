/**
 * The worker and traffic side of `corral serve`: the routing table, the gateway, the scaler and the controller,
 * built in dependency order and connected; nothing listens or runs until `start` (or a term) begins.
 */
import type { Server } from 'node:http';
import { totalmem } from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ScalerMetrics } from '../autoscaler/metrics.js';
import { Scaler } from '../autoscaler/scaler.js';
import type { ClusterSignals } from '../cluster/cluster-signals.js';
import { ControllerTermSwitch, type TermObserver } from '../cluster/controller-terms.js';
import type { TermFence } from '../cluster/elector.js';
import { FencedRuntime } from '../cluster/fenced-runtime.js';
import type { Config } from '../config/config.js';
import { Controller, type ControllerOptions } from '../controller/controller.js';
import { httpProbe } from '../controller/health/http-probe.js';
import { ControllerMetrics } from '../controller/metrics.js';
import { OutputKeeper } from '../controller/output/output-keeper.js';
import {
  inventoryPlacement,
  schedulerPlacement,
  type WorkerPlacement,
} from '../controller/placement/worker-placement.js';
import { RoutingTable } from '../controller/routing-table.js';
import { workerMemoryGBPerGpu } from '../controller/workers/worker-spec.js';
import { Gateway, type GatewayForwarding } from '../gateway/gateway.js';
import { GatewayMetrics, type GatewayMetricsSources } from '../gateway/metrics.js';
import { WorkerPools } from '../gateway/pools.js';
import type { GatewayRoute } from '../gateway/router.js';
import { closeGatewayServer, gatewayServer, SHUTDOWN_GRACE_MS, serveGateway } from '../gateway/server.js';
import type { Gpu } from '../gpu/inventory.js';
import { type HistorySources, TrafficHistory } from '../history/history.js';
import { type Clock, systemClock, systemTimers } from '../ports/clock.js';
import type { QueueSignals } from '../ports/queue-signals.js';
import type { WorkerRuntime } from '../runtime/types.js';
import { CallerKeys } from '../service/caller-keys.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';
import type { Store } from '../store/store.js';
import { NO_PRICES } from '../usage/prices.js';
import { UsageRecorder } from '../usage/recorder.js';
import { registerUsageMetrics } from '../usage/usage-metrics.js';

export interface TrafficParts<M extends GatewayMetrics> {
  config: Pick<Config, 'domain' | 'gateway' | 'controller' | 'limits' | 'networkStorages'> &
    Partial<Pick<Config, 'workers' | 'history' | 'connections' | 'usage'>>;
  store: Store;
  runtime: WorkerRuntime;
  gpus: Gpu[];
  logger: Logger;
  /** Where the controller's and the gateway's metrics go; one registry for every role of this process. */
  registry: Registry;
  clock?: Clock;
  /** Who may call an endpoint's URL (shared with the API in `corral serve`); absent: built here. */
  invokeKeys?: InvokeKeyService;
  /** Registry credentials for an image pull, by owner and authId (none: every image is pulled anonymously). */
  revealCredentials?: ControllerOptions['revealCredentials'];
  /** Whether the owner may run the image, before each worker start; none: the pull alone decides. */
  imageAccess?: ControllerOptions['imageAccess'];
  /** This installation's id, labelled on every worker (none: the controller takes every managed worker as its own). */
  installationId?: string;
  /** Resolves `{{ CORRAL_SECRET_name }}` in a starting worker's env (none: env values as written). */
  resolveEnv?: ControllerOptions['resolveEnv'];
  /** Owners' budgets: past one, the controller starts no worker of theirs beyond minNum. */
  budgets?: ControllerOptions['budgets'];
  /** The model cache and the owners' hub tokens: workers of endpoints naming models wait in `downloading`. */
  models?: ControllerOptions['models'];
  /** The gateway's metrics object (a benchmark records more than `GatewayMetrics` does). */
  gatewayMetrics?: (options: { registry: Registry } & GatewayMetricsSources) => M;
  /** The autoscaler's metrics object (a benchmark records each decision). */
  scalerMetrics?: (options: { registry: Registry }) => ScalerMetrics;
  /** Several replicas: the table the gateway routes by, filled from the store (none: the controller's own). */
  gatewayRoutes?: RoutingTable;
  /**
   * Several replicas: the scaler's signals over this gateway's and every other replica's (none: this gateway's
   * alone); the controller also waits for the other gateways' requests on a worker before its removal.
   */
  signals?: (local: QueueSignals) => ClusterSignals;
  /** Several replicas: where the gateway forwards what it holds no slot for (its own pools to the others). */
  forwarding?: Omit<GatewayForwarding, 'pools'>;
  /** Told of each controller term's switch (`corral serve`: the controller as the parts built before it see it). */
  termObserver?: TermObserver<Controller>;
  /** The gateway's server, created first (`trafficServer`: its address is read by parts built before this); absent: made here. */
  server?: Server;
  /** Told of each request the gateway answers (the idle policies' last traffic; memory only). */
  onTraffic?: (endpointId: string, at: number) => void;
  /** The jobs side (app/build-jobs.ts): its client routes, queued jobs as signals, queue workers' env and health. */
  jobs?: {
    routes: readonly GatewayRoute[];
    /**
     * The one cache of callers' key checks, shared with the jobs routes (with the keys of http jobs' deliveries:
     * the gateway lets each call its own endpoint alone; no worker sees one).
     */
    callerKeys: CallerKeys;
    signals: (signals: QueueSignals) => QueueSignals;
    protocolEnv: NonNullable<ControllerOptions['protocolEnv']>;
    queueProbe: NonNullable<ControllerOptions['queueProbe']>;
    workerEnded: NonNullable<ControllerOptions['onWorkerEnded']>;
    /** The jobs' counts and live jobs, for the history's samples. */
    history?: {
      counters: NonNullable<HistorySources['jobs']>;
      live: NonNullable<HistorySources['liveJobs']>;
    };
  };
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
  /** Several replicas: the scaler's signals over every replica's queues (`parts.signals`); else none. */
  clusterSignals: ClusterSignals | undefined;
  /** The gateway's HTTP server (requests and upgrades), not listening: the caller picks the address. */
  server: Server;
  /** Starts the controller's loop (one process: it always leads). */
  start(): void;
  /**
   * Asks the running controller for the endpoint's reconcile (without one: its whole pass); nothing while none runs
   * (a replica that does not lead).
   */
  poke(endpointId?: string): void;
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
  const { config, runtime, logger, registry } = parts;
  const clock = parts.clock ?? systemClock;
  const routes = new RoutingTable();
  // Corral places workers on its GPU inventory, unless the runtime's own scheduler places them (kubernetes).
  const placement = runtime.gpuScheduler
    ? schedulerPlacement(runtime.gpuScheduler)
    : inventoryPlacement(parts.gpus);
  // Read at scrape time, once the gateway and the controller's terms below exist.
  const sources: GatewayMetricsSources = {
    load: () => gateway.stats(),
    workers: () => terms.controller.workers(),
  };
  const gatewayMetrics = parts.gatewayMetrics
    ? parts.gatewayMetrics({ registry, ...sources })
    : (new GatewayMetrics({ registry, ...sources }) as M);
  const usage = usageRecorder(parts, clock);
  const { gateway, pools, peerPools } = buildGateway(parts, {
    routes,
    placement,
    gatewayMetrics,
    usage,
    clock,
  });
  const clusterSignals = parts.signals?.(gateway);
  const gatewaySignals = clusterSignals ?? gateway;
  const scaler = new Scaler({
    signals: parts.jobs ? parts.jobs.signals(gatewaySignals) : gatewaySignals,
    clock,
    timers: systemTimers,
    metrics: parts.scalerMetrics ? parts.scalerMetrics({ registry }) : new ScalerMetrics({ registry }),
  });
  const built = { placement, clock, routes, scaler, gateway, clusterSignals, usage };
  const { terms, outputs } = controllerTerms(parts, built);
  const history = trafficHistory(parts, { gatewayMetrics, gateway, terms, scaler, routes, clock });
  const server = serveGateway(parts.server ?? trafficServer(config), gateway);
  return {
    get controller() {
      return terms.controller;
    },
    gateway,
    scaler,
    routes,
    gatewayMetrics,
    history,
    clusterSignals,
    server,
    start: () => {
      void usage.start().catch((err: unknown) => logger.error({ err }, 'cannot read the usage ledger'));
      terms.start();
    },
    poke: (endpointId) => terms.poke(endpointId),
    async lead(fence) {
      await terms.lead(fence);
      await usage.start();
    },
    async stepDown() {
      await terms.stepDown();
      await usage.stop();
    },
    async close() {
      history?.stop();
      await terms.close();
      await usage.stop();
      await outputs.close();
      scaler.close();
      gateway.close();
      await closeGatewayServer(server, { graceMs: SHUTDOWN_GRACE_MS, timers: systemTimers });
      await pools.close();
      await peerPools?.close();
    },
  };
}

/**
 * The controller's terms over its options (one process: this controller always; replicas: a fresh one per term, its
 * runtime and store writes fenced), with its metrics, and the keeper of workers' last output it writes to.
 */
function controllerTerms(
  parts: TrafficParts<GatewayMetrics>,
  built: Pick<ControllerOptions, 'placement' | 'clock' | 'routes' | 'usage'> & {
    scaler: Scaler;
    gateway: Gateway;
    clusterSignals: ClusterSignals | undefined;
  },
) {
  const { store, runtime, registry } = parts;
  const metrics = new ControllerMetrics({
    registry,
    runtime: runtime.name,
    // Read at scrape time, once the terms below exist.
    workerStates: () => terms.controller.workers().map((w) => w.state),
  });
  // Kept in the store, which the API reads: a worker's last output outlives its container (docs/workers.md).
  const outputs = new OutputKeeper({
    logs: (workerId, options) => runtime.logs(workerId, options),
    outputs: store.workerOutputs,
    clock: built.clock,
    timers: systemTimers,
    logger: parts.logger.child({ role: 'controller' }),
  });
  const controllerOptions = controllerOptionsOf(parts, { ...built, metrics, outputs });
  const terms = new ControllerTermSwitch({
    ...(parts.termObserver ? { observer: parts.termObserver } : {}),
    create: (fence?: TermFence) =>
      new Controller(
        fence
          ? {
              ...controllerOptions,
              fence,
              runtime: new FencedRuntime({ runtime, fence, leases: store.leases }),
            }
          : controllerOptions,
      ),
  });
  return { terms, outputs };
}

/** The gateway's HTTP server with the configured deadlines, not serving yet: `buildTraffic` hands it the gateway. */
export function trafficServer(
  config: Pick<Config, 'gateway' | 'limits'> & Partial<Pick<Config, 'connections'>>,
): Server {
  return gatewayServer({
    maxRequestTimeoutSeconds: config.limits.requestTimeoutSeconds.max,
    queueTimeoutSeconds: config.gateway.queueTimeoutSeconds,
    ...(config.connections ? { limits: config.connections.gateway } : {}),
  });
}

/** The usage ledger: told by the leading controller and this replica's gateway, written while this replica leads. */
function usageRecorder(parts: TrafficParts<GatewayMetrics>, clock: Clock): UsageRecorder {
  const { store, registry, config } = parts;
  const usage = new UsageRecorder({
    segments: store.usageSegments,
    clock,
    timers: systemTimers,
    logger: parts.logger.child({ role: 'usage' }),
  });
  registerUsageMetrics({
    registry,
    observed: (now) => usage.observed(now),
    prices: config.usage ?? NO_PRICES,
    clock,
  });
  return usage;
}

/** The gateway over the routing table (the store's, with several replicas), its worker pools and its peers'. */
function buildGateway<M extends GatewayMetrics>(
  parts: TrafficParts<M>,
  built: {
    routes: RoutingTable;
    placement: WorkerPlacement;
    gatewayMetrics: M;
    usage: UsageRecorder;
    clock: Clock;
  },
) {
  const { config, store } = parts;
  const { usage, placement, clock } = built;
  const pools = new WorkerPools({ keepAliveTimeoutMs: config.gateway.workerKeepAliveMs });
  const invokeKeys = parts.invokeKeys ?? new InvokeKeyService({ store, clock });
  const peerPools =
    parts.forwarding && new WorkerPools({ keepAliveTimeoutMs: config.gateway.workerKeepAliveMs });
  const gateway = new Gateway({
    onWorkerBusy: (workerId, busy, at) => usage.workerBusy(workerId, busy, at),
    ...(parts.onTraffic ? { onTraffic: parts.onTraffic } : {}),
    metrics: built.gatewayMetrics,
    routing: parts.gatewayRoutes ?? built.routes,
    pools,
    domain: config.domain,
    clock,
    logger: parts.logger.child({ role: 'gateway' }),
    bodyLimitBytes: config.gateway.bodyLimitBytes,
    maxQueueLength: config.gateway.maxQueueLength,
    queueTimeoutMs: config.gateway.queueTimeoutSeconds * 1000,
    findEndpoint: (appName) => store.endpoints.findByAppName(appName),
    findWorker: async (workerId) => {
      const worker = await store.workers.get(workerId);
      return worker && { endpointId: worker.endpointId, state: worker.status.state };
    },
    neverPlaceable: (endpoint) => placement.whyNeverPlaceable(endpoint.spec),
    keys:
      parts.jobs?.callerKeys ??
      new CallerKeys({ verify: (key) => invokeKeys.grant(key), clock, timers: systemTimers }),
    ...(parts.jobs ? { routes: parts.jobs.routes } : {}),
    ...(parts.forwarding && peerPools ? { forwarding: { ...parts.forwarding, pools: peerPools } } : {}),
  });
  return { gateway, pools, peerPools };
}

/** The controller's options: its parts, the jobs side's queue workers, the configured timings and limits. */
function controllerOptionsOf(
  parts: TrafficParts<GatewayMetrics>,
  built: Pick<ControllerOptions, 'placement' | 'clock' | 'routes' | 'metrics' | 'outputs' | 'usage'> & {
    scaler: Scaler;
    gateway: Gateway;
    clusterSignals: ClusterSignals | undefined;
  },
): ControllerOptions {
  const { config, store, runtime, logger } = parts;
  const drainTimeoutMs = config.limits.requestTimeoutSeconds.max * 1000;
  // Configured, or each GPU's share of the machine; callers without a `workers` section keep no limit.
  const memoryGBPerGpu =
    config.workers && workerMemoryGBPerGpu(config.workers.memoryGBPerGpu, totalmem(), parts.gpus.length);
  if (config.workers)
    logger.info({ memoryGBPerGpu: memoryGBPerGpu ?? 'none' }, 'worker memory limit per GPU');
  const { scaler, gateway, clusterSignals, ...own } = built;
  return {
    ...own,
    store,
    runtime,
    gpus: parts.gpus,
    probe: httpProbe,
    logger: logger.child({ role: 'controller' }),
    scaling: scaler,
    storagePaths: new Map(config.networkStorages.map((s) => [s.id, s.hostPath])),
    ...(parts.installationId === undefined ? {} : { installationId: parts.installationId }),
    readOnlyStorages: new Set(config.networkStorages.filter((s) => s.readOnly).map((s) => s.id)),
    revealCredentials: parts.revealCredentials ?? (async () => undefined),
    ...(parts.imageAccess ? { imageAccess: parts.imageAccess } : {}),
    ...(parts.resolveEnv ? { resolveEnv: parts.resolveEnv } : {}),
    ...(parts.budgets ? { budgets: parts.budgets } : {}),
    ...(parts.models ? { models: parts.models } : {}),
    ...(parts.jobs
      ? {
          protocolEnv: parts.jobs.protocolEnv,
          queueProbe: parts.jobs.queueProbe,
          onWorkerEnded: parts.jobs.workerEnded,
        }
      : {}),
    startupTimeoutMs: config.controller.startupTimeoutSeconds * 1000,
    crashResetMs: config.controller.crashResetSeconds * 1000,
    unhealthyTimeoutMs: config.controller.unhealthyTimeoutSeconds * 1000,
    ...(memoryGBPerGpu === undefined ? {} : { memoryGBPerGpu }),
    ...(config.workers?.suspendedMemoryGB === undefined
      ? {}
      : { suspendBudgetBytes: Math.floor(config.workers.suspendedMemoryGB * 1e9) }),
    intervalMs: config.controller.reconcileIntervalMs,
    awaitDrained: async (endpointId, workerId) => {
      await Promise.all([
        gateway.awaitDrained(endpointId, workerId, drainTimeoutMs),
        clusterSignals?.awaitDrained(endpointId, workerId, drainTimeoutMs),
      ]);
    },
  };
}

/** Each endpoint's samples for the dashboard's charts; none where `config.history` keeps none. */
function trafficHistory<M extends GatewayMetrics>(
  parts: TrafficParts<M>,
  built: {
    gatewayMetrics: M;
    gateway: Gateway;
    terms: ControllerTermSwitch<Controller>;
    scaler: Scaler;
    routes: RoutingTable;
    clock: Clock;
  },
): TrafficHistory | undefined {
  const { history } = parts.config;
  if (!history || history.samples <= 0) return undefined;
  const { gatewayMetrics, gateway, terms, scaler } = built;
  return new TrafficHistory({
    ...history,
    sources: {
      counters: () => gatewayMetrics.counters(),
      load: () => gateway.stats(),
      workers: () => terms.controller.workers(),
      desired: (endpointId) => scaler.desired(endpointId),
      // The gateway's table: a follower's controller publishes none, and its history must keep its traffic.
      exists: (endpointId) => (parts.gatewayRoutes ?? built.routes).endpointById(endpointId) !== undefined,
      ...(parts.jobs?.history
        ? { jobs: parts.jobs.history.counters, liveJobs: parts.jobs.history.live }
        : {}),
    },
    clock: built.clock,
    timers: systemTimers,
  });
}
