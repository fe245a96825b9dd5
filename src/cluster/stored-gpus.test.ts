/**
 * `StoredGpus` on a real store (SQLite, and PostgreSQL where configured), on manual timers: the rows' holders read at
 * start, every interval and on demand, the last read kept while the database fails; and `replicaGpus`, which shows
 * the leader's controller view while this replica leads and the rows' otherwise.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Worker, WorkerState } from '../domain/worker.js';
import type { InventoryGpu } from '../service/gpu-report.js';
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

  it("replicaGpus: the controller's view while leading, the rows' otherwise; no rows (one process): the controller's", async () => {
    await store.workers.upsert(row('w1', 'running', ['GPU-0'], 10));
    await store.workers.upsert(row('w2', 'pending', [], 20));
    const stored = new StoredGpus({ workers: store.workers, intervalMs: 1_000, timers, logger });
    await stored.start();
    let leading = true;
    // The leader's own view: a create under way holds GPU-1 before any row says so.
    const controller = {
      workers: () => [
        {
          id: 'w9',
          endpointId: 'ep-9',
          ownerId: 'o',
          state: 'pulling' as const,
          message: '',
          gpuUuids: ['GPU-1'],
          createdAt: 1,
        },
      ],
      heldGpus: () => new Map([['GPU-1', 'w9']]),
    };
    const both = replicaGpus({ gpus: GPUS, leading: () => leading, controller: () => controller, stored });
    expect([...both.busyGpus()]).toEqual(['GPU-1']);
    const led = await both.gpuInventory.snapshot();
    expect(led.workers.map((w) => w.id)).toEqual(['w9']);
    expect([...led.held]).toEqual([['GPU-1', 'w9']]);

    leading = false;
    expect([...both.busyGpus()]).toEqual(['GPU-0']);
    // On demand: a row written since the last interval's read shows at once, and in busyGpus from then on.
    await store.workers.upsert(row('w3', 'starting', ['GPU-1'], 30));
    const followed = await both.gpuInventory.snapshot();
    expect(followed.gpus).toEqual(GPUS);
    expect(followed.workers.map((w) => [w.id, w.state])).toEqual([
      ['w1', 'running'],
      ['w2', 'pending'],
      ['w3', 'starting'],
    ]);
    expect([...followed.held]).toEqual([
      ['GPU-0', 'w1'],
      ['GPU-1', 'w3'],
    ]);
    expect([...both.busyGpus()].sort()).toEqual(['GPU-0', 'GPU-1']);

    const alone = replicaGpus({ gpus: GPUS, leading: () => false, controller: () => controller });
    expect([...alone.busyGpus()]).toEqual(['GPU-1']);
    expect((await alone.gpuInventory.snapshot()).workers.map((w) => w.id)).toEqual(['w9']);
    await stored.stop();
  });
});
