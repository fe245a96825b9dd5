import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { type EndpointLoad, GatewayMetrics } from '../gateway/metrics.js';
import { type EndpointWorker, JOB_TIME_BUCKETS, type JobCounters, type LiveJobs } from '../ports/traffic.js';
import { type HistoryOptions, TrafficHistory } from './history.js';

const START = Date.parse('2026-11-26T10:00:00Z');

/** A real GatewayMetrics fed by hand, load, workers and desired counts set by hand, and manual time. */
function harness(options: Partial<Pick<HistoryOptions, 'samples' | 'maxEndpoints' | 'recentSeconds'>> = {}) {
  const timers = new ManualTimers(START);
  const metrics = new GatewayMetrics({ registry: new Registry(), clock: () => timers.now });
  const load: EndpointLoad[] = [];
  const workers: EndpointWorker[] = [];
  const desired = new Map<string, number>();
  const deleted = new Set<string>();
  const jobs = new Map<string, JobCounters>();
  const liveJobs = new Map<string, LiveJobs>();
  const history = new TrafficHistory({
    sources: {
      counters: () => metrics.counters(),
      load: () => load,
      workers: () => workers,
      desired: (id) => desired.get(id),
      exists: (id) => !deleted.has(id),
      jobs: (exists) => new Map([...jobs].filter(([id]) => exists(id))),
      liveJobs: () => liveJobs,
    },
    clock: () => timers.now,
    timers,
    intervalSeconds: 10,
    samples: options.samples ?? 360,
    maxEndpoints: options.maxEndpoints ?? 100,
    ...(options.recentSeconds === undefined ? {} : { recentSeconds: options.recentSeconds }),
  });
  /** Ten seconds pass, then a sample is taken. */
  const tick = () => {
    timers.now += 10_000;
    history.sample();
  };
  return { timers, metrics, load, workers, desired, deleted, jobs, liveJobs, history, tick };
}

