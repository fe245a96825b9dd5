/**
 * A history sample's figures as one replica stores them for the others (cluster-history.ts): compact JSON of
 * numbers in a fixed order, `{"v":1,"r":[ok,4xx,5xx],"l":[16 bucket counts],"lr":[min s,max s],"q":[depth,oldest
 * wait ms,in flight],"c":[wakes,their total ms,thaws,restores,thaws' total ms,restores' total ms]}` (wakes of
 * every tier, so that a replica of an older version reads the count it knew; the cold starts are the rest. A row
 * stored before the idle tiers has no thaws or restores: 0; one stored before the split has no thaws' or restores'
 * times, and its cold starts' time then holds theirs), plus `"w"` (workers by WORKER_STATES' order) and `"d"` (the
 * desired count) in a leader's rows only, and where the endpoint had jobs `"j":[in queue,in progress,completed,
 * failed,cancelled,timed out,retried]`, `"jd"` and `"je"` (the delay and execution time bucket counts, job-history.ts;
 * a row without them had no job). About 110 bytes for a follower's row, 140 for a leader's, 100 more with jobs.
 * Pure.
 */
import { WORKER_STATES } from '../domain/worker.js';
import { LATENCY_BUCKETS } from '../gateway/metrics.js';
import type { SlotFigures, WakeSum } from './history.js';
import { JOB_TIME_SLOTS, type JobFigures } from './job-history.js';

const VERSION = 1;

interface Encoded {
  v: number;
  r: number[];
  l: number[];
  lr: (number | null)[];
  q: number[];
  c: number[];
  w?: number[];
  d?: number | null;
  j?: number[];
  jd?: number[];
  je?: number[];
}

const tenth = (ms: number) => Math.round(ms * 10) / 10;

/** Microseconds are finer than the buckets' first bound (1 ms). */
const seconds = (s: number | null) => (s === null ? null : Math.round(s * 1e6) / 1e6);

/** The figures as stored; the controller's workers and the desired count only where `leader`. */
export function encodeFigures(f: SlotFigures, leader: boolean): string {
  const encoded: Encoded = {
    v: VERSION,
    r: [f.ok, f.clientErrors, f.serverErrors],
    l: f.latencyCounts,
    lr: [seconds(f.latencyMin), seconds(f.latencyMax)],
    q: [f.queueDepth, Math.round(f.oldestWaitMs), f.inFlight],
    c: [
      f.wakes.cold.count + f.wakes.thaw.count + f.wakes.restore.count,
      tenth(f.wakes.cold.totalMs + f.wakes.thaw.totalMs + f.wakes.restore.totalMs),
      f.wakes.thaw.count,
      f.wakes.restore.count,
      tenth(f.wakes.thaw.totalMs),
      tenth(f.wakes.restore.totalMs),
    ],
  };
  if (leader) {
    encoded.w = f.workers;
    encoded.d = f.desired;
  }
  if (f.jobs) {
    const j = f.jobs;
    encoded.j = [j.inQueue, j.inProgress, j.completed, j.failed, j.cancelled, j.timedOut, j.retried];
    encoded.jd = j.delayCounts;
    encoded.je = j.executionCounts;
  }
  return JSON.stringify(encoded);
}

/** The stored figures; undefined where the text is not of this version (a newer replica's, during an upgrade). */
export function decodeFigures(text: string): SlotFigures | undefined {
  let e: Partial<Encoded>;
  try {
    e = JSON.parse(text) as Partial<Encoded>;
  } catch {
    return undefined;
  }
  if (e?.v !== VERSION) return undefined;
  const n = (values: readonly unknown[] | undefined, i: number) => {
    const v = values?.[i];
    return typeof v === 'number' && Number.isFinite(v) ? v : 0;
  };
  const orNull = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    ok: n(e.r, 0),
    clientErrors: n(e.r, 1),
    serverErrors: n(e.r, 2),
    latencyCounts: Array.from({ length: LATENCY_BUCKETS.length + 1 }, (_, i) => n(e.l, i)),
    latencyMin: orNull(e.lr?.[0]),
    latencyMax: orNull(e.lr?.[1]),
    queueDepth: n(e.q, 0),
    oldestWaitMs: n(e.q, 1),
    inFlight: n(e.q, 2),
    wakes: decodeWakes(e.c, n),
    workers: WORKER_STATES.map((_, i) => n(e.w, i)),
    desired: orNull(e.d),
    jobs: Array.isArray(e.j) ? decodeJobs(e, n) : null,
  };
}

function decodeWakes(
  c: readonly unknown[] | undefined,
  n: (values: readonly unknown[] | undefined, i: number) => number,
): SlotFigures['wakes'] {
  const thaw: WakeSum = { count: n(c, 2), totalMs: n(c, 4) };
  const restore: WakeSum = { count: n(c, 3), totalMs: n(c, 5) };
  const cold: WakeSum = {
    count: Math.max(0, n(c, 0) - thaw.count - restore.count),
    totalMs: Math.max(0, tenth(n(c, 1) - thaw.totalMs - restore.totalMs)),
  };
  return { thaw, restore, cold };
}

function decodeJobs(
  e: Partial<Encoded>,
  n: (values: readonly unknown[] | undefined, i: number) => number,
): JobFigures {
  return {
    inQueue: n(e.j, 0),
    inProgress: n(e.j, 1),
    completed: n(e.j, 2),
    failed: n(e.j, 3),
    cancelled: n(e.j, 4),
    timedOut: n(e.j, 5),
    retried: n(e.j, 6),
    delayCounts: Array.from({ length: JOB_TIME_SLOTS }, (_, i) => n(e.jd, i)),
    executionCounts: Array.from({ length: JOB_TIME_SLOTS }, (_, i) => n(e.je, i)),
  };
}
