import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import { compareVersions, type Gpu, simulatedInventory } from '../../gpu/inventory.js';
import { canEverFit, type PlacementWorker, placeWorkers, whyNeverPlaceable } from './placement.js';

function inventory(...groups: [productId: string, count: number, cudaVersion?: string][]): Gpu[] {
  return simulatedInventory(
    groups.map(([productId, count, cudaVersion]) => ({
      productId,
      count,
      cudaVersion: cudaVersion ?? '12.8',
    })),
  );
}

function worker(
  workerId: string,
  gpusNeeded: number,
  productIds: string[] = [],
  cudaVersion = 'any',
): PlacementWorker {
  return { workerId, gpusNeeded, productIds, cudaVersion };
}

function indices(result: ReturnType<typeof placeWorkers>): Record<string, number[]> {
  return Object.fromEntries(result.placed.map((p) => [p.workerId, p.gpus.map((g) => g.index)]));
}

describe('placeWorkers', () => {
  const h100x2 = inventory(['h100-80g', 2]);
  const mixed = inventory(['a100-40g', 2, '12.2'], ['h100-80g', 4, '12.8']);

  it.each([
    {
      name: 'one GPU each, lowest indices first, third worker pending',
      gpus: h100x2,
      allocations: [],
      workers: [worker('w1', 1, ['h100-80g']), worker('w2', 1, ['h100-80g']), worker('w3', 1, ['h100-80g'])],
      placed: { w1: [0], w2: [1] },
      pending: { w3: 'needs 1 GPU of h100-80g, 0 free' },
    },
    {
      name: 'existing allocations are never handed out again',
      gpus: h100x2,
      allocations: [['GPU-simulated-h100-80g-0', 'old']],
      workers: [worker('w1', 1), worker('w2', 1)],
      placed: { w1: [1] },
      pending: { w2: 'needs 1 GPU of one product, free: h100-80g 0' },
    },
    {
      name: 'a worker gets all its GPUs of one product',
      gpus: mixed,
      allocations: [
        ['GPU-simulated-h100-80g-2', 'x'],
        ['GPU-simulated-h100-80g-3', 'y'],
        ['GPU-simulated-h100-80g-4', 'z'],
      ],
      workers: [worker('w1', 2), worker('w2', 2)],
      placed: { w1: [0, 1] },
      pending: { w2: 'needs 2 GPUs of one product, free: a100-40g 0, h100-80g 1' },
    },
    {
      name: 'product preference order is honoured',
      gpus: mixed,
      allocations: [],
      workers: [
        worker('w1', 2, ['h100-80g', 'a100-40g']),
        worker('w2', 2, ['a100-40g', 'h100-80g']),
        worker('w3', 2, ['a100-40g', 'h100-80g']),
        worker('w4', 1, ['a100-40g', 'h100-80g']),
      ],
      placed: { w1: [2, 3], w2: [0, 1], w3: [4, 5] },
      pending: { w4: 'needs 1 GPU of one of a100-40g, h100-80g, free: a100-40g 0, h100-80g 0' },
    },
    {
      name: 'CUDA version filters out older drivers',
      gpus: mixed,
      allocations: [],
      workers: [worker('w1', 1, [], '12.4'), worker('w2', 1, ['a100-40g'], '12.4')],
      placed: { w1: [2] },
      pending: { w2: 'needs 1 GPU of a100-40g with CUDA 12.4+, this server has none' },
    },
    {
      name: 'a worker needing more than the product has names the shortfall',
      gpus: h100x2,
      allocations: [],
      workers: [worker('big', 3, ['h100-80g']), worker('small', 2, ['h100-80g'])],
      placed: { small: [0, 1] },
      pending: { big: 'needs 3 GPUs of h100-80g, this server has only 2' },
    },
    {
      name: 'an unknown product is pending, later workers still placed',
      gpus: h100x2,
      allocations: [],
      workers: [worker('w1', 1, ['b200-192g']), worker('w2', 1, ['h100-80g'])],
      placed: { w2: [0] },
      pending: { w1: 'needs 1 GPU of b200-192g, this server has none' },
    },
    {
      name: 'workers needing no GPU always fit',
      gpus: [],
      allocations: [],
      workers: [worker('cpu', 0), worker('gpu', 1)],
      placed: { cpu: [] as number[] },
      pending: { gpu: 'needs 1 GPU, this server has none' },
    },
    {
      name: 'several products, none with enough free',
      gpus: mixed,
      allocations: [['GPU-simulated-a100-40g-0', 'x']],
      workers: [worker('w1', 5, ['a100-40g', 'h100-80g'])],
      placed: {},
      pending: { w1: 'needs 5 GPUs of one of a100-40g, h100-80g, free: a100-40g 1, h100-80g 4' },
    },
  ])('$name', ({ gpus, allocations, workers, placed, pending }) => {
    const result = placeWorkers({ gpus, allocations: new Map(allocations as [string, string][]), workers });
    expect(indices(result)).toEqual(placed);
    expect(Object.fromEntries(result.pending.map((p) => [p.workerId, p.reason]))).toEqual(pending);
  });

  it('does not mutate its input', () => {
    const gpus = inventory(['h100-80g', 3]);
    const copy = structuredClone(gpus);
    placeWorkers({ gpus, allocations: new Map(), workers: [worker('w', 2)] });
    expect(gpus).toEqual(copy);
  });
});

