/**
 * `GET gpus`: the inventory for any key, which worker holds each GPU (the caller's own; every owner's for an admin)
 * and the waiting workers with their reason, fed by a `GpuInventorySource` as app/serve.ts feeds it from the controller.
 * SQLite and PostgreSQL.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { simulatedInventory } from '../gpu/inventory.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { GpuSnapshot, PlacedWorker } from '../service/gpu-report.js';
import type { Store } from '../store/store.js';

const GPUS = simulatedInventory([{ productId: 'h100-80g', count: 3, cudaVersion: '12.8' }]);
const uuid = (index: number) => GPUS[index]?.uuid ?? '';

describe.each(storeTargets())('GET gpus on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let api: TestApi;
  let adminKey: string;
  let snapshot: GpuSnapshot;
  let endpointA: string;
  let endpointB: string;

  const worker = (id: string, endpointId: string, ownerId: string, over: Partial<PlacedWorker>) => ({
    id,
    endpointId,
    ownerId,
    state: 'running' as const,
    message: '',
    gpuUuids: [],
    createdAt: Date.parse('2026-01-01T00:00:00Z'),
    ...over,
  });

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    snapshot = { gpus: GPUS, workers: [], held: new Map() };
    api = await createTestApi(store, { gpuInventory: { snapshot: async () => snapshot } });
    adminKey = (
      await new ApiKeyService({ store, clock: Date.now }).create({ ownerId: 'ops', name: 'o', admin: true })
    ).key;
    const create = async (name: string, key: string) =>
      (
        await api.call(
          'POST',
          'endpoint/create',
          originalClientCreateBody({ name, workerConfig: { minNum: 0, maxNum: 2, gpuNum: 2 } }),
          key,
        )
      ).body.id as string;
    endpointA = await create('mine', api.keyA);
    endpointB = await create('theirs', api.keyB);
    snapshot.workers = [
      worker('w-a', endpointA, 'owner-a', { gpuUuids: [uuid(0)] }),
      worker('w-b', endpointB, 'owner-b', { gpuUuids: [uuid(1)], state: 'starting' }),
      worker('w-a2', endpointA, 'owner-a', {
        state: 'pending',
        message: 'waiting for 2 GPUs (h100-80g): 1 free',
        createdAt: Date.parse('2026-01-01T00:01:00Z'),
      }),
      worker('w-b2', endpointB, 'owner-b', { state: 'pending', message: 'waiting for 2 GPUs' }),
    ];
    snapshot.held = new Map([
      [uuid(0), 'w-a'],
      [uuid(1), 'w-b'],
    ]);
  });
  afterEach(async () => {
    await api.app.close();
    await dispose();
  });

  it("shows every GPU to any key, its own holders and waiting workers, others' GPUs only as busy", async () => {
    const answer = await api.call('GET', 'gpus');
    expect(answer.status).toBe(200);
    expect(answer.body.scope).toBe('own');
    expect(answer.body.gpus).toEqual([
      {
        index: 0,
        uuid: uuid(0),
        productId: 'h100-80g',
        model: 'Simulated h100-80g',
        memoryGB: 80,
        simulated: true,
        busy: true,
        heldBy: {
          workerId: 'w-a',
          endpointId: endpointA,
          endpointName: 'mine',
          ownerId: 'owner-a',
          state: 'running',
        },
      },
      expect.objectContaining({ index: 1, busy: true, heldBy: null }),
      expect.objectContaining({ index: 2, busy: false, heldBy: null }),
    ]);
    expect(answer.body.waiting).toEqual([
      {
        workerId: 'w-a2',
        endpointId: endpointA,
        endpointName: 'mine',
        ownerId: 'owner-a',
        since: '2026-01-01T00:01:00.000Z',
        gpuCount: 2,
        productIds: ['h100-80g'],
        reason: 'waiting for 2 GPUs (h100-80g): 1 free',
      },
    ]);
    expect(JSON.stringify(answer.body)).not.toContain('w-b');
    expect(JSON.stringify(answer.body)).not.toContain(endpointB);
  });

  it("shows an admin every owner's holders and waiting workers, the longest waiting first", async () => {
    // A removed worker's container still holds its GPU: an admin sees which.
    snapshot.held = new Map([...snapshot.held, [uuid(2), 'w-gone']]);
    const answer = await api.call('GET', 'gpus', undefined, adminKey);
    expect(answer.body.scope).toBe('all');
    expect(
      answer.body.gpus.map((g: { heldBy: { workerId: string; state: string } | null }) => g.heldBy),
    ).toEqual([
      expect.objectContaining({ workerId: 'w-a', endpointName: 'mine' }),
      expect.objectContaining({
        workerId: 'w-b',
        endpointName: 'theirs',
        ownerId: 'owner-b',
        state: 'starting',
      }),
      { workerId: 'w-gone', endpointId: '', endpointName: '', ownerId: '', state: 'removing' },
    ]);
    expect(answer.body.waiting.map((w: { workerId: string }) => w.workerId)).toEqual(['w-b2', 'w-a2']);
    const asA = await api.call('GET', 'gpus');
    expect(asA.body.gpus[2]).toMatchObject({ busy: true, heldBy: null });
  });

  it('needs a key', async () => {
    expect((await api.call('GET', 'gpus', undefined, null)).status).toBe(401);
  });
});

describe.each(storeTargets())('GET gpus without a controller on $name', (target) => {
  it('lists the inventory of the configuration, nothing held', async () => {
    const { store, dispose } = await target.open();
    const api = await createTestApi(store);
    try {
      const answer = await api.call('GET', 'gpus');
      expect(
        answer.body.gpus.map((g: { productId: string; busy: boolean }) => [g.productId, g.busy]),
      ).toEqual([
        ['h100-80g', false],
        ['h100-80g', false],
        ['a100-40g', false],
        ['a100-40g', false],
      ]);
      expect(answer.body.waiting).toEqual([]);
    } finally {
      await api.app.close();
      await dispose();
    }
  });
});
