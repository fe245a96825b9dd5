/**
 * Several replicas' history samples merged into one answer (docs/operations.md, "What the dashboard shows with
 * replicas"). Each replica publishes per endpoint and per slot (the interval's end, aligned to the interval) figures
 * that add up: counts, latency bucket counts, queues. A slot's merged figures are their sum (the oldest wait: the
 * largest), its percentiles come from the summed buckets (never an average of percentiles), and its workers and
 * desired count from the leader's row (the highest fencing token in the slot; a follower's controller has none).
 * Jobs (job-history.ts) add up the same way, but the jobs in the queue and in progress, which every replica reads
 * from the one store: the largest.
 * Pure: rows in, the same answer on every replica out.
 */
import { WORKER_STATES } from '../domain/worker.js';
import { bucketQuantile } from '../gateway/hot-histogram.js';
import { LATENCY_BUCKETS } from '../gateway/metrics.js';
import { type EndpointHistory, type RecentTraffic, WAKE_TIERS } from '../ports/traffic.js';
import { noWakeSums, type SlotFigures, toMs, wakeColumns, wakesByField } from './history.js';
import {
  addJobFigures,
  emptyJobFigures,
  type JobFigures,
  jobsHistoryOf,
  recentJobsOf,
} from './job-history.js';

/** One replica's figures of one endpoint in one slot. */
export interface ReplicaSlot {
  replicaId: string;
  /** The interval's end (ms since the epoch), a multiple of the interval. */
  slot: number;
  /** The fencing token of the term this replica led when it sampled; null: it did not lead. */
  term: number | null;
  figures: SlotFigures;
}

/** A slot's figures over every replica, percentiles still as buckets. */
interface MergedSlot {
  slot: number;
  ok: number;
  clientErrors: number;
  serverErrors: number;
  latencyCounts: number[];
  latencyMin: number;
  latencyMax: number;
  queueDepth: number;
  oldestWaitMs: number;
  inFlight: number;
  wakes: SlotFigures['wakes'];
  /** The jobs of every replica's row that had any. */
  jobs: JobFigures | undefined;
  /** The leader's row of the slot, if any replica led when it sampled. */
  leader: SlotFigures | undefined;
  leaderTerm: number;
}

/** The rows merged per slot, oldest slot first. */
function mergeSlots(rows: readonly ReplicaSlot[]): MergedSlot[] {
  const slots = new Map<number, MergedSlot>();
  for (const row of rows) {
    let m = slots.get(row.slot);
    if (!m) {
      m = {
        slot: row.slot,
        ok: 0,
        clientErrors: 0,
        serverErrors: 0,
        latencyCounts: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0),
        latencyMin: Number.POSITIVE_INFINITY,
        latencyMax: Number.NEGATIVE_INFINITY,
        queueDepth: 0,
        oldestWaitMs: 0,
        inFlight: 0,
        wakes: noWakeSums(),
        jobs: undefined,
        leader: undefined,
        leaderTerm: Number.NEGATIVE_INFINITY,
      };
      slots.set(row.slot, m);
    }
    const f = row.figures;
    m.ok += f.ok;
    m.clientErrors += f.clientErrors;
    m.serverErrors += f.serverErrors;
    for (let i = 0; i < m.latencyCounts.length; i++)
      m.latencyCounts[i] = (m.latencyCounts[i] as number) + (f.latencyCounts[i] ?? 0);
    if (f.latencyMin !== null) m.latencyMin = Math.min(m.latencyMin, f.latencyMin);
    if (f.latencyMax !== null) m.latencyMax = Math.max(m.latencyMax, f.latencyMax);
    m.queueDepth += f.queueDepth;
    m.oldestWaitMs = Math.max(m.oldestWaitMs, f.oldestWaitMs);
    m.inFlight += f.inFlight;
    for (const tier of WAKE_TIERS) {
      const sum = m.wakes[tier];
      m.wakes[tier] = {
        count: sum.count + f.wakes[tier].count,
        totalMs: sum.totalMs + f.wakes[tier].totalMs,
      };
    }
    if (f.jobs) {
      m.jobs ??= emptyJobFigures();
      addJobFigures(m.jobs, f.jobs);
    }
    if (row.term !== null && row.term > m.leaderTerm) {
      m.leader = f;
      m.leaderTerm = row.term;
    }
  }
  return [...slots.values()].sort((a, b) => a.slot - b.slot);
}

