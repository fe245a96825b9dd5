import { describe, expect, it } from 'vitest';
import { WORKER_STATES } from '../domain/worker.js';
import { LATENCY_BUCKETS } from '../gateway/metrics.js';
import { JOB_TIME_BUCKETS, NO_RECENT_JOBS, type WakeTier } from '../ports/traffic.js';
import { noWakeSums, type SlotFigures } from './history.js';
import { leaderDesired, mergeHistory, mergeRecent, type ReplicaSlot } from './history-merge.js';
import { emptyJobFigures, type JobFigures } from './job-history.js';

const T = Date.parse('2026-11-26T10:00:00Z');
const S = 10_000;

/** Latency counts with `n` requests in the bucket whose upper bound is `le` seconds. */
function buckets(...pairs: [le: number, n: number][]): number[] {
  const counts = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  for (const [le, n] of pairs) {
    const i = LATENCY_BUCKETS.indexOf(le);
    if (i < 0) throw new Error(`no bucket ${le}`);
    counts[i] = (counts[i] as number) + n;
  }
  return counts;
}

function workers(by: Partial<Record<(typeof WORKER_STATES)[number], number>>): number[] {
  return WORKER_STATES.map((state) => by[state] ?? 0);
}

function figures(f: Partial<SlotFigures> = {}): SlotFigures {
  return {
    ok: 0,
    clientErrors: 0,
    serverErrors: 0,
    latencyCounts: buckets(),
    latencyMin: null,
    latencyMax: null,
    queueDepth: 0,
    oldestWaitMs: 0,
    inFlight: 0,
    wakes: noWakeSums(),
    workers: workers({}),
    desired: null,
    jobs: null,
    ...f,
  };
}

/** Wakes by tier, each as [count, total ms]; a tier left out had none. */
function wakes(by: Partial<Record<WakeTier, [number, number]>>): SlotFigures['wakes'] {
  const sums = noWakeSums();
  for (const [tier, [count, totalMs]] of Object.entries(by) as [WakeTier, [number, number]][])
    sums[tier] = { count, totalMs };
  return sums;
}

function row(replicaId: string, slot: number, term: number | null, f: Partial<SlotFigures>): ReplicaSlot {
  return { replicaId, slot: T + slot * S, term, figures: figures(f) };
}

const OPTIONS = { intervalSeconds: 10, capacity: 360 };

/** Job time bucket counts with `n` jobs in the bucket whose upper bound is `le` seconds. */
function jobTimes(...pairs: [le: number, n: number][]): number[] {
  const counts = new Array<number>(JOB_TIME_BUCKETS.length + 1).fill(0);
  for (const [le, n] of pairs) {
    const i = JOB_TIME_BUCKETS.indexOf(le);
    if (i < 0) throw new Error(`no bucket ${le}`);
    counts[i] = (counts[i] as number) + n;
  }
  return counts;
}

function jobs(f: Partial<JobFigures>): JobFigures {
  return { ...emptyJobFigures(), ...f };
}

