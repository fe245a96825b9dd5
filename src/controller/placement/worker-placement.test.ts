import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { simulatedInventory } from '../../gpu/inventory.js';
import type { ScheduledProduct } from '../../runtime/types.js';
import { type ManagedWorker, pendingRecord } from '../workers/managed-worker.js';
import { inventoryPlacement, schedulerPlacement } from './worker-placement.js';

function endpoint(gpusPerWorker: number, productIds: string[] = []): Endpoint {
  return sampleEndpoint({
    patch: {
      workers: { minWorkers: 1, maxWorkers: 8, gpusPerWorker },
      productIds,
    },
  });
}

function pending(e: Endpoint, count: number, at = 1000): ManagedWorker[] {
  return Array.from({ length: count }, (_, i) => pendingRecord(e, at + i));
}

const live = (...endpoints: Endpoint[]) => new Map(endpoints.map((e) => [e.id, e]));

function scheduler(products: Partial<ScheduledProduct>[]) {
  return {
    products: () =>
      products.map((p) => ({ id: p.id ?? '', gpusTotal: p.gpusTotal ?? 0, gpusFree: p.gpusFree ?? 0 })),
  };
}

describe('schedulerPlacement', () => {
  it('starts every waiting worker at once, whatever the free GPUs, with no GPU of Corral', () => {
    const e = endpoint(8, ['h100-80g']);
    const workers = pending(e, 3);
    const placement = schedulerPlacement(scheduler([{ id: 'h100-80g', gpusTotal: 8, gpusFree: 0 }]));
    const decision = placement.place(workers, live(e), () => {
      throw new Error('a scheduler placement never asks for the held GPUs');
    });
    expect(decision?.placed).toEqual(
      workers.map((w) => ({ workerId: w.id, gpus: [], productId: 'h100-80g' })),
    );
    expect(decision?.pending).toEqual([]);
    expect(decision?.reclaim).toEqual([]);
    // Nothing is ever beyond the cluster: the scheduler says why a worker waits.
    expect(placement.whyNeverPlaceable(e.spec)).toBeUndefined();
  });

  it("picks the endpoint's first product with enough free GPUs, counting the workers placed before", () => {
    const e = endpoint(2, ['h100-80g', 'a100-80g']);
    const [w1, w2, w3] = pending(e, 3);
    const placement = schedulerPlacement(
      scheduler([
        { id: 'h100-80g', gpusTotal: 8, gpusFree: 2 },
        { id: 'a100-80g', gpusTotal: 8, gpusFree: 2 },
      ]),
    );
    const placed = placement.place(
      [w3, w1, w2].filter((w) => w !== undefined),
      live(e),
      () => new Map(),
    );
    // Oldest first: w1 fits on h100, w2 on a100, w3 fits nowhere and goes to the first product, to wait there.
    expect(placed?.placed.map((p) => [p.workerId, p.productId])).toEqual([
      [w1?.id, 'h100-80g'],
      [w2?.id, 'a100-80g'],
      [w3?.id, 'h100-80g'],
    ]);
  });

  it('gives a worker of an endpoint naming no product the one with the most free GPUs; none without GPUs', () => {
    const any = endpoint(1);
    const cpu = endpoint(0);
    const placement = schedulerPlacement(
      scheduler([
        { id: 'l4-24g', gpusTotal: 4, gpusFree: 1 },
        { id: 'h100-80g', gpusTotal: 8, gpusFree: 6 },
      ]),
    );
    const [a] = pending(any, 1);
    const [c] = pending(cpu, 1, 2000);
    const decision = placement.place(
      [a, c].filter((w) => w !== undefined),
      live(any, cpu),
      () => new Map(),
    );
    expect(decision?.placed.map((p) => p.productId)).toEqual(['h100-80g', '']);
  });

  it('places nothing when no worker of a live endpoint waits', () => {
    const e = endpoint(1, ['h100-80g']);
    const placement = schedulerPlacement(scheduler([]));
    expect(placement.place(pending(e, 2), live(), () => new Map())).toBeUndefined();
  });
});

describe('inventoryPlacement', () => {
  it("hands out the inventory's GPUs and leaves the rest waiting, with Corral's reason", () => {
    const e = endpoint(1, ['h100-80g']);
    const gpus = simulatedInventory([{ productId: 'h100-80g', count: 1, cudaVersion: '12.8' }]);
    const placement = inventoryPlacement(gpus);
    const [w1, w2] = pending(e, 2);
    const decision = placement.place(
      [w1, w2].filter((w) => w !== undefined),
      live(e),
      () => new Map(),
    );
    expect(decision?.placed).toEqual([{ workerId: w1?.id, gpus }]);
    expect(decision?.pending).toEqual([{ workerId: w2?.id, reason: 'needs 1 GPU of h100-80g, 0 free' }]);
    expect(placement.whyNeverPlaceable(endpoint(2, ['h100-80g']).spec)).toBe(
      'each worker needs 2 GPU(s) of h100-80g; this server has 1 GPU(s) in all',
    );
  });
});