/** A percentile (ms) of the buckets, within their smallest and largest latency; null without any request. */
function quantileMs(counts: readonly number[], min: number, max: number, q: number): number | null {
  let count = 0;
  for (const c of counts) count += c;
  return count > 0 ? toMs(bucketQuantile(LATENCY_BUCKETS, counts, count, q, min, max)) : null;
}

/** The endpoint's merged history, oldest slot first, in the columns one replica's history answers with. */
export function mergeHistory(
  rows: readonly ReplicaSlot[],
  options: { intervalSeconds: number; capacity: number },
): EndpointHistory {
  const slots = mergeSlots(rows).slice(-options.capacity);
  const column = <T>(of: (m: MergedSlot) => T) => slots.map(of);
  return {
    intervalSeconds: options.intervalSeconds,
    capacity: options.capacity,
    at: column((m) => m.slot),
    requests: {
      ok: column((m) => m.ok),
      clientErrors: column((m) => m.clientErrors),
      serverErrors: column((m) => m.serverErrors),
    },
    latencyMs: {
      p50: column((m) => quantileMs(m.latencyCounts, m.latencyMin, m.latencyMax, 0.5)),
      p99: column((m) => quantileMs(m.latencyCounts, m.latencyMin, m.latencyMax, 0.99)),
    },
    queue: { depth: column((m) => m.queueDepth), oldestWaitMs: column((m) => m.oldestWaitMs) },
    inFlight: column((m) => m.inFlight),
    // Where no replica led at the sample (a failover's gap), no controller counted: zero workers, no decision.
    workers: Object.fromEntries(
      WORKER_STATES.map((state, i) => [state, column((m) => m.leader?.workers[i] ?? 0)]),
    ),
    desiredWorkers: column((m) => m.leader?.desired ?? null),
    ...wakesByField((tier) => wakeColumns(column((m) => m.wakes[tier]))),
    jobs: jobsHistoryOf(column((m) => m.jobs)),
  };
}

/**
 * Requests and latency percentiles over the rows' slots (the caller passes the last minutes'), the percentiles
 * from every replica's buckets added up; undefined without any row.
 */
export function mergeRecent(
  rows: readonly ReplicaSlot[],
  intervalSeconds: number,
): RecentTraffic | undefined {
  const slots = mergeSlots(rows);
  if (slots.length === 0) return undefined;
  let requests = 0;
  const counts = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  const jobs = emptyJobFigures();
  for (const m of slots) {
    if (m.jobs) addJobFigures(jobs, m.jobs);
    requests += m.ok + m.clientErrors + m.serverErrors;
    for (let i = 0; i < counts.length; i++)
      counts[i] = (counts[i] as number) + (m.latencyCounts[i] as number);
    min = Math.min(min, m.latencyMin);
    max = Math.max(max, m.latencyMax);
  }
  const seconds = slots.length * intervalSeconds;
  return {
    seconds,
    requests,
    requestsPerMinute: Math.round((requests / seconds) * 600) / 10,
    latencyMs: { p50: quantileMs(counts, min, max, 0.5), p99: quantileMs(counts, min, max, 0.99) },
    jobs: recentJobsOf(jobs),
  };
}

/**
 * The leader's desired count in its newest row at or after `since` (its slot with it); undefined where no row of a
 * leader is that recent.
 */
export function leaderDesired(
  rows: readonly ReplicaSlot[],
  since: number,
): { desired: number | null; slot: number } | undefined {
  let newest: ReplicaSlot | undefined;
  for (const row of rows) {
    if (row.term === null || row.slot < since) continue;
    if (!newest || row.slot > newest.slot || (row.slot === newest.slot && row.term > (newest.term as number)))
      newest = row;
  }
  return newest && { desired: newest.figures.desired, slot: newest.slot };
}
