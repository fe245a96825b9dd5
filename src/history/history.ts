/**
 * The history behind the dashboard's charts: every interval (10 s by default) one sample per endpoint of what the
 * gateway counted during it (requests by status class, latency p50/p99, wakes from zero by tier with their mean) and
 * of what is true at that moment (queue depth and its oldest wait, requests in flight, workers by state, the
 * autoscaler's desired count), and its jobs (job-history.ts: an endpoint's job rings only once it has jobs), kept
 * in a fixed ring per endpoint (360 samples: one hour). Memory is bounded: a
 * ring is allocated only for an endpoint with something to show, dropped when it is deleted or after a whole ring
 * of nothing, and at most `maxEndpoints` rings exist (docs/dashboard.md states the bytes). Its sources are
 * functions (app/build-traffic.ts wires the gateway, the controller and the scaler); its clock and timers are injected. With
 * several replicas, cluster-history.ts takes the samples instead of its timer and publishes their figures.
 */
import { WORKER_STATES } from '../domain/worker.js';
import { bucketQuantile } from '../gateway/hot-histogram.js';
import { type EndpointLoad, LATENCY_BUCKETS, type TrafficCounters } from '../gateway/metrics.js';
import {
  type EndpointHistory,
  type EndpointWorker,
  type JobCounters,
  type LiveJobs,
  NO_RECENT_JOBS,
  type RecentTraffic,
  type WAKE_FIELDS,
  WAKE_TIERS,
  type WakeColumns,
  type WakeTier,
} from '../ports/traffic.js';
import { HistoryRing } from './history-ring.js';
import { emptyJobFigures, type JobFigures, JobRings, jobInterval, jobsHistoryOf } from './job-history.js';

/**
 * What one sample took of one endpoint, in figures that add up across replicas (counts and bucket counts, never
 * percentiles): what `sample(true)` hands to the cluster history (cluster-history.ts) to publish.
 */
export interface SlotFigures {
  ok: number;
  clientErrors: number;
  serverErrors: number;
  /** Requests that ended in the interval in each of LATENCY_BUCKETS (+Inf last). */
  latencyCounts: number[];
  /** Their smallest and largest latency (s); null without any. */
  latencyMin: number | null;
  latencyMax: number | null;
  queueDepth: number;
  oldestWaitMs: number;
  inFlight: number;
  /** Wakes from zero in the interval by tier, and their durations added up (ms). */
  wakes: Record<WakeTier, WakeSum>;
  /** The controller's workers in each state, by WORKER_STATES' order (a follower's controller has none). */
  workers: number[];
  /** The autoscaler's desired count; null where it has not decided. */
  desired: number | null;
  /** The endpoint's jobs; null where it had none in the sample. */
  jobs: JobFigures | null;
}

/** Wakes of one tier in one sample: how many, and their durations added up (ms). */
export interface WakeSum {
  count: number;
  totalMs: number;
}

/** No wake in a sample. */
export function noWakeSums(): Record<WakeTier, WakeSum> {
  return {
    thaw: { count: 0, totalMs: 0 },
    restore: { count: 0, totalMs: 0 },
    cold: { count: 0, totalMs: 0 },
  };
}

/** A tier's wakes in each interval as the history answers them: the count, and the mean (null without any). */
export function wakeColumns(sums: readonly WakeSum[]): WakeColumns {
  return {
    count: sums.map((s) => s.count),
    meanMs: sums.map((s) => (s.count > 0 ? Math.round((s.totalMs / s.count) * 10) / 10 : null)),
  };
}

/** One endpoint's figures of one sample, taken at `at`. */
export interface HistorySample {
  endpointId: string;
  at: number;
  figures: SlotFigures;
}

export interface HistorySources {
  /** The gateway's counts per endpoint since it began counting it (`GatewayMetrics.counters`). */
  counters: () => ReadonlyMap<string, TrafficCounters>;
  /** Queue depth, oldest wait and in flight per endpoint (`Gateway.stats`). */
  load: () => readonly EndpointLoad[];
  /** The controller's workers. */
  workers: () => Iterable<EndpointWorker>;
  /** The autoscaler's last desired worker count for the endpoint; undefined where it has not decided. */
  desired: (endpointId: string) => number | undefined;
  /** Whether the endpoint still exists: a deleted one's ring goes at once. */
  exists: (endpointId: string) => boolean;
  /**
   * The jobs this process counted per endpoint since it began (jobs/job-metrics.ts), forgetting those `exists`
   * denies; none: no jobs side.
   */
  jobs?: (exists: (endpointId: string) => boolean) => ReadonlyMap<string, JobCounters>;
  /** Every endpoint's jobs in the queue and in progress, as last read from the store. */
  liveJobs?: () => ReadonlyMap<string, LiveJobs>;
}

