/**
 * Per-endpoint gateway metrics, on the registry /metrics serves. What every request records (its status, latency
 * and queue wait) is kept in plain numbers per endpoint and handed to the registry when it is scraped; prom-client's
 * own per-observation label handling cost the gateway about 5% of its throughput (docs/performance.md).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import {
  type Distribution,
  type EndpointTraffic,
  type EndpointWorker,
  WAKE_TIERS,
  type WakeFigures,
  type WakeTier,
} from '../ports/traffic.js';
import { type HistogramSeries, HotHistogram } from './hot-histogram.js';

/** The latency and queue wait buckets, in seconds (the history's percentiles use them too). */
export const LATENCY_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** One endpoint's per-request metrics, found once per request by endpoint id. */
interface EndpointSeries {
  latency: HistogramSeries;
  queueWait: HistogramSeries;
  /** Requests by status code. */
  byStatus: Map<number, number>;
}

export interface EndpointLoad {
  endpointId: string;
  queueLength: number;
  /** When the oldest waiting request arrived (ms); null or absent with an empty queue. */
  oldestEnqueuedAt?: number | null;
  inFlight: number;
}

/**
 * One endpoint's counts since this gateway began counting it (they start again from zero when a deleted endpoint's
 * series are forgotten), read by the history every interval: it keeps the differences.
 */
export interface TrafficCounters {
  /** Requests answered below 400 (2xx, and 1xx/3xx), 4xx (499: the client left) and 5xx. */
  ok: number;
  clientErrors: number;
  serverErrors: number;
  /** Latency in seconds: the counts in each of LATENCY_BUCKETS (not cumulative; the last is +Inf). */
  latencyCounts: readonly number[];
  /** The smallest and largest latencies (s) since the previous read (infinite without any request). */
  latencyRange: { min: number; max: number };
  /** Wakes from zero by the tier their worker came from, each with the sum of their durations (s). */
  wakes: Record<WakeTier, WakeTotal>;
}

/** Wakes of one tier: how many, and their durations added up (s). */
export interface WakeTotal {
  count: number;
  seconds: number;
}

export interface GatewayMetricsSources {
  /** Queue depth and requests in flight per endpoint (the gateway's). */
  load: () => EndpointLoad[];
  /** Every worker the controller has, read at scrape time for corral_endpoint_workers. */
  workers: () => Iterable<EndpointWorker>;
}

export class GatewayMetrics {
  readonly #latency: HotHistogram;
  readonly #queueWait: HotHistogram;
  readonly #coldStarts: HotHistogram;
  /** Wakes by tier (thaw, restore, cold): few, so prom-client's own labels cost nothing that matters. */
  readonly #wakes: Histogram<'endpoint' | 'tier'>;
  /** Per endpoint and tier: the wakes and their durations (s), for the history and the summary. */
  readonly #wakeTotals = new Map<string, Record<WakeTier, WakeTotal>>();
  readonly #load: () => EndpointLoad[];
  readonly #endpoints = new Map<string, EndpointSeries>();
  readonly #clock: () => number;
  readonly #since: number;