describe('canEverFit', () => {
  const gpus = inventory(['a100-40g', 2, '12.2'], ['h100-80g', 4, '12.8']);
  it.each([
    [worker('a', 4, ['h100-80g']), true],
    [worker('b', 5, ['h100-80g']), false],
    [worker('c', 5), false],
    [worker('d', 2, ['a100-40g'], '12.2'), true],
    [worker('e', 1, ['a100-40g'], '12.4'), false],
    [worker('f', 1, [], '12.4'), true],
    [worker('g', 0, ['nope']), true],
    [worker('h', 1, ['nope']), false],
  ])('%o -> %s', (w, expected) => {
    expect(canEverFit(w, gpus)).toBe(expected);
  });
});

// ---- properties ----

const PRODUCTS = ['h100-80g', 'a100-40g', 'l4-24g'];
const CUDAS = ['11.8', '12.2', '12.4', '12.8'];

const gpuArb: fc.Arbitrary<Gpu[]> = fc
  .array(fc.record({ productId: fc.constantFrom(...PRODUCTS), cudaVersion: fc.constantFrom(...CUDAS) }), {
    maxLength: 16,
  })
  .map((specs) =>
    specs.map((s, index) => ({
      index,
      uuid: `GPU-${index}`,
      model: s.productId,
      productId: s.productId,
      memoryGB: 80,
      driverVersion: 'x',
      cudaVersion: s.cudaVersion,
      simulated: true,
    })),
  );

const workerArb = (i: number): fc.Arbitrary<PlacementWorker> =>
  fc.record({
    workerId: fc.constant(`w${i}`),
    gpusNeeded: fc.integer({ min: 0, max: 5 }),
    productIds: fc.subarray([...PRODUCTS, 'missing-1g']),
    cudaVersion: fc.constantFrom('any', ...CUDAS, '13.0'),
  });

const scenarioArb = gpuArb.chain((gpus) =>
  fc.record({
    gpus: fc.constant(gpus),
    allocated: fc.subarray(gpus.map((g) => g.uuid)),
    workers: fc
      .integer({ min: 0, max: 10 })
      .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => workerArb(i)))),
  }),
);

function fits(w: PlacementWorker, gpu: Gpu): boolean {
  const productOk = w.productIds.length === 0 || w.productIds.includes(gpu.productId);
  const cudaOk = w.cudaVersion === 'any' || compareVersions(gpu.cudaVersion, w.cudaVersion) >= 0;
  return productOk && cudaOk;
}

