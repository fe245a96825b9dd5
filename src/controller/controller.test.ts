import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deleteEndpoint, sampleEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers, settle } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { SpecPatch } from '../domain/spec-patch.js';
import { simulatedInventory } from '../gpu/inventory.js';
import { FakeRuntime } from '../runtime/fake/fake-runtime.js';
import type { Store } from '../store/store.js';
import { Controller, type ControllerOptions } from './controller.js';
import { answered } from './health/probe-result.js';
import { ControllerMetrics } from './metrics.js';
import { RoutingTable } from './routing-table.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };
const [sqlite] = storeTargets();

describe('Controller over the fake runtime', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let runtime: FakeRuntime;
  let healthy: (port: number) => boolean;
  let routes: RoutingTable;
  /** Every timer of the controller (loop, passes, probes) and of the fake runtime: time passes only by hand. */
  let timers: ManualTimers;
  const controllers: Controller[] = [];

  const controller = (options: Partial<ControllerOptions> = {}) => {
    const c = new Controller({
      store,
      runtime,
      gpus: simulatedInventory([{ productId: 'h100-80g', count: 2, cudaVersion: '12.4' }]),
      probe: async (address) => answered(healthy(address.port) ? 200 : 503),
      logger: silent,
      clock: () => timers.now,
      timers,
      routes,
      storagePaths: new Map(),
      revealCredentials: async () => undefined,
      intervalMs: 20,
      // An endpoint's changes are reconciled on the next turn, as flush() runs it (the default waits 20 ms).
      coalesceMs: 0,
      startingProbeIntervalMs: 5,
      backoff: { baseMs: 10, capMs: 50, crashLoopAfter: 3 },
      ...options,
    });
    controllers.push(c);
    return c;
  };

  const create = async (patch: SpecPatch = {}): Promise<Endpoint> => {
    const endpoint = sampleEndpoint({
      patch: { workers: { minWorkers: 1, maxWorkers: 3, gpusPerWorker: 1 }, ...patch },
    });
    await store.endpoints.create(endpoint, [], {
      at: 0,
      ownerId: endpoint.ownerId,
      actor: 't',
      action: 'c',
      targetId: endpoint.id,
    });
    return endpoint;
  };
  const state = async (endpoint: Endpoint) =>
    (await store.endpoints.get(endpoint.ownerId, endpoint.id))?.status;
  const workers = (endpoint: Endpoint) => store.workers.listByEndpoint(endpoint.id);
  /** Runs whatever is due now: timers, and the passes they start, until nothing is left to run at this time. */
  const flush = async () => {
    for (let round = 0; round < 100; round++) {
      await timers.advanceSettling(0);
      const passes = controllers.map((c) => c.passes.settled());
      await Promise.all(passes);
      await settle();
      if (timers.due() === 0 && controllers.every((c) => c.passes.idle)) return;
    }
  };
  /** Lets simulated time pass in 5 ms steps until `check` holds (5 s of it at most; no real time passes). */
  const eventually = async (check: () => Promise<void> | void) => {
    for (let waited = 0; ; waited += 5) {
      await flush();
      try {
        await check();
        return;
      } catch (error) {
        if (waited >= 5_000) throw error;
      }
      await timers.advanceSettling(5);
    }
  };

  beforeEach(async () => {
    if (!sqlite) throw new Error('no sqlite target');
    ({ store, dispose } = await sqlite.open());
    timers = new ManualTimers(1_000_000);
    runtime = new FakeRuntime({ clock: () => timers.now, timers });
    healthy = () => true;
    routes = new RoutingTable();
  });
  afterEach(async () => {
    for (const c of controllers.splice(0)) await c.stop();
    await runtime.close();
    await dispose();
  });

  it('a worker that dies leaves routing before its container is removed', async () => {
    const endpoint = await create();
    const c = controller();
    let routable: string[] = [];
    routes.onChange(() => {
      routable = routes.routableWorkers(endpoint.id).map((w) => w.id);
    });
    const routableAtRemoval: string[][] = [];
    const remove = runtime.remove.bind(runtime);
    runtime.remove = (workerId: string) => {
      routableAtRemoval.push(routable.filter((id) => id === workerId));
      return remove(workerId);
    };
    c.start();
    await eventually(() => expect(routable).toHaveLength(1));
    const [dying] = routable;
    runtime.exit(dying ?? '', 1);
    await eventually(() => expect(routableAtRemoval).toHaveLength(1));
    // The gateway (an onChange listener) must stop sending requests to it before the container is stopped.
    expect(routableAtRemoval).toEqual([[]]);
  });

  it('keeps minNum workers running and healthy, and reports serving', async () => {
    const endpoint = await create({ workers: { minWorkers: 2, maxWorkers: 3, gpusPerWorker: 1 } });
    controller().start();
    await eventually(async () => {
      const list = await workers(endpoint);
      expect(list.map((w) => [w.status.state, w.healthy])).toEqual([
        ['running', true],
        ['running', true],
      ]);
      expect(new Set(list.flatMap((w) => w.gpuUuids)).size).toBe(2);
      expect((await state(endpoint))?.state).toBe('serving');
    });
    expect(runtime.counters.creates).toBe(2);
  });

  it('replaces a worker that exits', async () => {
    const endpoint = await create();
    controller().start();
    await eventually(async () => expect((await workers(endpoint))[0]?.status.state).toBe('running'));
    const [first] = await workers(endpoint);
    runtime.exit(first?.id ?? '', 1);
    await eventually(async () => {
      const running = (await workers(endpoint)).filter((w) => w.status.state === 'running');
      expect(running).toHaveLength(1);
      expect(running[0]?.id).not.toBe(first?.id);
    });
    const failed = (await workers(endpoint)).find((w) => w.id === first?.id);
    expect(failed?.status).toMatchObject({
      state: 'failed',
      error: 'RUNTIME_ERROR',
      message: 'worker exited with code 1',
    });
  });

  it('fails with IMAGE_PULL_FAILED when the image cannot be had', async () => {
    runtime.failPull('ghcr.io/nobody/nothing:1');
    const endpoint = await create({ image: { ref: 'ghcr.io/nobody/nothing:1' } });
    controller().start();
    await eventually(async () => {
      expect(await state(endpoint)).toMatchObject({ state: 'failed', error: 'IMAGE_PULL_FAILED' });
      expect((await workers(endpoint))[0]?.status).toMatchObject({
        state: 'failed',
        error: 'IMAGE_PULL_FAILED',
      });
    });
  });

  it('asks before each start whether the owner may run the image, and a refusal fails the worker with its reason', async () => {
    const asked: { ownerId: string; authId: string; image: string }[] = [];
    const message = "registry refused owner's credentials for image 127.0.0.1:5000/a/model:1 (HTTP 401)";
    const endpoint = await create({ image: { ref: '127.0.0.1:5000/a/model:1', authId: 'auth-b' } });
    controller({
      imageAccess: async (request) => {
        asked.push(request);
        return { allowed: false, message };
      },
    }).start();
    await eventually(async () => {
      expect((await workers(endpoint))[0]?.status).toEqual({
        state: 'failed',
        error: 'IMAGE_PULL_FAILED',
        message,
      });
    });
    expect(asked[0]).toEqual({
      ownerId: endpoint.ownerId,
      authId: 'auth-b',
      image: '127.0.0.1:5000/a/model:1',
    });
    expect(runtime.counters.creates).toBe(0);
  });

  it('a granted image starts as before', async () => {
    const endpoint = await create();
    controller({ imageAccess: async () => ({ allowed: true }) }).start();
    await eventually(async () => expect((await state(endpoint))?.state).toBe('serving'));
  });

  it('fails a worker whose health never passes with HEALTH_TIMEOUT, and the endpoint at the second in a row', async () => {
    healthy = () => false;
    const endpoint = await create();
    controller({ startupTimeoutMs: 50 }).start();
    await eventually(async () => {
      const failed = (await workers(endpoint)).filter((w) => w.status.error === 'HEALTH_TIMEOUT');
      expect(failed.length).toBeGreaterThan(0);
    });
    await eventually(async () => expect((await state(endpoint))?.error).toBe('HEALTH_TIMEOUT'));
  });

  it('a worker that needs a GPU waits pending, saying so, and starts when one frees up', async () => {
    const big = await create({ workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 } });
    controller().start();
    await eventually(async () =>
      expect((await workers(big)).filter((w) => w.status.state === 'running')).toHaveLength(2),
    );
    const waiting = await create();
    await eventually(async () => {
      const [pending] = await workers(waiting);
      expect(pending?.status.state).toBe('pending');
      expect(pending?.status.message).toMatch(/needs 1 GPU/);
    });
    await store.endpoints.mutate(
      big.ownerId,
      big.id,
      (e) => ({ next: { ...e, desired: 'stopped' }, events: [] }),
      () => ({
        at: 0,
        ownerId: big.ownerId,
        actor: 't',
        action: 'stop',
        targetId: big.id,
      }),
    );
    await eventually(async () => {
      expect((await workers(waiting))[0]?.status.state).toBe('running');
      expect(await workers(big)).toEqual([]);
      expect((await state(big))?.state).toBe('stopped');
    });
  });

  it("keeps a failed worker's GPU held until its container is removed, then places the waiting worker on it", async () => {
    healthy = () => false;
    const oneGpu = simulatedInventory([{ productId: 'h100-80g', count: 1, cudaVersion: '12.4' }]);
    const gpu = oneGpu[0]?.uuid ?? '';
    const first = await create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } });
    const c = controller({ gpus: oneGpu, startupTimeoutMs: 1_000 });
    c.start();
    await eventually(async () => expect((await workers(first))[0]?.status.state).toBe('starting'));
    const waiting = await create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } });
    await eventually(async () => expect((await workers(waiting))[0]?.status.state).toBe('pending'));

    // The health deadline passes; the failed worker's container takes its grace period to go.
    const release = runtime.holdRemovals();
    await timers.advanceSettling(5_000);
    await eventually(async () =>
      expect((await workers(first))[0]?.status).toMatchObject({ state: 'failed', error: 'HEALTH_TIMEOUT' }),
    );
    const passes = vi.spyOn(runtime, 'list');
    await eventually(() => expect(passes.mock.calls.length).toBeGreaterThan(2));
    expect((await workers(waiting))[0]?.status.state).toBe('pending');
    expect(runtime.size).toBe(1);
    expect([...c.heldGpus().keys()]).toEqual([gpu]);
    expect((await workers(first))[0]?.gpuUuids).toEqual([gpu]);

    release();
    await eventually(async () => {
      const [started] = await workers(waiting);
      expect(started?.status.state).toBe('starting');
      expect(started?.gpuUuids).toEqual([gpu]);
      expect((await workers(first))[0]?.gpuUuids).toEqual([]);
    });
  });

  it('a create that completes while a pass waits for the store is not taken for a vanished container', async () => {
    await create();
    const c = controller();
    let finishCreate = () => {};
    const createGate = new Promise<void>((resolve) => {
      finishCreate = resolve;
    });
    const realCreate = runtime.create.bind(runtime);
    vi.spyOn(runtime, 'create').mockImplementation(async (spec, onProgress) => {
      await createGate;
      return realCreate(spec, onProgress);
    });
    await c.reconcile(); // places the worker; its create waits
    expect(c.workers().map((w) => w.state)).toEqual(['pulling']);

    // The next pass lists the runtime (the worker is not there yet), then waits for the store...
    let resumeStore = () => {};
    const storeGate = new Promise<void>((resolve) => {
      resumeStore = resolve;
    });
    const realVersions = store.endpoints.liveVersions.bind(store.endpoints);
    const liveVersions = vi.spyOn(store.endpoints, 'liveVersions').mockImplementationOnce(async () => {
      await storeGate;
      return realVersions();
    });
    const pass = c.reconcile();
    await eventually(() => expect(liveVersions).toHaveBeenCalled());
    // ...while the create completes.
    finishCreate();
    await eventually(() => expect(c.workers()[0]?.startedAt).not.toBeNull());
    resumeStore();
    await pass;

    expect(c.workers()[0]?.state).toMatch(/^(starting|running)$/);
    expect(runtime.counters.removes).toBe(0);
    expect(runtime.size).toBe(1);
  });

  it('a worker of a stopped endpoint is stopped once drained, until its container is removed', async () => {
    const endpoint = await create();
    const c = controller();
    c.start();
    await eventually(async () => expect((await workers(endpoint))[0]?.status.state).toBe('running'));
    const release = runtime.holdRemovals();
    await store.endpoints.mutate(
      endpoint.ownerId,
      endpoint.id,
      (e) => ({ next: { ...e, desired: 'stopped' }, events: [] }),
      () => ({ at: 0, ownerId: endpoint.ownerId, actor: 't', action: 'stop', targetId: endpoint.id }),
    );
    await eventually(async () =>
      expect((await workers(endpoint))[0]?.status).toMatchObject({
        state: 'stopped',
        error: '',
        message: 'drained (endpoint stopped); removing its container',
      }),
    );
    const [stopped] = await workers(endpoint);
    expect(stopped?.healthy).toBe(false);
    expect(routes.routableWorkers(endpoint.id)).toEqual([]);
    // Still on its GPU until the container is gone.
    expect(c.heldGpus().size).toBe(1);
    release();
    await eventually(async () => {
      expect(await workers(endpoint)).toEqual([]);
      expect(runtime.size).toBe(0);
      expect(c.heldGpus().size).toBe(0);
    });
  });

  it.each([
    { name: 'an image present locally never asks', present: true, asked: 0 },
    { name: 'an image to pull asks once, for the pull', present: false, asked: 1 },
  ])('registry credentials are decrypted only for a pull: $name', async ({ present, asked }) => {
    runtime.pullDelayMs = 1;
    if (present) runtime.presentImages.add('registry.example.com/team/app:1');
    const reveal = vi.fn(async () => ({ username: 'bob', password: 's3cret' }));
    const endpoint = await create({ image: { ref: 'registry.example.com/team/app:1', authId: 'cred-1' } });
    controller({ revealCredentials: reveal }).start();
    await eventually(async () => expect((await workers(endpoint))[0]?.status.state).toBe('running'));
    expect(reveal).toHaveBeenCalledTimes(asked);
    if (asked > 0) expect(reveal).toHaveBeenCalledWith(endpoint.ownerId, 'cred-1');
  });

  it('gives each worker its memory limit: memoryGBPerGpu per GPU', async () => {
    const created = vi.spyOn(runtime, 'create');
    const endpoint = await create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 2 } });
    controller({ memoryGBPerGpu: 8 }).start();
    await eventually(async () => expect((await workers(endpoint))[0]?.status.state).toBe('running'));
    expect(created.mock.calls[0]?.[0].memoryBytes).toBe(16 * 1024 ** 3);
  });

  it("a pulling worker's message is the runtime's one line of progress", async () => {
    runtime = new FakeRuntime({ clock: () => timers.now, timers, pullDelayMs: 60_000 });
    const endpoint = await create({ image: { ref: 'nginx:latest' } });
    controller().start();
    await eventually(async () =>
      expect((await workers(endpoint))[0]?.status).toMatchObject({
        state: 'pulling',
        message: 'pulling nginx:latest: 0%',
      }),
    );
  });

  it('a drain that fails does not keep the worker: it is removed all the same', async () => {
    const endpoint = await create();
    controller({ awaitDrained: () => Promise.reject(new Error('gateway gone')) }).start();
    await eventually(async () => expect((await workers(endpoint))[0]?.status.state).toBe('running'));
    await deleteEndpoint(store, endpoint);
    await eventually(async () => {
      expect(runtime.size).toBe(0);
      expect(await workers(endpoint)).toEqual([]);
    });
  });

  it('reports INSUFFICIENT_GPU when no placement can ever fit', async () => {
    const endpoint = await create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 4 } });
    controller().start();
    await eventually(async () =>
      expect(await state(endpoint)).toMatchObject({ state: 'failed', error: 'INSUFFICIENT_GPU' }),
    );
  });

  it('removes the workers of a deleted endpoint', async () => {
    const endpoint = await create();
    controller().start();
    await eventually(async () => expect((await workers(endpoint))[0]?.status.state).toBe('running'));
    await deleteEndpoint(store, endpoint);
    await eventually(async () => {
      expect(runtime.size).toBe(0);
      expect(await workers(endpoint)).toEqual([]);
    });
  });

  it('after a restart adopts the running workers: no duplicate, no removal, the same GPUs held', async () => {
    const endpoint = await create({ workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 } });
    const first = controller();
    first.start();
    await eventually(async () => expect((await workers(endpoint)).filter((w) => w.healthy)).toHaveLength(2));
    const gpusOf = (list: { id: string; gpuUuids: string[] }[]) =>
      Object.fromEntries(list.map((w) => [w.id, w.gpuUuids]));
    const before = gpusOf(await workers(endpoint));
    expect(new Set(Object.values(before).flat()).size).toBe(2);
    await first.stop();
    const restarted = controller();
    restarted.start();
    await eventually(async () => {
      const after = await workers(endpoint);
      expect(gpusOf(after)).toEqual(before);
      expect(after.every((w) => w.status.state === 'running' && w.healthy)).toBe(true);
    });
    // Both GPUs are held by adopted workers: a newcomer waits instead of getting one of them.
    const newcomer = await create();
    await eventually(async () => {
      const [pending] = await workers(newcomer);
      expect(pending?.status.state).toBe('pending');
      expect(pending?.status.message).toMatch(/^needs 1 GPU .*h100-80g 0$/);
    });
    expect(restarted.workers().flatMap((w) => w.gpuUuids)).toHaveLength(2);
    expect(runtime.counters.creates).toBe(2);
    expect(runtime.counters.removes).toBe(0);
  });

  it('observes create-to-running only for workers it created, not for those adopted after a restart', async () => {
    const endpoint = await create({ workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 } });
    const measured = async (registry: Registry) =>
      Number(
        /^corral_worker_time_to_running_seconds_count (\d+)$/m.exec(await registry.metrics())?.[1] ?? 'NaN',
      );
    const withMetrics = () => {
      const registry = new Registry();
      const c: Controller = controller({
        metrics: new ControllerMetrics({
          registry,
          runtime: 'fake',
          workerStates: () => c.workers().map((w) => w.state),
        }),
      });
      return { c, registry };
    };
    const first = withMetrics();
    first.c.start();
    await eventually(async () => expect((await workers(endpoint)).filter((w) => w.healthy)).toHaveLength(2));
    expect(await measured(first.registry)).toBe(2);
    await first.c.stop();

    const restarted = withMetrics();
    restarted.c.start();
    await eventually(() => expect(restarted.c.workers().filter((w) => w.healthy)).toHaveLength(2));
    expect(await measured(restarted.registry)).toBe(0);
    // A worker it starts itself is measured again.
    runtime.exit(restarted.c.workers()[0]?.id ?? '', 1);
    await eventually(async () => expect(await measured(restarted.registry)).toBe(1));
  });

  it('removes nothing while the runtime cannot be listed', async () => {
    const endpoint = await create();
    controller().start();
    await eventually(async () => expect((await workers(endpoint))[0]?.status.state).toBe('running'));
    await controllers[0]?.stop();
    await deleteEndpoint(store, endpoint);
    const list = vi.spyOn(runtime, 'list').mockRejectedValue(new Error('engine down'));
    const restarted = controller();
    await restarted.reconcile();
    expect(runtime.size).toBe(1);
    list.mockRestore();
    await restarted.reconcile();
    await eventually(() => expect(runtime.size).toBe(0));
  });

  describe("an owner's drain", () => {
    const audit = { at: 0, ownerId: '', actor: 't', action: 'worker.drain', targetId: '' };
    const drain = (endpoint: Endpoint, workerId: string, on = true) =>
      store.workers.requestDrain(endpoint.ownerId, workerId, on, { ...audit, ownerId: endpoint.ownerId });
    /** awaitDrained as the gateway answers it: held while the test says the worker has requests in flight. */
    const inFlight = new Map<string, () => void>();
    const awaitDrained = (_endpointId: string, workerId: string) =>
      new Promise<void>((resolve) => {
        if (!held.has(workerId)) resolve();
        else inFlight.set(workerId, resolve);
      });
    const held = new Set<string>();
    const finish = (workerId: string) => {
      held.delete(workerId);
      inFlight.get(workerId)?.();
    };
    const routable = (endpoint: Endpoint) =>
      routes
        .routableWorkers(endpoint.id)
        .map((w) => w.id)
        .sort();
    const present = async (workerId: string) => (await runtime.list({})).some((w) => w.workerId === workerId);

    const twoServing = async () => {
      const endpoint = await create({ workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 0 } });
      const c = controller({ awaitDrained });
      c.start();
      await eventually(() => expect(routable(endpoint)).toHaveLength(2));
      const [first, second] = routable(endpoint) as [string, string];
      return { endpoint, c, first, second };
    };

    it('leaves routing at once, finishes its requests, is removed, and is replaced', async () => {
      const { endpoint, first, second } = await twoServing();
      held.add(first);
      await drain(endpoint, first);
      await eventually(() => expect(routable(endpoint)).not.toContain(first));
      expect(routable(endpoint)).toContain(second);
      expect(await present(first)).toBe(true);
      // Counted out while it drains: a replacement starts beside it, so two workers keep serving.
      await eventually(() => expect(routable(endpoint)).toHaveLength(2));
      expect(routable(endpoint)).not.toContain(first);
      expect((await store.workers.get(first))?.status.state).toBe('draining');
      finish(first);
      await eventually(async () => {
        expect(await present(first)).toBe(false);
        expect(await store.workers.get(first)).toBeUndefined();
      });
      expect(runtime.size).toBe(2);
    });

    it('an undrain before its removal puts it back into routing, and the surplus replacement goes', async () => {
      const { endpoint, first, second } = await twoServing();
      held.add(first);
      await drain(endpoint, first);
      await eventually(() => {
        expect(routable(endpoint)).not.toContain(first);
        expect(routable(endpoint)).toHaveLength(2);
      });
      await drain(endpoint, first, false);
      await eventually(async () => {
        expect(routable(endpoint)).toEqual([first, second].sort());
        expect(await workers(endpoint)).toHaveLength(2);
      });
      // Its earlier drain finishing later removes nothing.
      finish(first);
      await flush();
      expect(await present(first)).toBe(true);
      expect(routable(endpoint)).toEqual([first, second].sort());
    });

    it('survives a restart: a worker still draining when Corral restarted is adopted, never routed, and removed', async () => {
      const { endpoint, c, first, second } = await twoServing();
      held.add(first);
      await drain(endpoint, first);
      await eventually(async () => expect((await store.workers.get(first))?.status.state).toBe('draining'));
      await c.stop();
      // A new process: a new routing table, nothing in flight through its gateway.
      routes = new RoutingTable();
      held.clear();
      const seen = new Set<string>();
      routes.onChange(() => {
        for (const id of routable(endpoint)) seen.add(id);
      });
      controller({ awaitDrained }).start();
      await eventually(async () => {
        expect(await present(first)).toBe(false);
        expect(routable(endpoint)).toHaveLength(2);
      });
      expect(seen.has(first)).toBe(false);
      expect(seen.has(second)).toBe(true);
    });
  });
});