describe('TrafficHistory', () => {
  it("keeps each interval's requests by class and their latency percentiles, not the totals", () => {
    const h = harness();
    for (let i = 0; i < 98; i++) h.metrics.observeRequest('ep-a', 200, 7, 0);
    h.metrics.observeRequest('ep-a', 404, 2_000, 0);
    h.metrics.observeRequest('ep-a', 503, 2_000, 0);
    h.tick();
    h.metrics.observeRequest('ep-a', 201, 300, 0);
    h.tick();
    h.tick();
    const history = h.history.of('ep-a');
    expect(history.at).toEqual([START + 10_000, START + 20_000, START + 30_000]);
    expect(history.requests).toEqual({ ok: [98, 1, 0], clientErrors: [1, 0, 0], serverErrors: [1, 0, 0] });
    const [p50, single, none] = history.latencyMs.p50;
    expect(p50).toBeGreaterThan(5);
    expect(p50).toBeLessThanOrEqual(10);
    expect(history.latencyMs.p99[0]).toBeGreaterThan(1_000);
    expect(history.latencyMs.p99[0]).toBeLessThanOrEqual(2_000);
    // One request of 300 ms in the second interval: within what that interval saw, not the bucket's middle.
    expect(single).toBe(300);
    expect(history.latencyMs.p99[1]).toBe(300);
    expect(none).toBeNull();
    expect(history.intervalSeconds).toBe(10);
    expect(history.capacity).toBe(360);
  });

  it('samples queue depth and its oldest wait, in flight, workers by state and the desired count at each tick', () => {
    const h = harness();
    h.load.push({ endpointId: 'ep-a', queueLength: 3, oldestEnqueuedAt: START + 6_000, inFlight: 2 });
    h.workers.push(
      { endpointId: 'ep-a', state: 'running' },
      { endpointId: 'ep-a', state: 'running' },
      { endpointId: 'ep-a', state: 'starting' },
      { endpointId: 'ep-b', state: 'failed' },
    );
    h.desired.set('ep-a', 3);
    h.tick();
    h.load.splice(0);
    h.workers.splice(2);
    h.tick();
    const a = h.history.of('ep-a');
    expect(a.queue).toEqual({ depth: [3, 0], oldestWaitMs: [4_000, 0] });
    expect(a.inFlight).toEqual([2, 0]);
    expect(a.workers.running).toEqual([2, 2]);
    expect(a.workers.starting).toEqual([1, 0]);
    expect(a.workers.pending).toEqual([0, 0]);
    expect(Object.keys(a.workers)).toHaveLength(11);
    expect(a.desiredWorkers).toEqual([3, 3]);
    // ep-b: one failed worker, then nothing; the scaler never decided for it.
    const b = h.history.of('ep-b');
    expect(b.workers.failed).toEqual([1, 0]);
    expect(b.desiredWorkers).toEqual([null, null]);
  });

  it('counts the wakes from zero of each interval by tier, each with its own mean duration', () => {
    const h = harness();
    h.metrics.observeColdStart('ep-a', 3_289);
    h.metrics.observeColdStart('ep-a', 24, 'thaw');
    h.tick();
    h.tick();
    h.metrics.observeColdStart('ep-a', 500);
    h.metrics.observeColdStart('ep-a', 2_100, 'restore');
    h.metrics.observeColdStart('ep-a', 30, 'thaw');
    h.tick();
    const history = h.history.of('ep-a');
    // A 24 ms thaw beside a 3,289 ms cold start: neither averaged into the other.
    expect(history.coldStarts).toEqual({ count: [1, 0, 1], meanMs: [3_289, null, 500] });
    expect(history.thaws).toEqual({ count: [1, 0, 1], meanMs: [24, null, 30] });
    expect(history.restores).toEqual({ count: [0, 0, 1], meanMs: [null, null, 2_100] });
  });

  it('makes no ring for an endpoint with nothing to show, and answers empty columns for it', () => {
    const h = harness();
    h.tick();
    expect(h.history.usage()).toEqual({ endpoints: 0, bytes: 0 });
    const empty = h.history.of('ep-a');
    expect(empty.at).toEqual([]);
    expect(empty.requests.ok).toEqual([]);
    expect(empty.workers.running).toEqual([]);
    expect(h.history.recent('ep-a')).toBeUndefined();
  });

  it('keeps at most `samples` samples per endpoint, and the stated bytes per endpoint', () => {
    const h = harness({ samples: 5 });
    h.workers.push({ endpointId: 'ep-a', state: 'running' }, { endpointId: 'ep-b', state: 'running' });
    for (let i = 0; i < 12; i++) h.tick();
    expect(h.history.of('ep-a').at).toHaveLength(5);
    expect(h.history.of('ep-a').at.at(-1)).toBe(START + 120_000);
    const perEndpoint = TrafficHistory.bytesPerEndpoint({ samples: 5, intervalSeconds: 10 });
    expect(h.history.usage()).toEqual({ endpoints: 2, bytes: 2 * perEndpoint });
    // The defaults: one hour at 10 s, the last 5 minutes' latency buckets.
    expect(TrafficHistory.bytesPerEndpoint({ samples: 360, intervalSeconds: 10 })).toBe(
      360 * (8 + 26 * 4) + 30 * (8 + 18 * 4),
    );
  });

  it('drops the ring of a deleted endpoint at once, and of an idle one after a whole ring of nothing', () => {
    const h = harness({ samples: 3 });
    h.workers.push({ endpointId: 'ep-a', state: 'running' }, { endpointId: 'ep-b', state: 'running' });
    h.tick();
    h.workers.splice(0);
    h.deleted.add('ep-b');
    h.tick();
    expect(h.history.of('ep-b').at).toEqual([]);
    expect(h.history.of('ep-a').at).toHaveLength(2);
    h.tick();
    expect(h.history.of('ep-a').at).toHaveLength(3);
    h.tick();
    // 30 s (three samples) without anything since it was last active: gone.
    expect(h.history.of('ep-a').at).toEqual([]);
    expect(h.history.usage().endpoints).toBe(0);
  });

  it('counts requests served before the endpoint was known here in the first sample that knows it', () => {
    const h = harness();
    // The gateway found the new endpoint in the store and served it; this replica's routes have not caught up.
    h.deleted.add('ep-new');
    h.metrics.observeRequest('ep-new', 401, 1, 0);
    h.metrics.observeRequest('ep-new', 401, 1, 0);
    h.metrics.observeRequest('ep-new', 401, 1, 0);
    h.tick();
    expect(h.history.of('ep-new').at).toEqual([]);
    h.deleted.delete('ep-new');
    h.metrics.observeRequest('ep-new', 401, 1, 0);
    h.tick();
    expect(h.history.of('ep-new').requests.clientErrors).toEqual([4]);
  });

  it('tracks at most maxEndpoints endpoints; another gets a ring once one goes', () => {
    const h = harness({ maxEndpoints: 2 });
    h.workers.push(
      { endpointId: 'ep-a', state: 'running' },
      { endpointId: 'ep-b', state: 'running' },
      { endpointId: 'ep-c', state: 'running' },
    );
    h.tick();
    expect(h.history.usage().endpoints).toBe(2);
    expect(h.history.of('ep-c').at).toEqual([]);
    h.deleted.add('ep-a');
    h.tick();
    h.tick();
    expect(h.history.of('ep-c').at.length).toBeGreaterThan(0);
    expect(h.history.usage().endpoints).toBe(2);
  });

  it('starts counting again from zero when the gateway forgot and began again an endpoint’s counts', () => {
    const h = harness();
    for (let i = 0; i < 5; i++) h.metrics.observeRequest('ep-a', 200, 7, 0);
    h.tick();
    h.metrics.forget('ep-a');
    h.metrics.observeRequest('ep-a', 200, 7, 0);
    h.tick();
    expect(h.history.of('ep-a').requests.ok).toEqual([5, 1]);
  });

  it('gives the requests per minute and percentiles of the last minutes from the buckets added up', () => {
    const h = harness({ recentSeconds: 30 });
    for (let i = 0; i < 30; i++) h.metrics.observeRequest('ep-a', 200, 7, 0);
    h.tick();
    for (let i = 0; i < 10; i++) h.metrics.observeRequest('ep-a', 500, 2_000, 0);
    h.tick();
    h.tick();
    expect(h.history.recent('ep-a')).toMatchObject({ seconds: 30, requests: 40, requestsPerMinute: 80 });
    const recent = h.history.recent('ep-a');
    // A quarter were slow: the median is one of the fast ones, p99 one of the slow ones.
    expect(recent?.latencyMs.p50).toBeLessThanOrEqual(10);
    expect(recent?.latencyMs.p99).toBeGreaterThan(1_000);
    // The window moves: the fast interval falls out of it.
    h.tick();
    expect(h.history.recent('ep-a')).toMatchObject({ requests: 10, requestsPerMinute: 20 });
    expect(h.history.recent('ep-a')?.latencyMs.p50).toBe(2_000);
    h.tick();
    h.tick();
    expect(h.history.recent('ep-a')).toMatchObject({
      seconds: 30,
      requests: 0,
      requestsPerMinute: 0,
      latencyMs: { p50: null, p99: null },
    });
  });

  it("keeps each interval's finished jobs, retries and times, and the jobs queued and running at each sample", () => {
    const h = harness({ recentSeconds: 30 });
    const counters = (completed: number, failed: number, retried: number, delay: [number, number][]) => {
      const delayCounts = new Array<number>(JOB_TIME_BUCKETS.length + 1).fill(0);
      for (const [le, n] of delay) delayCounts[JOB_TIME_BUCKETS.indexOf(le)] = n;
      return {
        finished: { completed, failed, cancelled: 0, timedOut: 0 },
        retried,
        delayCounts,
        executionCounts: new Array<number>(JOB_TIME_BUCKETS.length + 1).fill(0),
      };
    };
    // A queue endpoint scaled to zero with jobs waiting: it has a ring for its jobs alone.
    h.liveJobs.set('ep-q', { inQueue: 5, inProgress: 0 });
    h.tick();
    h.liveJobs.set('ep-q', { inQueue: 2, inProgress: 3 });
    h.jobs.set('ep-q', counters(4, 1, 1, [[0.1, 5]]));
    h.tick();
    h.liveJobs.delete('ep-q');
    h.jobs.set(
      'ep-q',
      counters(9, 1, 1, [
        [0.1, 5],
        [10, 5],
      ]),
    );
    h.tick();
    const { jobs } = h.history.of('ep-q');
    expect(jobs.inQueue).toEqual([5, 2, 0]);
    expect(jobs.inProgress).toEqual([0, 3, 0]);
    expect(jobs.completed).toEqual([0, 4, 5]);
    expect(jobs.failed).toEqual([0, 1, 0]);
    expect(jobs.retried).toEqual([0, 1, 0]);
    expect(jobs.delayMs.p50[0]).toBeNull();
    expect(jobs.delayMs.p50[1]).toBeLessThanOrEqual(100);
    expect(jobs.delayMs.p50[2]).toBeGreaterThan(5_000);
    expect(jobs.executionMs.p95).toEqual([null, null, null]);
    // The last 30 s: every finished job, the delay percentiles from the buckets added up.
    const recent = h.history.recent('ep-q')?.jobs;
    expect(recent).toMatchObject({ completed: 9, failed: 1, cancelled: 0, timedOut: 0, retried: 1 });
    expect(recent?.delayMs.p50).toBeLessThanOrEqual(100);
    expect(recent?.delayMs.p95).toBeGreaterThan(5_000);
  });

  it('gives an endpoint its job rings only once it has jobs, zeros before them', () => {
    const h = harness({ samples: 5 });
    h.workers.push({ endpointId: 'ep-a', state: 'running' });
    h.tick();
    const plain = h.history.usage().bytes;
    expect(plain).toBe(TrafficHistory.bytesPerEndpoint({ samples: 5, intervalSeconds: 10 }));
    expect(h.history.of('ep-a').jobs.completed).toEqual([0]);
    h.liveJobs.set('ep-a', { inQueue: 1, inProgress: 0 });
    h.tick();
    expect(h.history.usage().bytes).toBe(
      plain + TrafficHistory.jobBytesPerEndpoint({ samples: 5, intervalSeconds: 10 }),
    );
    expect(h.history.of('ep-a').jobs.inQueue).toEqual([0, 1]);
    expect(h.history.of('ep-a').jobs.delayMs.p50).toEqual([null, null]);
    // The defaults: 360 samples of 11 figures, and the last 5 minutes' two sets of 18 time buckets.
    expect(TrafficHistory.jobBytesPerEndpoint({ samples: 360, intervalSeconds: 10 })).toBe(
      360 * (8 + 11 * 4) + 30 * (8 + 36 * 4),
    );
  });

  it('hands the jobs of a sample to the cluster history, null where the endpoint had none', () => {
    const h = harness();
    h.workers.push({ endpointId: 'ep-a', state: 'running' });
    h.liveJobs.set('ep-b', { inQueue: 3, inProgress: 1 });
    h.timers.now += 10_000;
    const samples = h.history.sample(true);
    expect(samples.find((s) => s.endpointId === 'ep-a')?.figures.jobs).toBeNull();
    expect(samples.find((s) => s.endpointId === 'ep-b')?.figures.jobs).toMatchObject({
      inQueue: 3,
      inProgress: 1,
    });
  });

  it('samples every interval once started, and no more once stopped', () => {
    const h = harness();
    h.workers.push({ endpointId: 'ep-a', state: 'running' });
    h.history.start();
    h.history.start();
    h.timers.advance(35_000);
    expect(h.history.of('ep-a').at).toEqual([START + 10_000, START + 20_000, START + 30_000]);
    h.history.stop();
    expect(h.timers.count).toBe(0);
    h.timers.advance(60_000);
    expect(h.history.of('ep-a').at).toHaveLength(3);
  });
});
