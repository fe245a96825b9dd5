import { describe, expect, it } from 'vitest';
import type { WireEndpointHistory } from '../../src/client/index.js';
import { chartsOf, duration, intervalText, timeRange } from './chart-data.js';
import { fittingRange } from './chart-range.js';

const zeros = [0, 0, 0];

function history(overrides: Partial<WireEndpointHistory> = {}): WireEndpointHistory {
  return {
    id: 'ep',
    intervalSeconds: 10,
    capacity: 360,
    at: [1_764_150_000_000, 1_764_150_010_000, 1_764_150_020_000],
    requests: { ok: [5, 0, 7], clientErrors: [1, 0, 0], serverErrors: [0, 0, 2] },
    latencyMs: { p50: [12, null, 40], p99: [90, null, 1500] },
    queue: { depth: [0, 4, 1], oldestWaitMs: [0, 2500, 300] },
    inFlight: [1, 2, 3],
    workers: {
      pending: zeros,
      starting: [1, 0, 0],
      running: [0, 1, 2],
      failed: zeros,
    },
    desiredWorkers: [1, 2, 2],
    coldStarts: { count: [1, 0, 0], meanMs: [1800, null, null] },
    ...overrides,
  };
}

const chart = (id: string, h = history()) => chartsOf(h).charts.find((c) => c.id === id);

