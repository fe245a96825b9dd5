import { describe, expect, it } from 'vitest';
import { WORKER_STATES } from '../domain/worker.js';
import { LATENCY_BUCKETS } from '../gateway/metrics.js';
import { JOB_TIME_BUCKETS } from '../ports/traffic.js';
import type { SlotFigures } from './history.js';
import { decodeFigures, encodeFigures } from './history-codec.js';

const FIGURES: SlotFigures = {
  ok: 120,
  clientErrors: 3,
  serverErrors: 1,
  latencyCounts: LATENCY_BUCKETS.map((_, i) => i).concat([2]),
  latencyMin: 0.0012345678,
  latencyMax: 61.5,
  queueDepth: 4,
  oldestWaitMs: 1_234.4,
  inFlight: 7,
  wakes: {
    cold: { count: 2, totalMs: 4_321.06 },
    thaw: { count: 1, totalMs: 24.02 },
    restore: { count: 0, totalMs: 0 },
  },
  workers: WORKER_STATES.map((_, i) => i),
  desired: 5,
  jobs: null,
};

describe('the stored history figures', () => {
  it("keep a leader's figures, its workers and desired count included, rounded to what the answers show", () => {
    const text = encodeFigures(FIGURES, true);
    expect(decodeFigures(text)).toEqual({
      ...FIGURES,
      latencyMin: 0.001235,
      oldestWaitMs: 1_234,
      wakes: { ...FIGURES.wakes, cold: { count: 2, totalMs: 4_321.1 }, thaw: { count: 1, totalMs: 24 } },
    });
    expect(text.length).toBeLessThan(160);
  });

  it("leave a follower's workers and desired count out", () => {
    const text = encodeFigures(FIGURES, false);
    const read = decodeFigures(text);
    expect(read?.workers).toEqual(WORKER_STATES.map(() => 0));
    expect(read?.desired).toBeNull();
    expect(read?.ok).toBe(120);
    expect(text.length).toBeLessThan(encodeFigures(FIGURES, true).length);
    expect(text).not.toContain('"w"');
  });

  it('read a row stored before the idle tiers (8 worker states) with every state where it was, and none frozen', () => {
    const before = JSON.stringify({
      ...JSON.parse(encodeFigures(FIGURES, true)),
      w: [1, 2, 3, 4, 5, 6, 7, 8],
    });
    const workers = decodeFigures(before)?.workers ?? [];
    const byState = Object.fromEntries(WORKER_STATES.map((state, i) => [state, workers[i]]));
    expect(byState).toEqual({
      pending: 1,
      pulling: 2,
      starting: 3,
      running: 4,
      unhealthy: 5,
      draining: 6,
      stopped: 7,
      failed: 8,
      frozen: 0,
      suspended: 0,
      downloading: 0,
    });
  });

  it('keep the count of every wake where a replica of an older version reads it, and read its rows', () => {
    const text = encodeFigures(FIGURES, false);
    // An older replica's first two are every wake and their time; a thaw is not a cold start once read back.
    expect(JSON.parse(text).c.slice(0, 4)).toEqual([3, 4_345.1, 1, 0]);
    // Its rows have no thaws' or restores' time: the cold starts' time holds theirs.
    const older = JSON.stringify({ ...JSON.parse(text), c: [3, 4_345.1, 1, 0] });
    expect(decodeFigures(older)?.wakes).toEqual({
      cold: { count: 2, totalMs: 4_345.1 },
      thaw: { count: 1, totalMs: 0 },
      restore: { count: 0, totalMs: 0 },
    });
  });

  it("keep an endpoint's jobs where it had any, and leave them out (null) where it had none", () => {
    const jobs = {
      inQueue: 12,
      inProgress: 3,
      completed: 40,
      failed: 2,
      cancelled: 1,
      timedOut: 1,
      retried: 4,
      delayCounts: JOB_TIME_BUCKETS.map((_, i) => i).concat([1]),
      executionCounts: JOB_TIME_BUCKETS.map(() => 2).concat([0]),
    };
    const text = encodeFigures({ ...FIGURES, jobs }, false);
    expect(decodeFigures(text)?.jobs).toEqual(jobs);
    expect(text.length).toBeLessThan(encodeFigures(FIGURES, false).length + 120);
    expect(encodeFigures(FIGURES, false)).not.toContain('"j"');
    expect(decodeFigures(encodeFigures(FIGURES, false))?.jobs).toBeNull();
  });

  it('keep a range of no request as null, and refuse text of another version or not JSON', () => {
    const none = decodeFigures(encodeFigures({ ...FIGURES, latencyMin: null, latencyMax: null }, false));
    expect(none?.latencyMin).toBeNull();
    expect(none?.latencyMax).toBeNull();
    expect(decodeFigures('{"v":2,"r":[1,2,3]}')).toBeUndefined();
    expect(decodeFigures('not json')).toBeUndefined();
  });
});