export interface HistoryOptions {
  sources: HistorySources;
  clock: () => number;
  timers: {
    setTimeout(callback: () => void, ms: number): unknown;
    clearTimeout(handle: unknown): void;
  };
  intervalSeconds: number;
  /** Samples per endpoint (360 at 10 s: one hour). */
  samples: number;
  /** At most this many endpoints have a ring; others get none until one goes. */
  maxEndpoints: number;
  /** The window of `recent` (the Endpoints list's "last minutes"), in seconds; default 300. */
  recentSeconds?: number;
}

/** One sample's figures; a NaN is a figure without a value. */
interface Row {
  ok: number;
  clientErrors: number;
  serverErrors: number;
  p50: number;
  p99: number;
  queueDepth: number;
  oldestWaitMs: number;
  inFlight: number;
  desired: number;
  /** By WORKER_STATES' order. */
  workers: number[];
  /** Wakes from zero by tier (not columns of the figures: each tier has WAKE_COLUMNS). */
  wakes: Record<WakeTier, WakeSum>;
}

/** The ring's wake columns after the figures: each tier's count, then its wakes' durations added up (ms). */
const WAKE_COLUMNS = WAKE_TIERS.length * 2;

/** The ring's columns: the row's figures in this order, then the workers in each state. */
const FIGURES = [
  'ok',
  'clientErrors',
  'serverErrors',
  'p50',
  'p99',
  'queueDepth',
  'oldestWaitMs',
  'inFlight',
  'desired',
] as const satisfies readonly Exclude<keyof Row, 'workers' | 'wakes'>[];
type Figure = (typeof FIGURES)[number];
const COLUMNS = FIGURES.length + WAKE_COLUMNS + WORKER_STATES.length;
/** Where the workers' columns begin. */
const WORKER_COLUMN = FIGURES.length + WAKE_COLUMNS;

function columnsOf(row: Row): number[] {
  const wakes = WAKE_TIERS.flatMap((tier) => [row.wakes[tier].count, row.wakes[tier].totalMs]);
  return [...FIGURES.map((name) => row[name]), ...wakes, ...row.workers];
}

/** The latency buckets the gateway counts in, +Inf included, then each interval's smallest and largest latency. */
const LATENCY_SLOTS = LATENCY_BUCKETS.length + 1;
const RECENT_COLUMNS = LATENCY_SLOTS + 2;

type RingSizes = Pick<HistoryOptions, 'samples' | 'intervalSeconds' | 'recentSeconds'>;

/** The samples `recent` reads: those within its window, at least one, at most the ring's. */
function recentSamplesOf(options: RingSizes): number {
  return Math.min(
    options.samples,
    Math.max(1, Math.ceil((options.recentSeconds ?? 300) / options.intervalSeconds)),
  );
}

interface Tracked {
  samples: HistoryRing;
  /** Each interval's latency bucket counts, for percentiles over several intervals; `recent` samples long. */
  latency: HistoryRing;
  /** Its jobs, once it has had any. */
  jobs?: JobRings;
  lastActiveAt: number;
}

export class TrafficHistory {
  readonly #o: HistoryOptions;
  readonly #intervalMs: number;
  readonly #recentSamples: number;
  readonly #tracked = new Map<string, Tracked>();
  #previous: ReadonlyMap<string, TrafficCounters> = new Map();
  #previousJobs: ReadonlyMap<string, JobCounters> = new Map();
  #timer: unknown;
  #running = false;

  constructor(options: HistoryOptions) {
    this.#o = options;
    this.#intervalMs = options.intervalSeconds * 1000;
    this.#recentSamples = recentSamplesOf(options);
  }

