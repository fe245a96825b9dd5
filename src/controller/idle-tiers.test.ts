import { afterEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { MemoryCheckpointer } from '../../test/support/memory-checkpointer.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { SpecPatch } from '../domain/spec-patch.js';
import type { ScalingAdvisor } from './controller-options.js';

const GPU0 = 'GPU-simulated-h100-80g-0';
const GPU1 = 'GPU-simulated-h100-80g-1';
const GB = 1e9;

/** The scaler's answer, set by hand: how many workers each endpoint wants now (else its minNum). */
function handScaling(): ScalingAdvisor & { want: Map<string, number> } {
  const want = new Map<string, number>();
  return {
    want,
    advise: (endpoint) => ({
      desired: want.get(endpoint.id) ?? endpoint.spec.workers.minWorkers,
      victims: [],
    }),
    retain: () => {},
    onRescale: () => () => {},
  };
}

const tiered = (keepFrozenSeconds: number, keepSuspendedSeconds = 0, gpusPerWorker = 1): SpecPatch => ({
  workers: { minWorkers: 0, maxWorkers: 1, gpusPerWorker, keepFrozenSeconds, keepSuspendedSeconds },
});

describe('idle tiers in the controller (fake runtime, manual timers)', () => {
  let h: ControllerHarness;
  const scaling = handScaling();
  let checkpointer: MemoryCheckpointer | undefined;

  const start = async (withCheckpointer: boolean, suspendBudgetBytes = 1000 * GB) => {
    scaling.want.clear();
    checkpointer = withCheckpointer
      ? new MemoryCheckpointer({
          gpus: { [GPU0]: 80 * GB, [GPU1]: 80 * GB },
          // A frozen fake worker's process is stopped: the driver cannot checkpoint it.
          stopped: (pid) => [...h.controller.workers()].some((w) => tierPid(w.id) === pid && tierOf(w.id)),
        })
      : undefined;
    h = await controllerHarness({ scaling, suspendBudgetBytes }, checkpointer ? { checkpointer } : {});
    h.controller.start();
  };
  const tierPid = (workerId: string) => h.runtime.idleTiers.pidOf(workerId);
  const tierOf = (workerId: string) => h.runtime.idleTiers.tierOf(workerId);
  const only = (endpoint: Endpoint) => {
    const workers = h.controller.workersOf(endpoint.id).filter((w) => w.state !== 'failed');
    expect(workers).toHaveLength(1);
    return workers[0] as NonNullable<(typeof workers)[0]>;
  };
  const serving = async (endpoint: Endpoint) => {
    scaling.want.set(endpoint.id, 1);
    h.controller.poke();
    await h.eventually(() => expect(h.routes.routableWorkers(endpoint.id)).toHaveLength(1));
    return only(endpoint);
  };
  const idle = async (endpoint: Endpoint) => {
    scaling.want.set(endpoint.id, 0);
    h.controller.poke();
  };

  /** A worker of `e` (keepFrozen 1) that served, holds 40 GB of GPU0, and is suspended after its second frozen. */
  const suspendedAfterOneSecond = async (e: Endpoint) => {
    const worker = await serving(e);
    checkpointer?.addProcess({ pid: tierPid(worker.id), gpuUuid: GPU0, usedBytes: 40 * GB });
    await idle(e);
    await h.timers.advanceSettling(2_000);
    await h.eventually(() => expect(only(e).state).toBe('suspended'));
    return worker;
  };

  /**
   * Endpoint r's worker runs on one GPU; a's (keepFrozen 1, keepSuspended 600) serves on the other, holds 40 GB of
   * it and is suspended; then a worker of endpoint `other` (keepFrozen as given) serves on a's GPU.
   */
  const suspendedThenTaken = async (otherKeepFrozen: number) => {
    await start(true);
    const r = await h.create({ ...tiered(0), name: 'r' });
    const a = await h.create({ ...tiered(1, 600), name: 'a' });
    const other = await h.create({ ...tiered(otherKeepFrozen), name: 'o' });
    await serving(r);
    const wa = await serving(a);
    const own = wa.gpuUuids[0] ?? '';
    checkpointer?.addProcess({ pid: tierPid(wa.id), gpuUuid: own, usedBytes: 40 * GB });
    await idle(a);
    await h.timers.advanceSettling(2_000);
    await h.eventually(() => expect(only(a).state).toBe('suspended'));
    expect((await serving(other)).gpuUuids).toEqual([own]);
    return { r, a, wa, other, own };
  };

  /** The messages of the endpoint's `eviction` events, oldest first. */
  const evictions = async (endpoint: Endpoint) =>
    (await h.store.events.list(endpoint.id, { afterId: 0, limit: 100 }))
      .filter((e) => e.type === 'eviction')
      .map((e) => e.message);

  /** corral serve restarted: a new controller over the same store and runtime (what a new leader is too). */
  const restarted = async (suspendBudgetBytes = 1000 * GB) => {
    await h.controller.stop();
    const { Controller } = await import('./controller.js');
    const { RoutingTable } = await import('./routing-table.js');
    const { simulatedInventory } = await import('../gpu/inventory.js');
    return new Controller({
      store: h.store,
      runtime: h.runtime,
      gpus: simulatedInventory([{ productId: 'h100-80g', count: 2, cudaVersion: '12.4' }]),
      probe: async () => ({ healthy: false, cause: 'probed while frozen' }) as never,
      logger: { info: () => {}, warn: () => {}, error: () => {} },
      clock: () => h.timers.now,
      timers: h.timers,
      routes: new RoutingTable(),
      storagePaths: new Map(),
      revealCredentials: async () => undefined,
      intervalMs: 20,
      scaling,
      suspendBudgetBytes,
    });
  };

  afterEach(async () => {
    await h.close();
  });

  it('keepFrozen 0 stops an idle worker as before', async () => {
    await start(false);
    const e = await h.create(tiered(0));
    await serving(e);
    await idle(e);
    await h.eventually(() => expect(h.controller.workersOf(e.id)).toHaveLength(0));
    expect(h.runtime.idleTiers.calls).toEqual([]);
  });

  it('freezes an idle worker (GPUs kept, not routed, not probed), thaws it for the next request, stops it after keepFrozen', async () => {
    await start(false);
    const e = await h.create(tiered(60));
    const worker = await serving(e);
    // Its start was a cold one: its phases are published for the gateway's Server-Timing.
    const cold = h.routes.routableWorkers(e.id)[0]?.wake;
    expect(cold?.tier).toBe('cold');
    expect(cold?.phases.map((p) => p.name)).toEqual(['placement', 'pull', 'create', 'ready']);
    await idle(e);
    await h.eventually(() => expect(tierOf(worker.id)).toBe('frozen'));
    expect(only(e)).toMatchObject({ id: worker.id, state: 'frozen', gpuUuids: [GPU0] });
    expect(only(e).message).toMatch(
      /^frozen since \S+Z \(idle\); stopped at \S+Z unless a request wakes it$/,
    );
    expect(h.routes.routableWorkers(e.id)).toEqual([]);
    expect(h.controller.heldGpus().get(GPU0)).toBe(worker.id);
    // Frozen, its failing probes are never asked: it stays frozen and is not counted unhealthy.
    h.unhealthyPorts.add(worker.address?.port ?? 0);
    await h.timers.advanceSettling(30_000);
    await h.flush();
    expect(only(e).state).toBe('frozen');
    h.unhealthyPorts.clear();

    const woken = await serving(e);
    expect(woken.id).toBe(worker.id);
    expect(h.runtime.counters.creates).toBe(1);
    expect(h.routes.routableWorkers(e.id)[0]?.wake).toMatchObject({
      tier: 'thaw',
      phases: [{ name: 'thaw' }],
    });
    expect(h.runtime.idleTiers.calls).toEqual([`freeze ${worker.id}`, `thaw ${worker.id}`]);

    await idle(e);
    await h.eventually(() => expect(only(e).state).toBe('frozen'));
    await h.timers.advanceSettling(61_000);
    await h.eventually(() => expect(h.controller.workersOf(e.id)).toHaveLength(0));
    expect(h.runtime.size).toBe(0);
    expect(h.controller.heldGpus().size).toBe(0);
    expect(h.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('removes a frozen worker its owner drains, which the drain left frozen before', async () => {
    await start(false);
    const e = await h.create(tiered(600));
    const worker = await serving(e);
    await idle(e);
    await h.eventually(() => expect(only(e).state).toBe('frozen'));
    const audit = { at: 0, ownerId: e.ownerId, actor: 't', action: 'worker.drain', targetId: worker.id };
    await h.store.workers.requestDrain(e.ownerId, worker.id, true, audit);
    h.controller.poke();
    await h.eventually(() => expect(h.controller.workersOf(e.id)).toHaveLength(0));
    expect(h.runtime.size).toBe(0);
    expect(h.controller.heldGpus().size).toBe(0);
  });

  it('suspends after keepFrozen where GPU state can be checkpointed: its GPU is free, a restore wakes it, then it is stopped after keepSuspended', async () => {
    await start(true);
    const e = await h.create(tiered(60, 600));
    const worker = await serving(e);
    checkpointer?.addProcess({ pid: tierPid(worker.id), gpuUuid: GPU0, usedBytes: 40 * GB });
    await idle(e);
    await h.eventually(() => expect(only(e).state).toBe('frozen'));
    expect(only(e).message).toContain('; suspended at ');
    await h.timers.advanceSettling(60_000);
    await h.eventually(() => expect(only(e).state).toBe('suspended'));
    expect(only(e).message).toMatch(/^suspended since \S+Z \(GPU state in host memory\); stopped at \S+Z/);
    expect(checkpointer?.usedBytes(GPU0)).toBe(0);
    expect(h.controller.heldGpus().has(GPU0)).toBe(false);
    // Thawed before the checkpoint, frozen again after it (a stopped process cannot be checkpointed).
    expect(h.runtime.idleTiers.calls).toEqual([`freeze ${worker.id}`, `suspend ${worker.id}`]);
    expect(tierOf(worker.id)).toBe('suspended');

    const woken = await serving(e);
    expect(woken.id).toBe(worker.id);
    expect(checkpointer?.usedBytes(GPU0)).toBe(40 * GB);
    expect(h.routes.routableWorkers(e.id)[0]?.wake).toMatchObject({ tier: 'restore' });
    expect(h.runtime.counters.creates).toBe(1);

    await idle(e);
    await h.eventually(() => expect(only(e).state).toBe('frozen'));
    await h.timers.advanceSettling(60_000);
    await h.eventually(() => expect(only(e).state).toBe('suspended'));
    await h.timers.advanceSettling(601_000);
    await h.eventually(() => expect(h.controller.workersOf(e.id)).toHaveLength(0));
  });

  it('a failed restore is a dead worker, replaced, with the reason', async () => {
    await start(true);
    const e = await h.create(tiered(1, 600));
    const worker = await suspendedAfterOneSecond(e);
    // Something outside Corral took the GPU's memory meanwhile: the driver's restore fails, and that is final.
    checkpointer?.useOther(GPU0, 60 * GB);
    scaling.want.set(e.id, 1);
    h.controller.poke();
    await h.eventually(() =>
      expect(h.controller.workersOf(e.id).find((w) => w.id === worker.id)).toMatchObject({
        state: 'failed',
        message: expect.stringContaining('could not be restored: restore of pid'),
      }),
    );
    await h.eventually(() => expect(h.routes.routableWorkers(e.id)).toHaveLength(1));
    expect(h.routes.routableWorkers(e.id)[0]?.id).not.toBe(worker.id);
    expect(h.runtime.counters.creates).toBe(2);
  });

  it('GPU pressure: a frozen worker of another endpoint is stopped for a waiting worker, oldest idle first, and says for whom', async () => {
    await start(false);
    const a = await h.create({ ...tiered(600), name: 'a' });
    const b = await h.create({ ...tiered(600), name: 'b' });
    const c = await h.create({ ...tiered(600), name: 'c' });
    const wa = await serving(a);
    await idle(a);
    await h.eventually(() => expect(only(a).state).toBe('frozen'));
    await h.timers.advanceSettling(1_000);
    const wb = await serving(b);
    await idle(b);
    await h.eventually(() => expect(only(b).state).toBe('frozen'));
    expect(h.controller.heldGpus().size).toBe(2);

    const stopped: string[] = [];
    const unwatch = h.runtime.watch((event) => {
      if (event.type === 'removed') stopped.push(event.workerId);
    });
    // Its removal held (a container's stop grace), its state says why and for whom.
    const release = h.runtime.holdRemovals();
    scaling.want.set(c.id, 1);
    h.controller.poke();
    await h.eventually(() => expect(only(a).state).toBe('stopped'));
    expect(only(a).message).toContain('stopped to free its GPUs for a worker of endpoint c');
    release();
    await h.eventually(() => expect(h.routes.routableWorkers(c.id)).toHaveLength(1));
    unwatch();
    expect(stopped).toEqual([wa.id]);
    expect(only(b)).toMatchObject({ id: wb.id, state: 'frozen' });
    // Each endpoint's events say it: a's names c, which needed the GPU; c's names a's worker.
    await h.eventually(async () => {
      expect(await evictions(a)).toEqual([
        `frozen worker ${wa.id} stopped to free its GPUs for a worker of endpoint c`,
      ]);
      expect(await evictions(c)).toEqual([
        `frozen worker ${wa.id} of endpoint a stopped to free its GPUs for this endpoint's waiting worker`,
      ]);
    });
    expect(await evictions(b)).toEqual([]);
  });

  it('suspends rather than stops under GPU pressure where it can', async () => {
    await start(true);
    const a = await h.create({ ...tiered(600, 600, 2), name: 'a' });
    const b = await h.create({ ...tiered(600), name: 'b' });
    const wa = await serving(a);
    checkpointer?.addProcess({ pid: tierPid(wa.id), gpuUuid: GPU0, usedBytes: 10 * GB });
    await idle(a);
    await h.eventually(() => expect(only(a).state).toBe('frozen'));
    await serving(b);
    expect(only(a)).toMatchObject({ id: wa.id, state: 'suspended', gpuUuids: [] });
    expect(only(a).message).toContain('to free its GPUs for a worker of endpoint b');
    await h.eventually(async () =>
      expect(await evictions(a)).toEqual([
        `frozen worker ${wa.id} suspended to free its GPUs for a worker of endpoint b`,
      ]),
    );
    // Its GPUs are b's now: its restore waits as a pending worker does.
    scaling.want.set(a.id, 1);
    h.controller.poke();
    // The reason a pending worker of its endpoint shows (placement.ts), after what it is.
    await h.eventually(() =>
      expect(only(a).message).toMatch(
        /^suspended since .*; waiting: needs 2 GPUs of one product, free: h100-80g 1$/,
      ),
    );
    expect(only(a).state).toBe('suspended');
  });

  it('stops the oldest suspended worker once their host memory is over its budget', async () => {
    await start(true, 50 * GB);
    const a = await h.create({ ...tiered(1, 600), name: 'a' });
    const b = await h.create({ ...tiered(1, 600), name: 'b' });
    const wa = await serving(a);
    checkpointer?.addProcess({ pid: tierPid(wa.id), gpuUuid: GPU0, usedBytes: 30 * GB });
    await idle(a);
    await h.timers.advanceSettling(2_000);
    await h.eventually(() => expect(only(a).state).toBe('suspended'));
    const wb = await serving(b);
    checkpointer?.addProcess({ pid: tierPid(wb.id), gpuUuid: wb.gpuUuids[0] ?? '', usedBytes: 30 * GB });
    const release = h.runtime.holdRemovals();
    await idle(b);
    await h.timers.advanceSettling(2_000);
    await h.eventually(() => expect(only(a).state).toBe('stopped'));
    expect(only(a).message).toContain("suspended workers' host memory is over its budget of 50.0 GB");
    release();
    await h.eventually(() => expect(h.controller.workersOf(a.id)).toHaveLength(0));
    expect(only(b).state).toBe('suspended');
  });

  it('adopts a frozen worker after a restart: in its tier, not duplicated, not probed', async () => {
    await start(false);
    const e = await h.create(tiered(600));
    const worker = await serving(e);
    await idle(e);
    await h.eventually(() => expect(tierOf(worker.id)).toBe('frozen'));
    const again = await restarted();
    await again.reconcile();
    await h.flush();
    expect(again.workersOf(e.id)).toEqual([
      expect.objectContaining({ id: worker.id, state: 'frozen', gpuUuids: [GPU0] }),
    ]);
    expect(again.heldGpus().get(GPU0)).toBe(worker.id);
    await again.reconcile();
    expect(again.workersOf(e.id)).toHaveLength(1);
    expect(h.runtime.size).toBe(1);
    await again.stop();
  });

  it('adopts a suspended worker after a restart: suspended, holding no GPU, restored onto its own', async () => {
    await start(true);
    const e = await h.create(tiered(1, 600));
    const worker = await suspendedAfterOneSecond(e);
    const again = await restarted();
    await again.reconcile();
    await h.flush();
    expect(again.workersOf(e.id)).toEqual([
      expect.objectContaining({
        id: worker.id,
        state: 'suspended',
        gpuUuids: [],
        suspendedOn: { gpuUuids: [GPU0], gpuBytes: { [GPU0]: 40 * GB } },
        message: expect.stringMatching(
          /^suspended since \S+Z \(adopted after a restart; its GPU state 40\.00 GB\)$/,
        ),
      }),
    ]);
    expect(again.heldGpus().has(GPU0)).toBe(false);
    again.start();
    scaling.want.set(e.id, 1);
    again.poke();
    await h.eventually(() =>
      expect(again.workersOf(e.id)[0]).toMatchObject({ state: 'running', gpuUuids: [GPU0] }),
    );
    expect(checkpointer?.usedBytes(GPU0)).toBe(40 * GB);
    expect(h.runtime.counters.creates).toBe(1);
    await again.stop();
  });

  it('an adopted suspended worker knows the GPU memory recorded at its suspend: it counts against the host memory budget', async () => {
    await start(true);
    const e = await h.create(tiered(1, 600));
    await suspendedAfterOneSecond(e);
    const release = h.runtime.holdRemovals();
    const again = await restarted(30 * GB);
    again.start();
    await h.eventually(() => expect(again.workersOf(e.id)[0]?.state).toBe('stopped'));
    expect(again.workersOf(e.id)[0]?.message).toContain(
      "suspended workers' host memory is over its budget of 30.0 GB",
    );
    release();
    await h.eventually(() => expect(again.workersOf(e.id)).toHaveLength(0));
    await again.stop();
  });

  it('a suspended worker whose GPU a frozen worker of another endpoint holds has that one moved down for it, then restores onto its own', async () => {
    const { a, wa, other: f, own } = await suspendedThenTaken(600);
    await idle(f);
    await h.eventually(() => expect(only(f).state).toBe('frozen'));
    const release = h.runtime.holdRemovals();
    scaling.want.set(a.id, 1);
    h.controller.poke();
    await h.eventually(() => expect(only(f).state).toBe('stopped'));
    expect(only(f).message).toContain('stopped to free its GPUs for a suspended worker of endpoint a');
    release();
    await h.eventually(() => expect(only(a)).toMatchObject({ id: wa.id, state: 'running', gpuUuids: [own] }));
    expect(checkpointer?.usedBytes(own)).toBe(40 * GB);
  });

  it('a suspended worker whose own GPU a running worker holds waits for it, even with another GPU free, and says so', async () => {
    const { r, a, own } = await suspendedThenTaken(0);
    await idle(r);
    await h.eventually(() => expect(h.controller.workersOf(r.id)).toHaveLength(0));
    scaling.want.set(a.id, 1);
    h.controller.poke();
    await h.eventually(() =>
      expect(only(a).message).toMatch(
        new RegExp(
          `^suspended since \\S+Z \\(GPU state in host memory\\); stopped at \\S+Z unless a request wakes it; waiting for its GPU ${own} to be free \\(a suspended worker restores onto the GPUs it started on\\)$`,
        ),
      ),
    );
    expect(only(a).state).toBe('suspended');
  });
});
