import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import { DEFAULT_JOB_POLICY } from '../domain/job.js';
import type { Worker } from '../domain/worker.js';
import { GatewayMetrics } from '../gateway/metrics.js';
import { TrafficHistory } from '../history/history.js';
import { JobEvents } from '../jobs/job-events.js';
import { JobMetrics } from '../jobs/job-metrics.js';
import { JobSignals } from '../jobs/job-signals.js';
import { type EndpointTraffic, NO_RECENT_JOBS } from '../ports/traffic.js';
import type { Store } from '../store/store.js';

const HOUR = 3_600_000;
const NO_USAGE = {
  gpuSeconds: { downloading: 0, starting: 0, active: 0, idle: 0, frozen: 0, suspended: 0 },
  timeBilledMs: 0,
  amount: 0,
  currency: 'USD',
};

const TRAFFIC: EndpointTraffic = {
  window: { since: Date.parse('2026-11-25T10:00:00.000Z'), seconds: 300 },
  requests: { total: 12, byStatus: { 200: 10, 499: 1, 504: 1 } },
  latencyMs: { p50: 7.5, p99: 2250, mean: 340.2 },
  queueWaitMs: { p50: 0.5, p99: 1900, mean: 210 },
  queueDepth: 3,
  inFlight: 2,
  coldStarts: { count: 1, meanMs: 1830 },
  thaws: { count: 2, meanMs: 24.5 },
  restores: { count: 0, meanMs: null },
};