  /** The bytes one endpoint's rings take (the figure docs/dashboard.md gives for the defaults). */
  static bytesPerEndpoint(options: RingSizes): number {
    return (
      HistoryRing.bytesFor(options.samples, COLUMNS) +
      HistoryRing.bytesFor(recentSamplesOf(options), RECENT_COLUMNS)
    );
  }

  /** The bytes an endpoint that has had jobs takes more (its job rings). */
  static jobBytesPerEndpoint(options: RingSizes): number {
    return JobRings.bytesFor(options.samples, recentSamplesOf(options));
  }

  /** How many endpoints have rings now, and the bytes those take. */
  usage(): { endpoints: number; bytes: number } {
    let bytes = 0;
    for (const t of this.#tracked.values()) bytes += t.samples.bytes + t.latency.bytes + (t.jobs?.bytes ?? 0);
    return { endpoints: this.#tracked.size, bytes };
  }

  /** Samples every interval until `stop`. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    const timer = this.#o.timers.setTimeout(() => {
      this.sample();
      if (this.#running) this.#schedule();
    }, this.#intervalMs);
    // The sampler must not keep the process alive on its own.
    (timer as { unref?: () => void } | undefined)?.unref?.();
    this.#timer = timer;
  }

  /**
   * Takes one sample of every endpoint (the timer calls it each interval; tests and the cluster history call it
   * directly); with `collect`, also returns each kept endpoint's figures (none are made otherwise).
   */
  sample(collect = false): HistorySample[] {
    const collected: HistorySample[] = [];
    const { sources } = this.#o;
    const now = this.#o.clock();
    const counters = sources.counters();
    const load = new Map(sources.load().map((l) => [l.endpointId, l]));
    const workers = new Map<string, number[]>();
    for (const w of sources.workers()) {
      const index = (WORKER_STATES as readonly string[]).indexOf(w.state);
      if (index < 0) continue;
      let counts = workers.get(w.endpointId);
      if (!counts) {
        counts = new Array<number>(WORKER_STATES.length).fill(0);
        workers.set(w.endpointId, counts);
      }
      counts[index] = (counts[index] as number) + 1;
    }
    const jobCounters = sources.jobs?.(sources.exists) ?? new Map<string, JobCounters>();
    const liveJobs = sources.liveJobs?.() ?? new Map<string, LiveJobs>();
    const ids = new Set([
      ...this.#tracked.keys(),
      ...counters.keys(),
      ...load.keys(),
      ...workers.keys(),
      ...jobCounters.keys(),
      ...liveJobs.keys(),
    ]);
    // What the next sample counts from. An endpoint not known here yet (a replica's routes lag its gateway, which
    // finds a new endpoint in the store and serves it at once) keeps its old baseline: its requests so far go to
    // the first sample that knows it, not nowhere.
    const baseline = new Map(counters);
    for (const id of ids) {
      if (!sources.exists(id)) {
        this.#tracked.delete(id);
        const before = this.#previous.get(id);
        if (before) baseline.set(id, before);
        else baseline.delete(id);
        continue;
      }
      const l = load.get(id);
      const row: Row = {
        ok: 0,
        clientErrors: 0,
        serverErrors: 0,
        p50: Number.NaN,
        p99: Number.NaN,
        queueDepth: l?.queueLength ?? 0,
        oldestWaitMs: l?.oldestEnqueuedAt ? Math.max(0, now - l.oldestEnqueuedAt) : 0,
        inFlight: l?.inFlight ?? 0,
        desired: sources.desired(id) ?? Number.NaN,
        workers: workers.get(id) ?? new Array<number>(WORKER_STATES.length).fill(0),
        wakes: noWakeSums(),
      };
      const latency = this.#interval(row, counters.get(id), this.#previous.get(id));
      const jobs = jobInterval(jobCounters.get(id), this.#previousJobs.get(id), liveJobs.get(id));
      const active =
        row.ok + row.clientErrors + row.serverErrors > 0 ||
        WAKE_TIERS.some((tier) => row.wakes[tier].count > 0) ||
        row.queueDepth > 0 ||
        row.inFlight > 0 ||
        row.workers.some((count) => count > 0) ||
        jobs !== undefined;
      const tracked = this.#track(id, active, now);
      if (!tracked) continue;
      tracked.samples.push(now, columnsOf(row));
      tracked.latency.push(now, latency);
      if (jobs && !tracked.jobs)
        tracked.jobs = new JobRings({ capacity: this.#o.samples, recent: this.#recentSamples });
      tracked.jobs?.push(now, jobs ?? emptyJobFigures());
      if (collect) collected.push({ endpointId: id, at: now, figures: figuresOf(row, latency, jobs) });
    }
    this.#previous = baseline;
    this.#previousJobs = jobCounters;
    return collected;
  }

  /** The ring of an endpoint that shows something, made when it first does; undefined: none to add to. */
  #track(id: string, active: boolean, now: number): Tracked | undefined {
    let tracked = this.#tracked.get(id);
    if (!tracked) {
      if (!active || this.#tracked.size >= this.#o.maxEndpoints) return undefined;
      tracked = {
        samples: new HistoryRing({ capacity: this.#o.samples, columns: COLUMNS }),
        latency: new HistoryRing({ capacity: this.#recentSamples, columns: RECENT_COLUMNS }),
        lastActiveAt: now,
      };
      this.#tracked.set(id, tracked);
    }
    if (active) tracked.lastActiveAt = now;
    else if (now - tracked.lastActiveAt >= this.#o.samples * this.#intervalMs) {
      // A whole ring of nothing: the chart would be empty; the memory goes back.
      this.#tracked.delete(id);
      return undefined;
    }
    return tracked;
  }

  /**
   * What the gateway counted since the previous sample: requests by class, wakes by tier, and the latency
   * percentiles (into `row`); returns the interval's latency buckets and range for `recent`.
   */
  #interval(row: Row, now: TrafficCounters | undefined, before: TrafficCounters | undefined): number[] {
    const buckets = new Array<number>(RECENT_COLUMNS).fill(0);
    buckets[LATENCY_SLOTS] = Number.POSITIVE_INFINITY;
    buckets[LATENCY_SLOTS + 1] = Number.NEGATIVE_INFINITY;
    if (!now) return buckets;
    // Counts that went down were forgotten and begun again: everything now is new.
    const base = before && total(before) <= total(now) ? before : undefined;
    row.ok = now.ok - (base?.ok ?? 0);
    row.clientErrors = now.clientErrors - (base?.clientErrors ?? 0);
    row.serverErrors = now.serverErrors - (base?.serverErrors ?? 0);
    for (const tier of WAKE_TIERS) {
      const was = before?.wakes[tier];
      const wakeBase = was && was.count <= now.wakes[tier].count ? was : undefined;
      const count = now.wakes[tier].count - (wakeBase?.count ?? 0);
      const seconds = now.wakes[tier].seconds - (wakeBase?.seconds ?? 0);
      if (count > 0) row.wakes[tier] = { count, totalMs: Math.round(seconds * 10_000) / 10 };
    }
    let count = 0;
    for (let i = 0; i < LATENCY_SLOTS; i++) {
      const inBucket = (now.latencyCounts[i] ?? 0) - (base?.latencyCounts[i] ?? 0);
      buckets[i] = inBucket;
      count += inBucket;
    }
    if (count > 0) {
      const { min, max } = now.latencyRange;
      buckets[LATENCY_SLOTS] = min;
      buckets[LATENCY_SLOTS + 1] = max;
      row.p50 = toMs(bucketQuantile(LATENCY_BUCKETS, buckets, count, 0.5, min, max));
      row.p99 = toMs(bucketQuantile(LATENCY_BUCKETS, buckets, count, 0.99, min, max));
    }
    return buckets;
  }

  /** The endpoint's samples, oldest first; empty where it has none (nothing happened in the last ring's time). */
  of(endpointId: string): EndpointHistory {
    const { columns, times } = this.#tracked.get(endpointId)?.samples.read() ?? {
      times: [],
      columns: [] as number[][],
    };
    const column = (name: Figure) => columns[FIGURES.indexOf(name)] ?? [];
    const workersIn = (i: number) => columns[WORKER_COLUMN + i] ?? [];
    const wakesOf = (tier: WakeTier) => {
      const at = FIGURES.length + WAKE_TIERS.indexOf(tier) * 2;
      const totals = columns[at + 1] ?? [];
      return wakeColumns((columns[at] ?? []).map((count, i) => ({ count, totalMs: totals[i] ?? 0 })));
    };
    const orNull = (values: number[]) => values.map((v) => (Number.isNaN(v) ? null : v));
    const jobs = this.#tracked.get(endpointId)?.jobs;
    return {
      intervalSeconds: this.#o.intervalSeconds,
      capacity: this.#o.samples,
      at: times,
      requests: {
        ok: column('ok'),
        clientErrors: column('clientErrors'),
        serverErrors: column('serverErrors'),
      },
      latencyMs: { p50: orNull(column('p50')), p99: orNull(column('p99')) },
      queue: { depth: column('queueDepth'), oldestWaitMs: column('oldestWaitMs') },
      inFlight: column('inFlight'),
      workers: Object.fromEntries(WORKER_STATES.map((state, i) => [state, workersIn(i)])),
      desiredWorkers: orNull(column('desired')),
      ...wakesByField(wakesOf),
      jobs: jobs ? jobs.of(times.length) : jobsHistoryOf(times.map(() => undefined)),
    };
  }

  /**
   * Requests and latency percentiles over the samples of the last `recentSeconds` (the percentiles from the
   * intervals' buckets added up, not averaged); undefined where the endpoint has no ring.
   */
  recent(endpointId: string): RecentTraffic | undefined {
    const tracked = this.#tracked.get(endpointId);
    if (!tracked) return undefined;
    const n = this.#recentSamples;
    const { columns } = tracked.samples.read(n);
    const buckets = tracked.latency.read(n).columns;
    const taken = columns[0]?.length ?? 0;
    let requests = 0;
    for (const name of ['ok', 'clientErrors', 'serverErrors'] as const)
      for (const v of columns[FIGURES.indexOf(name)] ?? []) requests += v;
    const merged = new Array<number>(LATENCY_SLOTS).fill(0);
    let count = 0;
    for (let i = 0; i < LATENCY_SLOTS; i++) {
      for (const v of buckets[i] ?? []) merged[i] = (merged[i] as number) + v;
      count += merged[i] as number;
    }
    const min = Math.min(...(buckets[LATENCY_SLOTS] ?? []));
    const max = Math.max(...(buckets[LATENCY_SLOTS + 1] ?? []));
    const seconds = taken * this.#o.intervalSeconds;
    const quantile = (q: number) =>
      count > 0 ? toMs(bucketQuantile(LATENCY_BUCKETS, merged, count, q, min, max)) : null;
    return {
      seconds,
      requests,
      requestsPerMinute: seconds > 0 ? Math.round((requests / seconds) * 600) / 10 : 0,
      latencyMs: { p50: quantile(0.5), p99: quantile(0.99) },
      jobs: tracked.jobs ? tracked.jobs.recent(n) : NO_RECENT_JOBS,
    };
  }
}

/** A row's figures and its interval's latency buckets (and range) as a sample hands them out. */
function figuresOf(row: Row, latency: readonly number[], jobs: JobFigures | undefined): SlotFigures {
  const min = latency[LATENCY_SLOTS] as number;
  const max = latency[LATENCY_SLOTS + 1] as number;
  return {
    ok: row.ok,
    clientErrors: row.clientErrors,
    serverErrors: row.serverErrors,
    latencyCounts: latency.slice(0, LATENCY_SLOTS),
    latencyMin: Number.isFinite(min) ? min : null,
    latencyMax: Number.isFinite(max) ? max : null,
    queueDepth: row.queueDepth,
    oldestWaitMs: row.oldestWaitMs,
    inFlight: row.inFlight,
    wakes: { ...row.wakes },
    workers: [...row.workers],
    desired: Number.isNaN(row.desired) ? null : row.desired,
    jobs: jobs ?? null,
  };
}

/** Each tier's columns under its field (`coldStarts`, `thaws`, `restores`). */
export function wakesByField(
  of: (tier: WakeTier) => WakeColumns,
): Record<(typeof WAKE_FIELDS)[WakeTier], WakeColumns> {
  return { coldStarts: of('cold'), thaws: of('thaw'), restores: of('restore') };
}

function total(c: TrafficCounters): number {
  return c.ok + c.clientErrors + c.serverErrors;
}

/** Seconds to milliseconds, to a tenth (the buckets are no finer than a millisecond). */
export function toMs(seconds: number): number {
  return Math.round(seconds * 10_000) / 10;
}
