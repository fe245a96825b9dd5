/**
 * What makes this process one replica among several (PostgreSQL, docs/operations.md): the shared traffic (every
 * gateway routes every endpoint from the store, slots and queues shared), leadership over the controller, the
 * GPU holders read from the workers rows, the history merged across replicas, and the heartbeat. With SQLite the
 * same parts reduce to one process that always leads and keeps its own history.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import {
  gatewayLoad,
  HEARTBEAT_INTERVAL_MS,
  HEARTBEAT_PRUNE_AFTER_MS,
  Heartbeat,
} from '../cluster/heartbeat.js';
import { type Leadership, leadershipOf } from '../cluster/leadership.js';
import { SharedPublishers } from '../cluster/shared-publishers.js';
import { SharedTraffic } from '../cluster/shared-traffic.js';
import { STORED_GPUS_INTERVAL_MS, StoredGpus } from '../cluster/stored-gpus.js';
import { advertisedGatewayUrl, type Config } from '../config/config.js';
import { RoutingTable } from '../controller/routing-table.js';
import type { GatewayMetrics } from '../gateway/metrics.js';
import type { Gpu } from '../gpu/inventory.js';
import { ClusterHistory } from '../history/cluster-history.js';
import { systemClock, systemTimers } from '../ports/clock.js';
import type { Store } from '../store/store.js';
import type { Traffic, TrafficParts } from './build-traffic.js';

/** The traffic parts a replica among several adds to `buildTraffic`'s, and the shared traffic behind them. */
export interface SharedTrafficParts {
  shared: SharedTraffic;
  parts: Pick<TrafficParts<GatewayMetrics>, 'gatewayRoutes' | 'signals' | 'forwarding'>;
}

/** Several replicas (a store with a change feed: PostgreSQL): the gateway routes from the store; else none. */
export function sharedTrafficOf(options: {
  store: Store;
  replicaId: string;
  logger: Logger;
}): SharedTrafficParts | undefined {
  const { store, replicaId } = options;
  if (!store.listener) return undefined;
  const gatewayRoutes = new RoutingTable();
  const shared = new SharedTraffic({
    store,
    replicaId,
    gatewayRoutes,
    logger: options.logger.child({ role: 'cluster', replicaId }),
  });
  return {
    shared,
    parts: {
      gatewayRoutes,
      signals: (local) => shared.clusterSignals(local),
      forwarding: {
        self: replicaId,
        target: (workers, capacity) => shared.forwardTarget(workers, capacity),
      },
    },
  };
}

export interface Replica {
  leadership: Leadership;
  /** The workers rows' GPU holders, read every second where gpusFree counts them (PostgreSQL only). */
  storedGpus: StoredGpus | undefined;
  /** Every replica's history merged from the store; none with one process (the traffic's own history serves). */
  clusterHistory: ClusterHistory | undefined;
  /** Whether the database took this replica's last heartbeat (`/healthz` says an outage without a query). */
  databaseTookLastBeat(): boolean;
  /** Starts what runs in the background, once the API and the gateway listen; returns what stops it, in order. */
  start(bound: { apiUrl: () => string; gatewayPort: () => number }): Promise<(() => Promise<void>)[]>;
}

/** The replica around the built traffic side: leadership, stored GPUs, cluster history and heartbeat. */
export function buildReplica(options: {
  config: Config;
  store: Store;
  traffic: Traffic<GatewayMetrics>;
  shared: SharedTraffic | undefined;
  gpus: Gpu[];
  replicaId: string;
  logger: Logger;
}): Replica {
  const { config, store, traffic, shared, gpus, replicaId, logger } = options;
  const publishers = shared && publishersOf({ store, traffic, shared, replicaId, logger });
  const leadership = leadershipOf({
    store,
    terms: publishers ? publishers.terms(traffic) : traffic,
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
  // Several replicas: the history answered is every replica's, merged from the store (docs/operations.md).
  const clusterHistory =
    publishers && traffic.history && config.history
      ? new ClusterHistory({
          replicaId,
          history: traffic.history,
          samples: store.historySamples,
          term: () => publishers.term(),
          localDesired: (endpointId) => traffic.scaler.desired(endpointId),
          clock: systemClock,
          timers: systemTimers,
          intervalSeconds: config.history.intervalSeconds,
          capacity: config.history.samples,
          logger: logger.child({ role: 'cluster', replicaId }),
        })
      : undefined;
  const beats = { accepted: true };
  return {
    leadership,
    storedGpus,
    clusterHistory,
    databaseTookLastBeat: () => beats.accepted,
    async start(bound) {
      const stops: (() => Promise<void>)[] = [];
      if (clusterHistory) {
        clusterHistory.start();
        stops.push(() => clusterHistory.stop());
      } else traffic.history?.start();
      const heartbeat = heartbeatOf({ config, store, traffic, publishers, replicaId, logger, bound, beats });
      await heartbeat.start();
      stops.push(() => heartbeat.stop());
      if (shared && publishers) {
        await shared.start();
        publishers.start();
        stops.push(async () => {
          await publishers.close();
          await shared.close();
        });
      }
      // At a stop the leader steps down first and releases its lease: another replica takes over at once.
      stops.push(() => leadership.end());
      return stops;
    },
  };
}

/** The publishers of this gateway's queues and of the controller's routes, over the shared traffic built first. */
function publishersOf(options: {
  store: Store;
  traffic: Traffic<GatewayMetrics>;
  shared: SharedTraffic;
  replicaId: string;
  logger: Logger;
}): SharedPublishers {
  const { traffic, replicaId } = options;
  const signals = traffic.clusterSignals;
  if (!signals) throw new Error("the shared traffic's signals were not given to the traffic side");
  return new SharedPublishers({
    shared: options.shared,
    store: options.store,
    replicaId,
    gateway: traffic.gateway,
    controllerRoutes: traffic.routes,
    signals,
    poke: () => traffic.poke(),
    timers: systemTimers,
    logger: options.logger.child({ role: 'cluster', replicaId }),
  });
}

/** This replica's heartbeat: its addresses and its gateway's load, each beat; `beats` says whether the last was taken. */
function heartbeatOf(options: {
  config: Config;
  store: Store;
  traffic: Traffic<GatewayMetrics>;
  publishers: SharedPublishers | undefined;
  replicaId: string;
  logger: Logger;
  bound: { apiUrl: () => string; gatewayPort: () => number };
  beats: { accepted: boolean };
}): Heartbeat {
  const { config, traffic, publishers, bound, beats } = options;
  return new Heartbeat({
    replicas: options.store.replicas,
    beat: () => ({
      id: options.replicaId,
      host: hostname(),
      pid: process.pid,
      apiUrl: bound.apiUrl(),
      gatewayUrl: advertisedGatewayUrl(config, bound.gatewayPort(), hostname()),
      ...gatewayLoad(traffic.gateway.stats()),
      ...(publishers ? { settled: publishers.settled() } : {}),
    }),
    intervalMs: HEARTBEAT_INTERVAL_MS,
    pruneAfterMs: HEARTBEAT_PRUNE_AFTER_MS,
    timers: systemTimers,
    logger: options.logger,
    onBeat: (accepted) => {
      beats.accepted = accepted;
    },
  });
}