describe('placement properties', () => {
  it('never double-allocates and never exceeds the inventory', () => {
    fc.assert(
      fc.property(scenarioArb, ({ gpus, allocated, workers }) => {
        const allocations = new Map(allocated.map((uuid) => [uuid, 'existing']));
        const result = placeWorkers({ gpus, allocations, workers });
        const used = new Set(allocations.keys());
        const inventoryUuids = new Set(gpus.map((g) => g.uuid));
        for (const p of result.placed) {
          for (const gpu of p.gpus) {
            expect(used.has(gpu.uuid)).toBe(false);
            expect(inventoryUuids.has(gpu.uuid)).toBe(true);
            used.add(gpu.uuid);
          }
        }
        expect(used.size).toBeLessThanOrEqual(gpus.length);
        expect(result.placed.length + result.pending.length).toBe(workers.length);
      }),
      { numRuns: 500 },
    );
  });

  it('gives every placed worker exactly what it needs: one allowed product, compatible CUDA', () => {
    fc.assert(
      fc.property(scenarioArb, ({ gpus, allocated, workers }) => {
        const result = placeWorkers({ gpus, allocations: new Map(allocated.map((u) => [u, 'x'])), workers });
        const byId = new Map(workers.map((w) => [w.workerId, w]));
        for (const p of result.placed) {
          const w = byId.get(p.workerId);
          expect(w).toBeDefined();
          if (!w) continue;
          expect(p.gpus).toHaveLength(w.gpusNeeded);
          expect(new Set(p.gpus.map((g) => g.productId)).size).toBeLessThanOrEqual(1);
          for (const gpu of p.gpus) expect(fits(w, gpu)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('leaves a worker pending only when it really could not fit in what was free at its turn', () => {
    fc.assert(
      fc.property(scenarioArb, ({ gpus, allocated, workers }) => {
        const result = placeWorkers({ gpus, allocations: new Map(allocated.map((u) => [u, 'x'])), workers });
        const placedById = new Map(result.placed.map((p) => [p.workerId, p.gpus]));
        const pendingIds = new Set(result.pending.map((p) => p.workerId));
        const used = new Set(allocated);
        // Replay in order: at each pending worker's turn, no allowed product had enough free compatible GPUs.
        for (const w of workers) {
          const got = placedById.get(w.workerId);
          if (got) {
            for (const gpu of got) used.add(gpu.uuid);
            continue;
          }
          expect(pendingIds.has(w.workerId)).toBe(true);
          const free = gpus.filter((g) => !used.has(g.uuid) && fits(w, g));
          const perProduct = new Map<string, number>();
          for (const g of free) perProduct.set(g.productId, (perProduct.get(g.productId) ?? 0) + 1);
          for (const count of perProduct.values()) expect(count).toBeLessThan(w.gpusNeeded);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('prefers the lowest free indices of the chosen product', () => {
    fc.assert(
      fc.property(scenarioArb, ({ gpus, allocated, workers }) => {
        const result = placeWorkers({ gpus, allocations: new Map(allocated.map((u) => [u, 'x'])), workers });
        const used = new Set(allocated);
        const placedById = new Map(result.placed.map((p) => [p.workerId, p.gpus]));
        const byId = new Map(workers.map((w) => [w.workerId, w]));
        for (const w of workers) {
          const got = placedById.get(w.workerId);
          if (!got || got.length === 0) continue;
          const spec = byId.get(w.workerId);
          const product = got[0]?.productId;
          const expected = gpus
            .filter((g) => !used.has(g.uuid) && g.productId === product && spec && fits(spec, g))
            .slice(0, got.length);
          expect(got.map((g) => g.index)).toEqual(expected.map((g) => g.index));
          for (const gpu of got) used.add(gpu.uuid);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('canEverFit is true for every worker that placement puts on an empty inventory', () => {
    fc.assert(
      fc.property(scenarioArb, ({ gpus, workers }) => {
        for (const w of workers) {
          const alone = placeWorkers({ gpus, allocations: new Map(), workers: [w] });
          expect(canEverFit(w, gpus)).toBe(alone.placed.length === 1);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('whyNeverPlaceable', () => {
  const gpus = inventory(['h100-80g', 2, '12.4']);
  const spec = (gpusPerWorker: number, productIds: string[] = [], cudaVersion = 'any') =>
    sampleEndpoint({ patch: { workers: { gpusPerWorker, cudaVersion }, productIds } }).spec;

  it('says nothing for a spec that fits the GPUs', () => {
    expect(whyNeverPlaceable(spec(2), gpus)).toBeUndefined();
    expect(whyNeverPlaceable(spec(1, ['h100-80g']), gpus)).toBeUndefined();
  });

  it('says why for one that never can: too many GPUs, another product, a newer CUDA', () => {
    expect(whyNeverPlaceable(spec(3), gpus)).toBe(
      'each worker needs 3 GPU(s); this server has 2 GPU(s) in all',
    );
    expect(whyNeverPlaceable(spec(1, ['a100-40g']), gpus)).toBe(
      'each worker needs 1 GPU(s) of a100-40g; this server has 2 GPU(s) in all',
    );
    expect(whyNeverPlaceable(spec(1, [], '12.8'), gpus)).toBeDefined();
  });
});