describe('chartsOf', () => {
  it('puts every chart on one time axis in seconds, and counts the requests in it', () => {
    const charts = chartsOf(history());
    expect(charts.x).toEqual([1_764_150_000, 1_764_150_010, 1_764_150_020]);
    expect(charts.charts.map((c) => c.id)).toEqual([
      'requests',
      'latency',
      'queue',
      'workers',
      'cold-starts',
    ]);
    expect(charts.requests).toBe(15);
  });

  it('draws requests as bars by status class, and says the last interval', () => {
    const requests = chart('requests');
    expect(requests?.title).toBe('Requests per 10 s, by status');
    expect(requests?.series.map((s) => [s.label, s.kind, s.values])).toEqual([
      ['< 400', 'steps', [5, 0, 7]],
      ['4xx', 'steps', [1, 0, 0]],
      ['5xx', 'steps', [0, 0, 2]],
    ]);
    expect(requests?.summary).toBe('15 requests in the chart; the last 10 s: 7 below 400, 0 4xx, 2 5xx');
  });

  it('leaves gaps in latency where no request ended, and says the latest that did', () => {
    const latency = chart('latency');
    expect(latency?.series.map((s) => s.values)).toEqual([
      [12, null, 40],
      [90, null, 1500],
    ]);
    expect(latency?.summary).toBe('latest p50 40 ms, p99 1.5 s');
    const quiet = history({ latencyMs: { p50: [12, null, null], p99: [90, null, null] } });
    expect(chart('latency', quiet)?.summary).toBe('latest p50 12 ms, p99 90 ms');
    expect(chart('latency', history({ latencyMs: { p50: [], p99: [] } }))?.summary).toBe(
      'no request in the chart',
    );
  });

  it('shows the queue with its oldest wait in seconds on the right axis', () => {
    const queue = chart('queue');
    expect(queue?.series.map((s) => [s.scale, s.values])).toEqual([
      ['y', [0, 4, 1]],
      ['y2', [0, 2.5, 0.3]],
    ]);
    expect(queue?.summary).toBe('now 1 queued, the oldest for 300 ms; at most 4 in the chart');
  });

  it('draws only the worker states that had workers, and the desired count', () => {
    const workers = chart('workers');
    expect(workers?.series.map((s) => s.label)).toEqual(['starting', 'running', 'desired']);
    expect(workers?.series.at(-1)?.values).toEqual([1, 2, 2]);
    expect(workers?.summary).toBe('now 2 running; 2 desired');
    const undecided = history({ desiredWorkers: [null, null, null] });
    expect(chart('workers', undecided)?.summary).toBe('now 2 running');
  });

  it('counts wakes from zero with their duration in seconds', () => {
    const cold = chart('cold-starts');
    expect(cold?.series.map((s) => s.label)).toEqual([
      'cold starts',
      'thaws',
      'restores',
      'mean duration (s)',
    ]);
    expect(cold?.series.map((s) => s.values)).toEqual([
      [1, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
      [1.8, null, null],
    ]);
    expect(cold?.summary).toBe('1 wake from zero in the chart, the last took 1.8 s');
    expect(
      chart('cold-starts', history({ coldStarts: { count: zeros, meanMs: [null, null, null] } }))?.summary,
    ).toBe('no wake from zero in the chart');
    // By tier: of 3 wakes in the first interval, one a thaw and one a restore.
    const tiers = history({
      coldStarts: { count: [3, 1, 0], meanMs: [600, 20, null], thaws: [1, 1, 0], restores: [1, 0, 0] },
    });
    expect(
      chart('cold-starts', tiers)
        ?.series.slice(0, 3)
        .map((s) => s.values),
    ).toEqual([
      [1, 0, 0],
      [1, 1, 0],
      [1, 0, 0],
    ]);
  });
});

describe('duration and intervalText', () => {
  it('say times for people', () => {
    expect(duration(null)).toBe('-');
    expect(duration(4.25)).toBe('4.3 ms');
    expect(duration(250)).toBe('250 ms');
    expect(duration(1800)).toBe('1.8 s');
    expect(duration(42_000)).toBe('42 s');
    expect(intervalText(10)).toBe('10 s');
    expect(intervalText(60)).toBe('1 min');
    expect(intervalText(3600)).toBe('1 h');
    expect(intervalText(5400)).toBe('90 min');
  });
});

describe('timeRange', () => {
  it('spans the range that holds the one sample there is, ending at it (not years around it)', () => {
    const h = history({ at: [1_764_150_000_000], intervalSeconds: 10, capacity: 360 });
    const charts = chartsOf(h);
    expect(timeRange(charts.x, fittingRange(h).seconds)).toEqual([1_764_150_000 - 300, 1_764_150_000]);
  });

  it('keeps the same window for several samples, ending at the last', () => {
    const charts = chartsOf(history());
    expect(timeRange(charts.x, 3600)).toEqual([1_764_150_020 - 3600, 1_764_150_020]);
  });

  it("leaves uPlot's range where the span or the samples are unknown", () => {
    expect(timeRange([10, 20], null)).toBeUndefined();
    expect(timeRange([], 3600)).toBeUndefined();
  });
});

describe('the job charts', () => {
  const jobs = {
    inQueue: [0, 6, 2],
    inProgress: [0, 2, 2],
    completed: [0, 3, 9],
    failed: [0, 1, 0],
    cancelled: [0, 0, 1],
    timedOut: [0, 0, 0],
    retried: [0, 1, 0],
    delayMs: { p50: [null, 120, 2_400], p95: [null, 300, 9_000] },
    executionMs: { p50: [null, 4_000, null], p95: [null, 8_000, null] },
  };

  it('are left out for an endpoint that had no job, or a server that sends none', () => {
    const none = {
      inQueue: zeros,
      inProgress: zeros,
      completed: zeros,
      failed: zeros,
      cancelled: zeros,
      timedOut: zeros,
      retried: zeros,
      delayMs: { p50: [null, null, null], p95: [null, null, null] },
      executionMs: { p50: [null, null, null], p95: [null, null, null] },
    };
    expect(chartsOf(history({ jobs: none })).charts.map((c) => c.id)).not.toContain('jobs');
    expect(chartsOf(history()).charts).toHaveLength(5);
    expect(chartsOf(history()).jobs).toBe(0);
  });

  it('show the jobs queued and running, those finished by outcome, and their times in seconds', () => {
    const charts = chartsOf(history({ jobs }));
    expect(charts.charts.map((c) => c.id).slice(5)).toEqual(['jobs', 'jobs-finished', 'job-times']);
    expect(charts.jobs).toBe(14);
    const live = chart('jobs', history({ jobs }));
    expect(live?.series.map((s) => [s.label, s.values])).toEqual([
      ['in queue', [0, 6, 2]],
      ['in progress', [0, 2, 2]],
    ]);
    expect(live?.summary).toBe('now 2 in the queue, 2 in progress; at most 6 queued in the chart');
    const finished = chart('jobs-finished', history({ jobs }));
    expect(finished?.title).toBe('Jobs finished per 10 s, by outcome');
    expect(finished?.series.map((s) => [s.label, s.kind])).toEqual([
      ['completed', 'steps'],
      ['failed', 'steps'],
      ['cancelled', 'steps'],
      ['timed out', 'steps'],
      ['retried', 'steps'],
    ]);
    expect(finished?.summary).toBe(
      '14 jobs finished in the chart, 2 of them not completed; 1 retried; the last 10 s: 9 completed, 0 failed',
    );
    const times = chart('job-times', history({ jobs }));
    expect(times?.series.map((s) => s.values)).toEqual([
      [null, 0.12, 2.4],
      [null, 0.3, 9],
      [null, 4, null],
      [null, 8, null],
    ]);
    // The last interval's jobs were all cancelled in the queue: a delay, no execution.
    expect(times?.summary).toBe('latest delay p50 2.4 s, p95 9.0 s; none ran');
    const quiet = { ...jobs, delayMs: { p50: [null, null, null], p95: [null, null, null] } };
    expect(chart('job-times', history({ jobs: quiet }))?.summary).toBe('no finished job in the chart');
  });
});
