import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import { ManualTimers, settle } from '../../../test/support/manual-timers.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { FakeRuntime } from '../../runtime/fake/fake-runtime.js';
import { CrashLedger } from '../crashes/crash-ledger.js';
import { HealthProber } from '../health/health-prober.js';
import { answered } from '../health/probe-result.js';
import { GpuLedger } from '../placement/gpu-ledger.js';
import { RoutingTable } from '../routing-table.js';
import { RuntimeObserver } from '../runtime-observer.js';
import { RuntimeOutage } from '../runtime-outage.js';
import { ImagePreparer } from '../workers/image-preparer.js';
import { type ManagedWorker, pendingRecord } from '../workers/managed-worker.js';
import { WorkerBook } from '../workers/worker-book.js';
import { WorkerLifecycle } from './worker-lifecycle.js';
import { WorkerStarter } from './worker-starter.js';

interface Logged {
  level: 'info' | 'warn' | 'error';
  fields: object;
  message: string;
}

/** A lifecycle over the real book, GPU ledger, routing table and prober, on manual timers and the fake runtime. */
function setUp(awaitDrained?: () => Promise<void>) {
  const ended: string[] = [];
  const timers = new ManualTimers(1_000);
  const clock = () => timers.now;
  const endpoint: Endpoint = sampleEndpoint();
  const endpoints = new Map([[endpoint.id, endpoint]]);
  const book = new WorkerBook();
  const gpus = new GpuLedger();
  const routes = new RoutingTable();
  const runtime = new FakeRuntime({ clock, timers });
  const logged: Logged[] = [];
  const log = (level: Logged['level']) => (fields: object, message: string) =>
    logged.push({ level, fields, message });
  const logger = { info: log('info'), warn: log('warn'), error: log('error') };
  let probes = 0;
  /** Runtime listings begun (a test begins one by adding to it). */
  const listings = { begun: 0 };
  let lifecycle: WorkerLifecycle | undefined;
  const prober = new HealthProber({
    probe: async () => {
      probes += 1;
      return answered(200);
    },
    timers,
    startingIntervalMs: 5,
    target: (workerId) => {
      const record = book.get(workerId);
      return record?.address
        ? { address: record.address, check: endpoint.spec.health, appPort: endpoint.spec.port, fast: true }
        : undefined;
    },
    onResult: (workerId, healthy, flipped, cause) => lifecycle?.probed(workerId, healthy, flipped, cause),
  });
  lifecycle = new WorkerLifecycle({
    book,
    gpus,
    routes,
    prober,
    runtime,
    crashes: new CrashLedger({ policy: { baseMs: 10, capMs: 50, crashLoopAfter: 3 } }),
    logger,
    clock,
    listings: () => listings.begun,
    endpoints: () => endpoints,
    poke: () => {},
    failedKept: 1,
    awaitDrained,
    onEnded: (endpointId, workerId, reason) => ended.push(`${endpointId} ${workerId}: ${reason}`),
  });
  /** A worker whose container runs at an address, as a create leaves it. */
  const started = async (): Promise<ManagedWorker> => {
    const record = pendingRecord(endpoint, clock());
    book.track(record);
    lifecycle.move(record, { state: 'pulling', message: 'preparing the image' });
    record.gpuUuids = ['GPU-1'];
    const container = await runtime.create({
      workerId: record.id,
      endpointId: endpoint.id,
      ownerId: endpoint.ownerId,
      revision: endpoint.revision,
      image: endpoint.spec.image.ref,
      command: [],
      env: {},
      port: endpoint.spec.port,
      gpus: [],
      volumes: [],
      labels: {},
    });
    record.address = container.address ?? null;
    lifecycle.move(record, { state: 'starting', message: 'waiting' });
    return record;
  };
  const starter = new WorkerStarter({
    lifecycle,
    book,
    gpus,
    images: new ImagePreparer({
      runtime,
      revealCredentials: async () => undefined,
      clock,
      policy: { baseMs: 10, capMs: 50, crashLoopAfter: 3 },
      logger,
      onSettled: () => {},
    }),
    runtime,
    prober,
    crashes: new CrashLedger({ policy: { baseMs: 10, capMs: 50, crashLoopAfter: 3 } }),
    outage: new RuntimeOutage({ logger }),
    logger,
    clock,
    listings: () => 0,
    poke: () => {},
    storagePaths: new Map(),
    revealCredentials: async () => undefined,
  });
  return {
    starter,
    timers,
    endpoint,
    book,
    gpus,
    routes,
    runtime,
    logged,
    lifecycle,
    prober,
    started,
    ended,
    listings,
    probes: () => probes,
  };
}

