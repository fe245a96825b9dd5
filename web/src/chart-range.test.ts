import { describe, expect, it } from 'vitest';
import type { WireEndpointHistory } from '../../src/client/index.js';
import { fittingRange, historyWithin, offeredRanges } from './chart-range.js';

const NOW = 1_764_150_000_000;

/**
 * `count` samples 10 s apart ending at NOW, one request in each, kept as `capacity` samples. Only some columns:
 * the cut is the same for every column, whatever the wire adds (wakes by tier).
 */
function history(count: number, capacity = 360): WireEndpointHistory {
  const at = Array.from({ length: count }, (_, i) => NOW - (count - 1 - i) * 10_000);
  const ones = at.map(() => 1);
  const zeros = at.map(() => 0);
  return {
    id: 'ep',
    intervalSeconds: 10,
    capacity,
    at,
    requests: { ok: ones, clientErrors: zeros, serverErrors: zeros },
    latencyMs: { p50: at.map(() => 12), p99: at.map(() => 40) },
    queue: { depth: zeros, oldestWaitMs: zeros },
    inFlight: zeros,
    workers: { running: ones },
    desiredWorkers: ones,
    coldStarts: { count: zeros, meanMs: at.map(() => null) },
    jobs: {
      inQueue: zeros,
      inProgress: zeros,
      completed: ones,
      failed: zeros,
      cancelled: zeros,
      timedOut: zeros,
      retried: zeros,
      delayMs: { p50: at.map(() => 100), p95: at.map(() => 200) },
      executionMs: { p50: at.map(() => 300), p95: at.map(() => 400) },
    },
  } as WireEndpointHistory;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe('the time range shown by default', () => {
  it('is 5 min for a server up 3 minutes, not the hour the history keeps', () => {
    expect(fittingRange(history(19)).label).toBe('5 min');
  });

  it('is 5 min for a single sample and for none', () => {
    expect(fittingRange(history(1)).label).toBe('5 min');
    expect(fittingRange(history(0)).label).toBe('5 min');
  });

  it('holds 5 minutes of samples exactly in 5 min, and one more sample in 1 h', () => {
    expect(fittingRange(history(31)).label).toBe('5 min');
    expect(fittingRange(history(32)).label).toBe('1 h');
    expect(fittingRange(history(360)).label).toBe('1 h');
  });

  it('is 24 h only where the history keeps more than an hour', () => {
    // 2 hours kept (720 samples): 90 minutes of samples need the 24 h range.
    expect(fittingRange(history(540, 720)).label).toBe('24 h');
    // The default hour kept: the largest range it can fill.
    expect(fittingRange({ ...history(2), at: [NOW - 7_200_000, NOW] }).label).toBe('1 h');
  });
});

describe('the ranges offered', () => {
  it('says why 24 h is not offered where the history keeps one hour', () => {
    const offered = offeredRanges(history(3));
    expect(offered.map((r) => [r.label, r.unavailable])).toEqual([
      ['5 min', undefined],
      ['1 h', undefined],
      ['24 h', 'this server keeps 1 h of history (history.samples x history.intervalSeconds)'],
    ]);
  });

  it('offers every range where the history keeps a day, and only 5 min where it keeps none', () => {
    expect(offeredRanges({ intervalSeconds: 60, capacity: 1440 }).every((r) => !r.unavailable)).toBe(true);
    const none = offeredRanges({ intervalSeconds: null, capacity: 0 });
    expect(none.filter((r) => r.unavailable === undefined).map((r) => r.label)).toEqual(['5 min']);
  });
});

describe('the history within a range', () => {
  it('keeps the samples of the last 5 minutes in every column, so that the charts count only those', () => {
    const hour = history(360);
    const cut = historyWithin(hour, 300);
    expect(cut.at).toHaveLength(31);
    expect(cut.at[0]).toBe(NOW - 300_000);
    expect(cut.requests.ok).toHaveLength(31);
    expect(cut.workers.running).toHaveLength(31);
    expect(cut.jobs?.delayMs.p95).toHaveLength(31);
    expect(cut.coldStarts.meanMs).toHaveLength(31);
    expect(cut.intervalSeconds).toBe(10);
    expect(sum(cut.requests.ok)).toBe(31);
    expect(sum(hour.requests.ok)).toBe(360);
  });

  it('is the history itself where it all fits, or is empty', () => {
    const short = history(5);
    expect(historyWithin(short, 300)).toBe(short);
    const empty = history(0);
    expect(historyWithin(empty, 300)).toBe(empty);
  });
});