describe.each(storeTargets())('GET endpoint/metrics on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  const apis: TestApi[] = [];
  const asked: string[] = [];

  beforeEach(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    store = opened.store;
  });
  afterEach(async () => {
    for (const api of apis.splice(0)) await api.app.close();
    asked.length = 0;
    await dispose();
  });

  /** A real history over a real GatewayMetrics, sampled by hand: the endpoints it knows of exist. */
  const timers = new ManualTimers(Date.parse('2026-11-26T10:00:00Z'));
  const gateway = new GatewayMetrics({ registry: new Registry(), clock: () => timers.now });
  const history = new TrafficHistory({
    sources: {
      counters: () => gateway.counters(),
      load: () => [],
      workers: () => [],
      desired: () => 2,
      exists: () => true,
    },
    clock: () => timers.now,
    timers,
    intervalSeconds: 10,
    samples: 360,
    maxEndpoints: 10,
  });

  const start = async (withGateway: boolean) => {
    const traffic = (endpointId: string) => {
      asked.push(endpointId);
      return TRAFFIC;
    };
    const api = await createTestApi(
      store,
      withGateway ? { traffic, history, desiredWorkers: (id) => (id === 'nope' ? undefined : 2) } : {},
    );
    apis.push(api);
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(created.status).toBe(200);
    return { api, id: created.body.id as string };
  };

  const worker = (id: string, endpointId: string, state: Worker['status']['state']): Worker => ({
    id,
    endpointId,
    ownerId: 'owner-a',
    revision: 1,
    status: { state, error: '', message: '' },
    healthy: state === 'running',
    gpuUuids: [],
    address: null,
    createdAt: 1_000,
    updatedAt: 1_000,
    readyAt: null,
  });

  it('is linked from the endpoint, next to its log, in get and list', async () => {
    const { api, id } = await start(true);
    const url = `http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/metrics?id=${id}`;
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.metrics).toBe(url);
    expect((await api.call('GET', 'endpoints')).body.endpoints[0].metrics).toBe(url);
  });

  it("summarises the endpoint's workers by state, the ready ones apart, and its traffic with its window", async () => {
    const { api, id } = await start(true);
    for (const [workerId, state] of [
      ['w1', 'running'],
      ['w2', 'running'],
      ['w3', 'starting'],
      ['w4', 'failed'],
      ['w5', 'failed'],
    ] as const) {
      await store.workers.upsert(worker(workerId, id, state));
    }
    const answer = await api.call('GET', `endpoint/metrics?endpoint_id=${id}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id,
      workers: { running: 2, starting: 1, failed: 2 },
      readyWorkers: 2,
      ...TRAFFIC,
      // The same wakes by tier, as servers before `thaws` and `restores` answered them.
      wakes: {
        thaw: { count: 2, meanMs: 24.5 },
        restore: { count: 0, meanMs: null },
        cold: { count: 1, meanMs: 1830 },
      },
      window: { since: '2026-11-25T10:00:00.000Z', seconds: 300, replica: null },
      desiredWorkers: 2,
      recent: { seconds: 0, requests: 0, requestsPerMinute: 0, latencyMs: { p50: null, p99: null } },
      jobs: {
        inQueue: 0,
        inProgress: 0,
        recent: { seconds: 0, ...NO_RECENT_JOBS },
      },
      usage: { lastHour: NO_USAGE, lastDay: NO_USAGE },
    });
    expect(asked).toEqual([id]);
  });

  it('answers null traffic where this process runs no gateway', async () => {
    const { api, id } = await start(false);
    expect((await api.call('GET', `endpoint/metrics?id=${id}`)).body).toEqual({
      id,
      workers: {},
      readyWorkers: 0,
      window: null,
      requests: null,
      latencyMs: null,
      queueWaitMs: null,
      queueDepth: null,
      inFlight: null,
      coldStarts: null,
      thaws: null,
      restores: null,
      wakes: null,
      desiredWorkers: null,
      recent: null,
      jobs: { inQueue: 0, inProgress: 0, recent: null },
      usage: { lastHour: NO_USAGE, lastDay: NO_USAGE },
    });
    const history = await api.call('GET', `endpoint/metrics/history?id=${id}`);
    expect(history.status).toBe(200);
    expect(history.body).toMatchObject({ id, intervalSeconds: null, capacity: 0, at: [], workers: {} });
  });

  it("gives the ledger's GPU time and price of the endpoint's workers over the last hour and the last day", async () => {
    const { api, id } = await start(false);
    const now = Date.now();
    const holding = {
      workerId: 'w1',
      ownerId: 'owner-a',
      endpointId: id,
      gpuProductId: 'h100-80g',
      gpuCount: 2,
      hostMemoryBytes: 0,
    };
    const other = { ...holding, workerId: 'w2', endpointId: 'another-endpoint' };
    await store.usageSegments.apply([
      { holding, at: now - 2 * HOUR, state: 'idle' },
      { holding: other, at: now - 2 * HOUR, state: 'idle' },
    ]);
    await store.usageSegments.apply([{ holding, at: now - HOUR / 2, state: 'active' }]);
    const { usage } = (await api.call('GET', `endpoint/metrics?id=${id}`)).body;
    // Its open span counts up to the question: a second or so after `now`.
    expect(usage.lastHour.gpuSeconds.idle).toBeCloseTo(2 * 1800, -1);
    expect(usage.lastHour.gpuSeconds.active).toBeGreaterThanOrEqual(2 * 1800);
    expect(usage.lastHour.gpuSeconds.active).toBeLessThan(2 * 1810);
    expect(usage.lastDay.gpuSeconds.idle).toBeCloseTo(2 * 5400, -1);
    expect(usage.lastDay.timeBilledMs).toBeGreaterThanOrEqual(2 * HOUR);
    expect(usage.lastDay.timeBilledMs).toBeLessThan(2 * HOUR + 10_000);
    expect(usage.lastDay.currency).toBe('USD');
  });

  it("serves the history's samples of the endpoint, and its last minutes beside its metrics", async () => {
    const { api, id } = await start(true);
    for (let i = 0; i < 6; i++) gateway.observeRequest(id, 200, 40, 0);
    timers.now += 10_000;
    history.sample();
    gateway.observeRequest(id, 503, 90, 0);
    timers.now += 10_000;
    history.sample();
    const answer = await api.call('GET', `endpoint/metrics/history?endpoint_id=${id}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      id,
      intervalSeconds: 10,
      capacity: 360,
      at: [timers.now - 10_000, timers.now],
      requests: { ok: [6, 0], clientErrors: [0, 0], serverErrors: [0, 1] },
      latencyMs: { p50: [40, 90], p99: [40, 90] },
      desiredWorkers: [2, 2],
      coldStarts: { count: [0, 0], meanMs: [null, null] },
      thaws: { count: [0, 0], meanMs: [null, null] },
      restores: { count: [0, 0], meanMs: [null, null] },
    });
    expect(answer.body.workers.running).toEqual([0, 0]);
    const metrics = await api.call('GET', `endpoint/metrics?id=${id}`);
    expect(metrics.body.recent).toEqual({
      seconds: 20,
      requests: 7,
      requestsPerMinute: 21,
      latencyMs: { p50: 40, p99: 90 },
    });
  });

  it("counts the endpoint's jobs queued and running now from the store, and those finished in its last minutes", async () => {
    const events = new JobEvents();
    const signals = new JobSignals({
      jobs: store.jobs,
      events,
      clock: () => timers.now,
      timers,
      logger: { warn: () => {}, error: () => {} },
      refreshMs: 1_000,
    });
    const jobs = new JobMetrics({ registry: new Registry(), events, live: () => signals.live() });
    const jobHistory = new TrafficHistory({
      sources: {
        counters: () => new Map(),
        load: () => [],
        workers: () => [],
        desired: () => undefined,
        exists: () => true,
        jobs: (exists) => jobs.counters(exists),
        liveJobs: () => jobs.live(),
      },
      clock: () => timers.now,
      timers,
      intervalSeconds: 10,
      samples: 360,
      maxEndpoints: 10,
    });
    const api = await createTestApi(store, { history: jobHistory });
    apis.push(api);
    const id = (await api.call('POST', 'endpoint/create', originalClientCreateBody())).body.id as string;
    const t0 = timers.now;
    for (const jobId of ['j-1', 'j-2', 'j-3', 'j-4'])
      await store.jobs.enqueue(
        {
          id: jobId,
          endpointId: id,
          ownerId: 'owner-a',
          input: '{}',
          webhook: null,
          policy: DEFAULT_JOB_POLICY,
          sync: false,
          createdAt: t0,
        },
        600_000,
      );
    await store.jobs.take({ endpointId: id, workerId: 'w-1', max: 2, cap: 2, now: t0 + 200 });
    const done = await store.jobs.complete({
      jobId: 'j-1',
      workerId: 'w-1',
      status: 'COMPLETED',
      output: '1',
      error: null,
      now: t0 + 3_200,
    });
    if (done.job) events.emit('finished', { job: done.job });
    events.emit('retried', { endpointId: id, count: 1 });
    await signals.refresh();
    timers.now += 10_000;
    jobHistory.sample();
    const answer = await api.call('GET', `endpoint/metrics?id=${id}`);
    expect(answer.body.jobs).toEqual({
      inQueue: 2,
      inProgress: 1,
      recent: {
        seconds: 10,
        completed: 1,
        failed: 0,
        cancelled: 0,
        timedOut: 0,
        retried: 1,
        // One job, 200 ms in the queue and 3 s on its worker: within its buckets (100-250 ms, 2.5-5 s).
        delayMs: { p50: expect.any(Number), p95: expect.any(Number) },
        executionMs: { p50: expect.any(Number), p95: expect.any(Number) },
      },
    });
    expect(answer.body.jobs.recent.delayMs.p50).toBeGreaterThan(100);
    expect(answer.body.jobs.recent.delayMs.p50).toBeLessThanOrEqual(250);
    expect(answer.body.jobs.recent.executionMs.p95).toBeGreaterThan(2_500);
    expect(answer.body.jobs.recent.executionMs.p95).toBeLessThanOrEqual(5_000);
    // The requests' last minutes say nothing of jobs.
    expect(answer.body.recent).toEqual({
      seconds: 10,
      requests: 0,
      requestsPerMinute: 0,
      latencyMs: { p50: null, p99: null },
    });
    const charted = await api.call('GET', `endpoint/metrics/history?id=${id}`);
    expect(charted.body.jobs).toMatchObject({ inQueue: [2], inProgress: [1], completed: [1], retried: [1] });
    jobs.close();
    await signals.close();
  });

  it('says 0 desired workers for a stopped endpoint', async () => {
    const { api, id } = await start(true);
    expect((await api.call('POST', 'endpoint/stop', { id })).status).toBe(200);
    expect((await api.call('GET', `endpoint/metrics?id=${id}`)).body.desiredWorkers).toBe(0);
  });

  it("answers 404 for another owner's endpoint or an unknown one, 400 without an id", async () => {
    const { api, id } = await start(true);
    expect((await api.call('GET', `endpoint/metrics?id=${id}`, undefined, api.keyB)).status).toBe(404);
    expect((await api.call('GET', 'endpoint/metrics?id=nope')).body.reason).toBe('ENDPOINT_NOT_FOUND');
    expect((await api.call('GET', 'endpoint/metrics')).body.reason).toBe('INVALID_QUERY');
    expect((await api.call('GET', `endpoint/metrics?id=${id}`, undefined, null)).status).toBe(401);
    expect(asked).toEqual([]);
    const history = `endpoint/metrics/history?id=${id}`;
    expect((await api.call('GET', history, undefined, api.keyB)).status).toBe(404);
    expect((await api.call('GET', 'endpoint/metrics/history?id=nope')).body.reason).toBe(
      'ENDPOINT_NOT_FOUND',
    );
    expect((await api.call('GET', 'endpoint/metrics/history')).body.reason).toBe('INVALID_QUERY');
    expect((await api.call('GET', history, undefined, null)).status).toBe(401);
  });
});