describe('mergeHistory', () => {
  const cases: {
    name: string;
    rows: ReplicaSlot[];
    expect: (h: ReturnType<typeof mergeHistory>) => void;
  }[] = [
    {
      name: 'sums the counts, queues and in flight of every replica in a slot; the oldest wait is the largest',
      rows: [
        row('a', 1, 4, { ok: 5, clientErrors: 1, queueDepth: 2, oldestWaitMs: 300, inFlight: 1 }),
        row('b', 1, null, { ok: 7, serverErrors: 2, queueDepth: 3, oldestWaitMs: 900, inFlight: 4 }),
        row('c', 1, null, { ok: 1, oldestWaitMs: 100 }),
      ],
      expect: (h) => {
        expect(h.at).toEqual([T + S]);
        expect(h.requests).toEqual({ ok: [13], clientErrors: [1], serverErrors: [2] });
        expect(h.queue).toEqual({ depth: [5], oldestWaitMs: [900] });
        expect(h.inFlight).toEqual([5]);
      },
    },
    {
      name: "takes the percentiles from the summed buckets, not from an average of each replica's",
      // a: 90 requests at 5 ms or less; b: 10 requests between 1 s and 2.5 s. Averaged per-replica p99s would say
      // about 1.3 s; the merged p99 is the 99th of 100 requests, in b's bucket; the merged p50 is in a's.
      rows: [
        row('a', 1, 4, { ok: 90, latencyCounts: buckets([0.005, 90]), latencyMin: 0.004, latencyMax: 0.005 }),
        row('b', 1, null, { ok: 10, latencyCounts: buckets([2.5, 10]), latencyMin: 1.5, latencyMax: 2.2 }),
      ],
      expect: (h) => {
        const [p50] = h.latencyMs.p50;
        const [p99] = h.latencyMs.p99;
        expect(p50).toBeGreaterThanOrEqual(4);
        expect(p50).toBeLessThanOrEqual(5);
        // Rank 99 of 100: 9 of b's 10 into the 1-2.5 s bucket, within b's largest (2.2 s).
        expect(p99).toBe(2200);
      },
    },
    {
      name: 'merges a slot where only some replicas have data with their figures alone, and orders the slots',
      rows: [
        row('b', 2, null, { ok: 3, latencyCounts: buckets([0.1, 3]), latencyMin: 0.06, latencyMax: 0.08 }),
        row('a', 1, 4, { ok: 2, latencyCounts: buckets([0.01, 2]), latencyMin: 0.007, latencyMax: 0.009 }),
        row('b', 1, null, { ok: 1, latencyCounts: buckets([0.01, 1]), latencyMin: 0.008, latencyMax: 0.008 }),
        row('a', 3, 4, {}),
      ],
      expect: (h) => {
        expect(h.at).toEqual([T + S, T + 2 * S, T + 3 * S]);
        expect(h.requests.ok).toEqual([3, 3, 0]);
        // Slot 2 is b's alone: its percentiles are b's, within b's range.
        expect(h.latencyMs.p50[1]).toBeGreaterThanOrEqual(60);
        expect(h.latencyMs.p50[1]).toBeLessThanOrEqual(80);
        expect(h.latencyMs.p99[2]).toBeNull();
      },
    },
    {
      name: "shows the leader's workers and desired count only, the latest term's where two led in one slot",
      rows: [
        row('a', 1, 4, { workers: workers({ running: 2, starting: 1 }), desired: 3 }),
        // A follower's rows carry no workers (its controller has none) even if they said some.
        row('b', 1, null, { workers: workers({ running: 9 }), desired: 9 }),
        // A failover within slot 2: the new term's row wins.
        row('a', 2, 4, { workers: workers({ running: 2 }), desired: 2 }),
        row('b', 2, 5, { workers: workers({ running: 1, draining: 1 }), desired: 1 }),
        // Slot 3: no replica led when it sampled.
        row('b', 3, null, { ok: 1 }),
      ],
      expect: (h) => {
        expect(h.workers.running).toEqual([2, 1, 0]);
        expect(h.workers.starting).toEqual([1, 0, 0]);
        expect(h.workers.draining).toEqual([0, 1, 0]);
        expect(Object.keys(h.workers)).toEqual([...WORKER_STATES]);
        expect(h.desiredWorkers).toEqual([3, 1, null]);
      },
    },
    {
      name: "counts every replica's wakes by tier and each tier's mean over all of them",
      rows: [
        row('a', 1, 4, { wakes: wakes({ cold: [1, 3_000], thaw: [1, 20] }) }),
        row('b', 1, null, { wakes: wakes({ cold: [1, 5_000], restore: [1, 2_500], thaw: [1, 30] }) }),
        row('b', 2, null, {}),
      ],
      expect: (h) => {
        expect(h.coldStarts).toEqual({ count: [2, 0], meanMs: [4_000, null] });
        expect(h.thaws).toEqual({ count: [2, 0], meanMs: [25, null] });
        expect(h.restores).toEqual({ count: [1, 0], meanMs: [2_500, null] });
      },
    },
    {
      name: "adds up every replica's finished jobs and time buckets; the jobs queued and running (one store) are the largest",
      rows: [
        row('a', 1, 4, {
          jobs: jobs({
            inQueue: 7,
            inProgress: 2,
            completed: 90,
            failed: 1,
            delayCounts: jobTimes([0.1, 90], [1, 1]),
          }),
        }),
        row('b', 1, null, {
          jobs: jobs({
            inQueue: 8,
            inProgress: 2,
            completed: 9,
            timedOut: 1,
            retried: 2,
            delayCounts: jobTimes([30, 10]),
          }),
        }),
        // A replica that had no job in the slot adds nothing; a slot without jobs is zeros and nulls.
        row('c', 1, null, { ok: 1 }),
        row('a', 2, 4, { ok: 1 }),
      ],
      expect: (h) => {
        expect(h.jobs.inQueue).toEqual([8, 0]);
        expect(h.jobs.inProgress).toEqual([2, 0]);
        expect(h.jobs.completed).toEqual([99, 0]);
        expect(h.jobs.failed).toEqual([1, 0]);
        expect(h.jobs.timedOut).toEqual([1, 0]);
        expect(h.jobs.retried).toEqual([2, 0]);
        // 101 delays: 90 within 100 ms, 1 within 1 s, 10 within 30 s: the p50 in the first bucket, the p95 in the last.
        const [p50, none] = h.jobs.delayMs.p50;
        expect(p50).toBeGreaterThan(50);
        expect(p50).toBeLessThanOrEqual(100);
        expect(none).toBeNull();
        expect(h.jobs.delayMs.p95[0]).toBeGreaterThan(10_000);
        expect(h.jobs.delayMs.p95[0]).toBeLessThanOrEqual(30_000);
        expect(h.jobs.executionMs.p50).toEqual([null, null]);
      },
    },
    {
      name: 'answers empty columns without rows',
      rows: [],
      expect: (h) => {
        expect(h.at).toEqual([]);
        expect(h.workers.running).toEqual([]);
        expect(h.intervalSeconds).toBe(10);
        expect(h.capacity).toBe(360);
      },
    },
  ];
  for (const c of cases) it(c.name, () => c.expect(mergeHistory(c.rows, OPTIONS)));

  it('keeps the newest `capacity` slots', () => {
    const rows = [1, 2, 3, 4].map((slot) => row('a', slot, null, { ok: slot }));
    const h = mergeHistory(rows, { intervalSeconds: 10, capacity: 2 });
    expect(h.at).toEqual([T + 3 * S, T + 4 * S]);
    expect(h.requests.ok).toEqual([3, 4]);
  });
});

