/**
 * `GET endpoint/metrics`: an endpoint's workers (from the store) beside its traffic (this process's gateway; with
 * several replicas, its queue depth and in-flight requests are every live replica's) and its jobs (the store's
 * counts now, the history's last minutes).
 */
import type { FastifyInstance } from 'fastify';
import { ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readQueryId } from '../../contract/query.js';
import type {
  WireEndpointHistory,
  WireEndpointMetrics,
  WireEndpointMetricsJobs,
} from '../../contract/wire.js';
import { systemClock } from '../../ports/clock.js';
import {
  type EndpointHistory,
  type EndpointTraffic,
  NO_RECENT_JOBS,
  type RecentTraffic,
} from '../../ports/traffic.js';
import type { UsageReader } from '../../ports/usage.js';
import type { AppOptions } from '../app.js';

type Query = Record<string, string | string[] | undefined>;

/** The gateway's side of an endpoint's metrics, where this process runs a gateway. */
export type TrafficSource = (endpointId: string) => EndpointTraffic;

/**
 * With several replicas: this replica's id (the since-start totals are its gateway's only), and the endpoint's
 * requests queued and in flight on the other live replicas' gateways, as their `gateway_signals` rows say it now.
 */
export interface OtherReplicasSource {
  replicaId: string;
  load(endpointId: string): Promise<{ queueLength: number; inFlight: number }>;
}

/**
 * The history kept of each endpoint, where this process keeps one: its own (history/history.ts), or with several
 * replicas every replica's merged from the store (history/cluster-history.ts).
 */
export interface HistorySource {
  of(endpointId: string): EndpointHistory | Promise<EndpointHistory>;
  recent(endpointId: string): RecentTraffic | undefined | Promise<RecentTraffic | undefined>;
}

/** The autoscaler's desired worker count of an endpoint; undefined where it has not decided. */
export type DesiredSource = (endpointId: string) => number | undefined | Promise<number | undefined>;

/**
 * `GET endpoint/metrics?id=`: one endpoint's figures, as the endpoint's `metrics` URL gives them. Workers by state
 * come from the store (any API replica has them); the traffic (requests by status, latency, queue wait, cold
 * starts, thaws, restores) from this process's gateway since it started, with that window (and, with several replicas, this
 * replica) stated, null where none runs; the queue depth and in-flight requests now are this gateway's plus every
 * other live replica's; the GPU time of the last hour and day from the usage ledger (the store's). Another owner's
 * id answers 404, as everywhere.
 */
export function registerEndpointMetricsRoute(api: FastifyInstance, o: AppOptions): void {
  registerHistoryRoute(api, o);
  api.get('/endpoint/metrics', async (request): Promise<WireEndpointMetrics> => {
    const id = readQueryId(request.query as Query, ENDPOINT_ID_KEYS);
    const endpoint = await o.endpoints.get(request.principal, id);
    const workers: Record<string, number> = {};
    let readyWorkers = 0;
    for (const worker of await o.workers.listByEndpoint(endpoint.id)) {
      workers[worker.status.state] = (workers[worker.status.state] ?? 0) + 1;
      if (worker.status.state === 'running' && worker.healthy) readyWorkers += 1;
    }
    const traffic = o.traffic?.(endpoint.id);
    const others = traffic && o.otherReplicas ? await o.otherReplicas.load(endpoint.id) : undefined;
    const recent = o.history ? ((await o.history.recent(endpoint.id)) ?? NO_RECENT_TRAFFIC) : undefined;
    const jobs: WireEndpointMetricsJobs | undefined = o.jobCounts
      ? {
          ...(await o.jobCounts(endpoint.id)),
          recent: recent ? { seconds: recent.seconds, ...recent.jobs } : null,
        }
      : undefined;
    return {
      id: endpoint.id,
      workers,
      readyWorkers,
      window: traffic
        ? {
            since: new Date(traffic.window.since).toISOString(),
            seconds: traffic.window.seconds,
            replica: o.otherReplicas?.replicaId ?? null,
          }
        : null,
      requests: traffic?.requests ?? null,
      latencyMs: traffic?.latencyMs ?? null,
      queueWaitMs: traffic?.queueWaitMs ?? null,
      queueDepth: traffic ? traffic.queueDepth + (others?.queueLength ?? 0) : null,
      inFlight: traffic ? traffic.inFlight + (others?.inFlight ?? 0) : null,
      coldStarts: traffic?.coldStarts ?? null,
      thaws: traffic?.thaws ?? null,
      restores: traffic?.restores ?? null,
      wakes: traffic ? { thaw: traffic.thaws, restore: traffic.restores, cold: traffic.coldStarts } : null,
      desiredWorkers: endpoint.desired === 'stopped' ? 0 : ((await o.desiredWorkers?.(endpoint.id)) ?? null),
      recent: recent ? recentRequests(recent) : null,
      ...(jobs ? { jobs } : {}),
      ...(o.usage ? { usage: await lastHourAndDay(o.usage, endpoint.id, systemClock()) } : {}),
    };
  });
}

/** The endpoint's workers' usage over the last hour and the last day, from the ledger (two grouped reads). */
async function lastHourAndDay(usage: UsageReader, endpointId: string, now: number) {
  const [lastHour, lastDay] = await Promise.all([
    usage.totals({ endpointId }, now - HOUR_MS, now),
    usage.totals({ endpointId }, now - 24 * HOUR_MS, now),
  ]);
  return { lastHour, lastDay };
}

const HOUR_MS = 3_600_000;

/** Where the history has no ring for the endpoint: nothing happened in it for the history's whole length. */
const NO_RECENT_TRAFFIC: RecentTraffic = {
  seconds: 0,
  requests: 0,
  requestsPerMinute: 0,
  latencyMs: { p50: null, p99: null },
  jobs: NO_RECENT_JOBS,
};

/** The requests of the last minutes (their jobs are answered in `jobs.recent`). */
function recentRequests({ jobs: _jobs, ...requests }: RecentTraffic): Omit<RecentTraffic, 'jobs'> {
  return requests;
}

/**
 * `GET endpoint/metrics/history?id=`: the samples the history keeps of the endpoint (the dashboard's charts), with
 * the same rules as `endpoint/metrics`; empty columns and a null interval where this process keeps none.
 */
function registerHistoryRoute(api: FastifyInstance, o: AppOptions): void {
  api.get('/endpoint/metrics/history', async (request): Promise<WireEndpointHistory> => {
    const id = readQueryId(request.query as Query, ENDPOINT_ID_KEYS);
    const endpoint = await o.endpoints.get(request.principal, id);
    const history = await o.history?.of(endpoint.id);
    if (!history) {
      return {
        id: endpoint.id,
        intervalSeconds: null,
        capacity: 0,
        at: [],
        requests: { ok: [], clientErrors: [], serverErrors: [] },
        latencyMs: { p50: [], p99: [] },
        queue: { depth: [], oldestWaitMs: [] },
        inFlight: [],
        workers: {},
        desiredWorkers: [],
        coldStarts: { count: [], meanMs: [] },
        thaws: { count: [], meanMs: [] },
        restores: { count: [], meanMs: [] },
        jobs: {
          inQueue: [],
          inProgress: [],
          completed: [],
          failed: [],
          cancelled: [],
          timedOut: [],
          retried: [],
          delayMs: { p50: [], p95: [] },
          executionMs: { p50: [], p95: [] },
        },
      };
    }
    return { id: endpoint.id, ...history };
  });
}