/** A placed worker's start, its image pull and its container's start 50 ms each: it is pulling after 10 ms. */
async function startPulling({ timers, endpoint, book, runtime, starter }: ReturnType<typeof setUp>) {
  runtime.pullDelayMs = 50;
  runtime.startDelayMs = 50;
  const record = pendingRecord(endpoint, timers.now);
  book.track(record);
  const started = starter.start(record, endpoint, { gpus: [] }, timers.now);
  await timers.advanceSettling(10);
  expect(record.state).toBe('pulling');
  return { record, started };
}

describe('WorkerLifecycle', () => {
  it('refuses a move the table does not allow: logged at error with both states, the worker as it was', () => {
    const { endpoint, book, lifecycle, logged } = setUp();
    const record = pendingRecord(endpoint, 0);
    book.track(record);
    lifecycle.fail(record, 'RUNTIME_ERROR', 'boom');
    book.dirty.clear();

    expect(lifecycle.move(record, { state: 'running', message: '' })).toBe(false);

    expect(record.state).toBe('failed');
    expect(record.message).toBe('boom');
    expect(book.dirty.size).toBe(0);
    const errors = logged.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toBe('worker state transition refused');
    expect(errors[0]?.fields).toMatchObject({
      code: 'WORKER_TRANSITION_REFUSED',
      workerId: record.id,
      from: 'failed',
      to: 'running',
    });
  });

  it('a probe that passes routes the worker at once; failing it takes it out of routing and stops its probes', async () => {
    const { timers, endpoint, routes, lifecycle, prober, started, probes, logged } = setUp();
    const record = await started();
    prober.schedule(record.id, 0);
    for (let i = 0; i < 20 && record.state !== 'running'; i++) await timers.advanceSettling(5);
    expect(record.state).toBe('running');
    expect(probes()).toBeGreaterThan(0);
    expect(routes.routableWorkers(endpoint.id).map((w) => w.id)).toEqual([record.id]);

    lifecycle.fail(record, 'UNHEALTHY', 'gone bad');
    expect(routes.routableWorkers(endpoint.id)).toEqual([]);
    const before = probes();
    await timers.advanceSettling(1_000);
    expect(probes()).toBe(before);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('tells the moment a worker is chosen for removal, again as it stops and once its container is gone; a failure once', async () => {
    const { endpoint, lifecycle, started, ended, runtime } = setUp();
    const failing = await started();
    lifecycle.fail(failing, 'CRASH_LOOP', 'worker exited with code 1');
    lifecycle.fail(failing, 'CRASH_LOOP', 'worker exited with code 1 again');
    const removed = await started();
    const release = runtime.holdRemovals();
    lifecycle.drainAndRemove(removed, 'scaled down');
    // At once, not once drained or gone: the jobs it held go back before a take can cross its removal (issue 29).
    const failed = `${endpoint.id} ${failing.id}: worker exited with code 1`;
    const chosen = `${endpoint.id} ${removed.id}: scaled down`;
    expect(ended).toEqual([failed, chosen]);
    await settle();
    const stopped = `${endpoint.id} ${removed.id}: drained (scaled down); removing its container`;
    expect(ended).toEqual([failed, chosen, stopped]);
    release();
    await settle();
    expect(ended).toEqual([failed, chosen, stopped, chosen]);
  });

  it('drains, stops and forgets a worker, its GPUs held until the runtime has removed its container', async () => {
    const { endpoint, book, gpus, routes, runtime, lifecycle, started, logged } = setUp();
    const record = await started();
    lifecycle.probed(record.id, true, true, undefined);
    const release = runtime.holdRemovals();

    lifecycle.drainAndRemove(record, 'scaled down');
    expect(record.state).toBe('draining');
    expect(routes.routableWorkers(endpoint.id)).toEqual([]);
    await settle();
    expect(record.state).toBe('stopped');
    expect(gpus.held(book.all()).get('GPU-1')).toBe(record.id);

    release();
    await settle();
    expect(book.has(record.id)).toBe(false);
    expect(gpus.held(book.all()).size).toBe(0);
    expect(runtime.counters.removes).toBe(1);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('a listing begun before a worker was removed does not adopt it again; one begun after would', async () => {
    const { endpoint, book, gpus, runtime, lifecycle, started, listings, logged } = setUp();
    const record = await started();
    lifecycle.probed(record.id, true, true, undefined);
    const observer = new RuntimeObserver({ book, gpus, lifecycle, restartGraceMs: 1_000 });
    // A pass lists the runtime (the container is there), then the worker is removed before the pass reads it.
    listings.begun += 1;
    const before = { number: listings.begun, workers: await runtime.list({}), scope: [] };
    lifecycle.drainAndRemove(record, 'replaced by a new revision');
    await settle();
    expect(book.has(record.id)).toBe(false);

    observer.observe(before, new Map([[endpoint.id, endpoint]]), 0);
    expect(book.has(record.id)).toBe(false);
    expect(logged.filter((l) => l.message.includes('adopted'))).toEqual([]);
    // A listing begun after the removal that still showed the container would be a container to adopt.
    listings.begun += 1;
    observer.observe({ ...before, number: listings.begun }, new Map([[endpoint.id, endpoint]]), 0);
    expect(book.has(record.id)).toBe(true);
  });

  it('fails a worker whose removal failed; its GPUs stay held until its container is no longer listed', async () => {
    const { book, gpus, runtime, lifecycle, started } = setUp();
    const record = await started();
    runtime.unreachable();

    lifecycle.drainAndRemove(record, 'scaled down');
    await settle();
    expect(record).toMatchObject({ state: 'failed', error: 'RUNTIME_ERROR' });
    expect(record.message).toMatch(/^could not be removed: /);
    expect(gpus.held(book.all()).get('GPU-1')).toBe(record.id);

    lifecycle.removals.retry(new Set());
    expect(gpus.held(book.all()).size).toBe(0);
    expect(record.gpuUuids).toEqual([]);
  });

  it('an undrain before the removal puts a serving worker back into routing', async () => {
    const { endpoint, routes, lifecycle, started } = setUp();
    const record = await started();
    lifecycle.probed(record.id, true, true, undefined);
    lifecycle.drainAndRemove(record, 'drained by its owner', () => false);
    expect(routes.routableWorkers(endpoint.id)).toEqual([]);

    lifecycle.undrain(record, true);
    expect(record.state).toBe('running');
    expect(routes.routableWorkers(endpoint.id).map((w) => w.id)).toEqual([record.id]);
  });

  it('forgets failed workers beyond the newest kept', () => {
    const { endpoint, book, lifecycle } = setUp();
    const old = { ...pendingRecord(endpoint, 1) };
    const recent = { ...pendingRecord(endpoint, 2) };
    for (const record of [old, recent]) {
      book.track(record);
      lifecycle.fail(record, 'INSUFFICIENT_GPU', 'no GPUs');
    }
    lifecycle.trimFailed(endpoint.id);
    expect(book.ofEndpoint(endpoint.id).map((w) => w.id)).toEqual([recent.id]);
  });

  it('takes a placed worker through pulling to starting, then running once its probe passes', async () => {
    const ctx = setUp();
    const { timers, probes, logged } = ctx;
    const { record, started } = await startPulling(ctx);
    for (let i = 0; i < 40 && record.state !== 'running'; i++) await timers.advanceSettling(5);
    await started;
    expect(record.state).toBe('running');
    expect(record.startedAt).not.toBeNull();
    expect(probes()).toBeGreaterThan(0);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('does not move a worker drained while its create was under way back to pulling or starting', async () => {
    const held = new Promise<void>(() => {});
    const ctx = setUp(() => held);
    const { timers, lifecycle, probes, logged } = ctx;
    const { record, started } = await startPulling(ctx);

    lifecycle.drainAndRemove(record, 'scaled down');
    for (let i = 0; i < 40; i++) await timers.advanceSettling(5);
    await started;

    expect(record.state).toBe('draining');
    expect(record.message).toBe('scaled down');
    expect(probes()).toBe(0);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });
});