describe('mergeRecent', () => {
  it("adds up every replica's requests and buckets over the slots", () => {
    const recent = mergeRecent(
      [
        row('a', 1, 4, { ok: 60, latencyCounts: buckets([0.025, 60]), latencyMin: 0.011, latencyMax: 0.02 }),
        row('b', 1, null, {
          ok: 30,
          latencyCounts: buckets([0.025, 30]),
          latencyMin: 0.012,
          latencyMax: 0.024,
        }),
        row('b', 2, null, {
          ok: 9,
          serverErrors: 1,
          latencyCounts: buckets([5, 10]),
          latencyMin: 3,
          latencyMax: 4,
        }),
      ],
      10,
    );
    expect(recent?.seconds).toBe(20);
    expect(recent?.requests).toBe(100);
    expect(recent?.requestsPerMinute).toBe(300);
    expect(recent?.latencyMs.p50).toBeGreaterThan(10);
    expect(recent?.latencyMs.p50).toBeLessThanOrEqual(25);
    expect(recent?.latencyMs.p99).toBeGreaterThan(3_000);
    expect(recent?.latencyMs.p99).toBeLessThanOrEqual(4_000);
  });

  it("adds up every replica's finished jobs over the slots, percentiles from the summed buckets", () => {
    const recent = mergeRecent(
      [
        row('a', 1, 4, { jobs: jobs({ completed: 3, executionCounts: jobTimes([10, 3]) }) }),
        row('b', 2, null, {
          jobs: jobs({ completed: 1, cancelled: 2, retried: 1, executionCounts: jobTimes([60, 1]) }),
        }),
      ],
      10,
    );
    expect(recent?.jobs).toMatchObject({ completed: 4, failed: 0, cancelled: 2, timedOut: 0, retried: 1 });
    expect(recent?.jobs.executionMs.p50).toBeGreaterThan(5_000);
    expect(recent?.jobs.executionMs.p50).toBeLessThanOrEqual(10_000);
    expect(recent?.jobs.executionMs.p95).toBeGreaterThan(30_000);
    expect(recent?.jobs.executionMs.p95).toBeLessThanOrEqual(60_000);
    expect(recent?.jobs.delayMs).toEqual({ p50: null, p95: null });
  });

  it('is undefined without rows, and has null percentiles without requests', () => {
    expect(mergeRecent([], 10)).toBeUndefined();
    expect(mergeRecent([row('a', 1, null, { queueDepth: 1 })], 10)).toEqual({
      seconds: 10,
      requests: 0,
      requestsPerMinute: 0,
      latencyMs: { p50: null, p99: null },
      jobs: NO_RECENT_JOBS,
    });
  });
});

describe('leaderDesired', () => {
  it("is the leader's newest decision since a slot, not a follower's, undefined where none is that recent", () => {
    const rows = [
      row('a', 1, 4, { desired: 2 }),
      row('a', 2, 4, { desired: 3 }),
      row('b', 3, null, { desired: 9 }),
    ];
    expect(leaderDesired(rows, T)).toEqual({ desired: 3, slot: T + 2 * S });
    expect(leaderDesired(rows, T + 3 * S)).toBeUndefined();
    expect(leaderDesired([row('a', 1, 4, { desired: null })], T)).toEqual({ desired: null, slot: T + S });
    // Two terms in one slot: the newer term's.
    expect(leaderDesired([row('b', 1, 6, { desired: 1 }), row('a', 1, 5, { desired: 4 })], T)?.desired).toBe(
      1,
    );
  });
});
