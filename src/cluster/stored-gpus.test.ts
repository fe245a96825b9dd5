/**
 * `StoredGpus` on a real store (SQLite, and PostgreSQL where configured), on manual timers: the rows' holders read at
 * start, every interval and on demand, the last read kept while the database fails; and `replicaGpus`, which shows
 * the leader's controller view while this replica leads and the rows' otherwise.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { deleteEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { describeOnce, storeTargets } from '../../test/support/stores.js';
import type { Worker, WorkerState } from '../domain/worker.js';
import type { InventoryGpu, PlacedWorker } from '../service/gpu-report.js';
import type { Store } from '../store/store.js';
import { replicaGpus, StoredGpus } from './stored-gpus.js';

function row(id: string, state: WorkerState, gpuUuids: string[], createdAt: number): Worker {
  return {
    id,
    endpointId: 'ep-1',
    ownerId: 'owner-a',
    revision: 1,
    status: { state, error: '', message: state === 'pending' ? 'needs 1 GPU of h100-80g; none free' : '' },
    healthy: false,
    gpuUuids,
    address: null,
    createdAt,
    updatedAt: createdAt,
    readyAt: null,
  };
}

const GPUS: InventoryGpu[] = [0, 1].map((index) => ({
  index,
  uuid: `GPU-${index}`,
  productId: 'h100-80g',
  model: 'Simulated h100-80g',
  memoryGB: 80,
  simulated: true,
}));

const silent = { info: () => {}, warn: () => {} };

describe.each(storeTargets())('StoredGpus on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  const timers = new ManualTimers();
  const messages: string[] = [];
  const logger = {
    info: (_fields: object, message: string) => messages.push(message),
    warn: (_fields: object, message: string) => messages.push(message),
  };
  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    messages.length = 0;
  });
  afterEach(async () => {
    await dispose();
  });

  it('reads the rows that hold GPUs or wait for some at start, then every interval, not the others', async () => {
    await store.workers.upsert(row('w1', 'running', ['GPU-0'], 10));
    await store.workers.upsert(row('gone', 'failed', [], 5));
    const stored = new StoredGpus({ workers: store.workers, intervalMs: 1_000, timers, logger });
    expect(stored.holds().held.size).toBe(0);
    await stored.start();
    expect([...stored.holds().held]).toEqual([['GPU-0', 'w1']]);
    expect(stored.holds().workers.map((w) => w.id)).toEqual(['w1']);

    await store.workers.upsert(row('w2', 'starting', ['GPU-1'], 20));
    await store.workers.upsert(row('w3', 'pending', [], 30));
    await timers.advanceSettling(999);
    await stored.settled();
    expect(stored.holds().held.size).toBe(1);
    await timers.advanceSettling(1);
    await stored.settled();
    expect([...stored.holds().held]).toEqual([
      ['GPU-0', 'w1'],
      ['GPU-1', 'w2'],
    ]);
    expect(stored.holds().workers.map((w) => [w.id, w.state])).toEqual([
      ['w1', 'running'],
      ['w2', 'starting'],
      ['w3', 'pending'],
    ]);
    // Removed (its row deleted) or failed and released (its row names no GPU): free at the next read.
    await store.workers.delete('w1');
    await store.workers.upsert(row('w2', 'failed', [], 20));
    await timers.advanceSettling(1_000);
    await stored.settled();
    expect(stored.holds().held.size).toBe(0);
    await stored.stop();
    expect(timers.count).toBe(0);
    expect(messages).toEqual([]);
  });

  it('reads on demand and keeps that read; without an interval it sets no timer', async () => {
    const stored = new StoredGpus({ workers: store.workers, timers, logger });
    await stored.start();
    expect(timers.count).toBe(0);
    await store.workers.upsert(row('w1', 'running', ['GPU-0', 'GPU-1'], 10));
    const read = await stored.read();
    expect([...read.held.keys()]).toEqual(['GPU-0', 'GPU-1']);
    expect(stored.holds()).toBe(read);
    await stored.stop();
  });

  it('keeps the last read while the database fails, and says so once', async () => {
    await store.workers.upsert(row('w1', 'running', ['GPU-0'], 10));
    const stored = new StoredGpus({ workers: store.workers, intervalMs: 1_000, timers, logger });
    await stored.start();
    await store.close();
    for (let tick = 0; tick < 3; tick++) {
      await timers.advanceSettling(1_000);
      await stored.settled();
    }
    expect([...stored.holds().held]).toEqual([['GPU-0', 'w1']]);
    expect(messages).toEqual(['cannot read the GPU holders; the last read is shown']);
    await stored.stop();
  });
});

describeOnce('replicaGpus with a real controller (fake runtime, SQLite, manual timers)', () => {
  let h: ControllerHarness;
  afterEach(() => h.close());

  it("the leader's controller once it adopted the workers, the rows before and on a follower: the same holders", async () => {
    h = await controllerHarness();
    // A row its predecessor left: a just-elected leader shows it until its first pass (which clears it).
    await h.store.workers.upsert(row('w-old', 'running', ['GPU-0'], 1));
    const stored = new StoredGpus({ workers: h.store.workers, timers: h.timers, logger: silent });
    await stored.start();
    let leading = true;
    const both = replicaGpus({ gpus: GPUS, leading: () => leading, controller: () => h.controller, stored });
    expect(h.controller.adopted).toBe(false);
    expect([...both.busyGpus()]).toEqual(['GPU-0']);
    expect((await both.gpuInventory.snapshot()).workers.map((w) => w.id)).toEqual(['w-old']);

    const endpoint = await h.create({ workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 } });
    const waiting = await h.create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 2 } });
    h.controller.start();
    await h.flush();
    expect(h.controller.adopted).toBe(true);
    const own = h.controller.heldGpus();
    expect(own.size).toBe(2);
    expect([...both.busyGpus()].sort()).toEqual([...own.keys()].sort());
    const led = await both.gpuInventory.snapshot();
    expect(led.workers.map((w) => w.id).sort()).toEqual(
      h.controller
        .workers()
        .map((w) => w.id)
        .sort(),
    );

    // The follower reads what the controller wrote: the same holders, the same waiting worker.
    leading = false;
    const followed = await both.gpuInventory.snapshot();
    expect([...followed.held].sort()).toEqual([...own].sort());
    const view = (workers: readonly PlacedWorker[]) =>
      workers
        .map(({ id, endpointId, ownerId, state, message, gpuUuids, createdAt }) => ({
          id,
          endpointId,
          ownerId,
          state,
          message,
          gpuUuids,
          createdAt,
        }))
        .sort((a, b) => a.id.localeCompare(b.id));
    expect(view(followed.workers)).toEqual(view(h.controller.workers()));
    expect(followed.workers.filter((w) => w.state === 'pending').map((w) => w.endpointId)).toEqual([
      waiting.id,
    ]);

    // Deleted: the controller removes the containers and forgets the workers; the rows go with them.
    await deleteEndpoint(h.store, endpoint, h.timers.now);
    await deleteEndpoint(h.store, waiting, h.timers.now);
    h.controller.poke();
    await h.eventually(() => expect(h.controller.heldGpus().size).toBe(0));
    await h.flush();
    const freed = await both.gpuInventory.snapshot();
    expect(freed.held.size).toBe(0);
    expect(freed.workers).toEqual([]);
    expect(both.busyGpus().size).toBe(0);
    await stored.stop();
  });

  it("one process (no rows): the controller's view, whether it leads or not", async () => {
    h = await controllerHarness();
    await h.create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } });
    h.controller.start();
    await h.flush();
    const alone = replicaGpus({ gpus: GPUS, leading: () => false, controller: () => h.controller });
    expect([...alone.busyGpus()]).toEqual([...h.controller.heldGpus().keys()]);
    expect(alone.busyGpus().size).toBe(1);
    expect((await alone.gpuInventory.snapshot()).workers).toHaveLength(1);
  });
});