  constructor(options: { registry: Registry; clock?: () => number } & Partial<GatewayMetricsSources>) {
    this.#clock = options.clock ?? Date.now;
    this.#since = this.#clock();
    const registers = [options.registry];
    const endpoints = this.#endpoints;
    new Counter({
      name: 'corral_gateway_requests_total',
      help: 'Requests served by the gateway, by endpoint and status code',
      labelNames: ['endpoint', 'status'] as const,
      registers,
      collect() {
        this.reset();
        for (const [endpoint, series] of endpoints) {
          for (const [status, count] of series.byStatus)
            this.inc({ endpoint, status: String(status) }, count);
        }
      },
    });
    this.#latency = new HotHistogram({
      name: 'corral_gateway_request_duration_seconds',
      help: 'Time from a request arriving to its response ending, queue wait included',
      labelName: 'endpoint',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#queueWait = new HotHistogram({
      name: 'corral_gateway_queue_wait_seconds',
      help: 'Time a request waited for a worker slot',
      labelName: 'endpoint',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#coldStarts = new HotHistogram({
      name: 'corral_gateway_cold_start_seconds',
      help: 'Cold starts (wakes from zero by a new worker, not a thaw or a restore: corral_gateway_wake_seconds has those), one per wake: time from the arrival of the first request that found no routable worker to the first worker becoming routable',
      labelName: 'endpoint',
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    });
    this.#wakes = new Histogram({
      name: 'corral_gateway_wake_seconds',
      help: 'Wakes from zero by tier (thaw: a frozen worker, restore: a suspended one, cold: a new one): time from the first waiting request to the first routable worker',
      labelNames: ['endpoint', 'tier'] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    });
    this.#load = options.load ?? (() => []);
    const load = this.#load;
    new Gauge({
      name: 'corral_gateway_queue_depth',
      help: 'Requests waiting for a worker slot',
      labelNames: ['endpoint'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of load()) this.set({ endpoint: s.endpointId }, s.queueLength);
      },
    });
    new Gauge({
      name: 'corral_gateway_in_flight',
      help: 'Requests being served by workers',
      labelNames: ['endpoint'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of load()) this.set({ endpoint: s.endpointId }, s.inFlight);
      },
    });
    const workers = options.workers ?? (() => []);
    new Gauge({
      name: 'corral_endpoint_workers',
      help: "Workers by endpoint and state (states an endpoint has no worker in are left out); corral_workers is every endpoint's",
      labelNames: ['endpoint', 'state'] as const,
      registers,
      collect() {
        this.reset();
        for (const w of workers()) this.inc({ endpoint: w.endpointId, state: w.state });
      },
    });
  }

  observeRequest(endpoint: string, status: number, durationMs: number, queueMs: number): void {
    let series = this.#endpoints.get(endpoint);
    if (!series) {
      series = {
        latency: this.#latency.series(endpoint),
        queueWait: this.#queueWait.series(endpoint),
        byStatus: new Map(),
      };
      this.#endpoints.set(endpoint, series);
    }
    series.byStatus.set(status, (series.byStatus.get(status) ?? 0) + 1);
    series.latency.observe(durationMs / 1000);
    series.queueWait.observe(queueMs / 1000);
  }

  /** Forgets every series of a deleted endpoint, so that a long-lived server does not keep every one it had. */
  forget(endpoint: string): void {
    this.#endpoints.delete(endpoint);
    this.#latency.remove(endpoint);
    this.#queueWait.remove(endpoint);
    this.#coldStarts.remove(endpoint);
    this.#wakeTotals.delete(endpoint);
    for (const tier of WAKE_TIERS) this.#wakes.remove({ endpoint, tier });
  }

  /** Forgets the series of every endpoint `exists` denies (deleted ones), keeping the others'. */
  retain(exists: (endpoint: string) => boolean): void {
    for (const endpoint of [...this.#endpoints.keys()]) if (!exists(endpoint)) this.forget(endpoint);
  }

  /**
   * One wake from zero (not one per request that waited through it), by the tier its worker came from: only a new
   * worker's is a cold start (a 24 ms thaw averaged with a 3 s cold start would hide both).
   */
  observeColdStart(endpoint: string, ms: number, tier: WakeTier = 'cold'): void {
    if (tier === 'cold') this.#coldStarts.series(endpoint).observe(ms / 1000);
    this.#wakes.observe({ endpoint, tier }, ms / 1000);
    let byTier = this.#wakeTotals.get(endpoint);
    if (!byTier) {
      byTier = noWakes();
      this.#wakeTotals.set(endpoint, byTier);
    }
    byTier[tier] = { count: byTier[tier].count + 1, seconds: byTier[tier].seconds + ms / 1000 };
  }

  /**
   * Every endpoint's counts now (a copy), for the history; reading starts a new latency range, so the history
   * (app/build-traffic.ts wires one) must be the only reader.
   */
  counters(): Map<string, TrafficCounters> {
    const all = new Map<string, TrafficCounters>();
    for (const [endpoint, series] of this.#endpoints) {
      let ok = 0;
      let clientErrors = 0;
      let serverErrors = 0;
      for (const [status, count] of series.byStatus) {
        if (status >= 500) serverErrors += count;
        else if (status >= 400) clientErrors += count;
        else ok += count;
      }
      all.set(endpoint, {
        ok,
        clientErrors,
        serverErrors,
        // A plain array: a copy every interval per endpoint, on the heap rather than a small off-heap buffer.
        latencyCounts: Array.from(series.latency.counts),
        latencyRange: series.latency.takeRange(),
        wakes: { ...(this.#wakeTotals.get(endpoint) ?? noWakes()) },
      });
    }
    for (const [endpoint, wakes] of this.#wakeTotals) {
      if (all.has(endpoint)) continue;
      all.set(endpoint, {
        ok: 0,
        clientErrors: 0,
        serverErrors: 0,
        latencyCounts: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0),
        latencyRange: { min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY },
        wakes: { ...wakes },
      });
    }
    return all;
  }

  /** The endpoint's traffic through this gateway since it started (the API's `endpoint/metrics`). */
  summary(endpoint: string): EndpointTraffic {
    const series = this.#endpoints.get(endpoint);
    const byStatus: Record<string, number> = {};
    let total = 0;
    for (const [status, count] of series?.byStatus ?? []) {
      byStatus[String(status)] = count;
      total += count;
    }
    const load = this.#load().find((s) => s.endpointId === endpoint);
    const wakes = this.#wakeTotals.get(endpoint) ?? noWakes();
    return {
      window: { since: this.#since, seconds: Math.max(0, Math.round((this.#clock() - this.#since) / 1000)) },
      requests: { total, byStatus },
      latencyMs: distribution(series?.latency),
      queueWaitMs: distribution(series?.queueWait),
      queueDepth: load?.queueLength ?? 0,
      inFlight: load?.inFlight ?? 0,
      coldStarts: wakeFigures(wakes.cold),
      thaws: wakeFigures(wakes.thaw),
      restores: wakeFigures(wakes.restore),
    };
  }
}

export function noWakes(): Record<WakeTier, WakeTotal> {
  return {
    thaw: { count: 0, seconds: 0 },
    restore: { count: 0, seconds: 0 },
    cold: { count: 0, seconds: 0 },
  };
}

function wakeFigures(total: WakeTotal): WakeFigures {
  return { count: total.count, meanMs: total.count > 0 ? toMs(total.seconds / total.count) : null };
}

function distribution(series: HistogramSeries | undefined): Distribution {
  if (!series || series.count === 0) return { p50: null, p99: null, mean: null };
  return {
    p50: toMs(series.quantile(0.5) ?? 0),
    p99: toMs(series.quantile(0.99) ?? 0),
    mean: toMs(series.sum / series.count),
  };
}

/** Seconds to milliseconds, to a tenth (the buckets are no finer than a millisecond). */
function toMs(seconds: number): number {
  return Math.round(seconds * 10_000) / 10;
}
