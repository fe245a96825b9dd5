import { describe, expect, it } from 'vitest';
import { simulatedInventory } from '../../gpu/inventory.js';
import { type FairWorker, type GpuHolder, placeFairly } from './fair-placement.js';

const gpus = simulatedInventory([{ productId: 'h100-80g', count: 8, cudaVersion: '12.4' }]);
const uuid = (i: number) => gpus[i]?.uuid ?? '';
const RUNNING = 4;
const STARTING = 2;

/** Holders: `counts` GPUs each, handed out from index `from` on. */
function holders(ownerId: string, from: number, sizes: number[], rank = RUNNING): GpuHolder[] {
  let next = from;
  return sizes.map((size, i) => {
    const ids = Array.from({ length: size }, (_, k) => uuid(next + k));
    next += size;
    return { workerId: `${ownerId}-run${i}`, ownerId, gpuUuids: ids, leaving: false, rank, createdAt: i };
  });
}

function waiting(ownerId: string, count: number, need = 1, from = 0): FairWorker[] {
  return Array.from({ length: count }, (_, i) => ({
    workerId: `${ownerId}-wait${from + i}`,
    ownerId,
    gpusNeeded: need,
    productIds: ['h100-80g'],
    cudaVersion: 'any',
  }));
}

function place(held: GpuHolder[], wait: FairWorker[]) {
  const allocations = new Map(held.flatMap((h) => h.gpuUuids.map((u) => [u, h.workerId] as const)));
  const result = placeFairly({ gpus, allocations, holders: held, waiting: wait });
  return {
    placed: result.placed.map((p) => p.workerId),
    pending: Object.fromEntries(result.pending.map((p) => [p.workerId, p.reason])),
    reclaim: result.reclaim,
  };
}

describe('placeFairly: who is placed first when GPUs are short', () => {
  it.each([
    {
      why: 'an owner under its share goes before an older waiter of an owner that would go above it',
      held: holders('a', 0, [1, 1, 1, 1, 1, 1]),
      wait: [...waiting('a', 2), ...waiting('b', 2)],
      placed: ['b-wait0', 'b-wait1'],
    },
    {
      why: 'nobody else wants GPUs: an owner takes all that are free (work-conserving)',
      held: holders('a', 0, [1, 1, 1, 1, 1, 1]),
      wait: waiting('a', 2),
      placed: ['a-wait0', 'a-wait1'],
    },
    {
      why: 'two newcomers split what is free: one each before either gets a second',
      held: holders('a', 0, [1, 1, 1, 1, 1, 1]),
      wait: [...waiting('b', 2), ...waiting('c', 2)],
      placed: ['b-wait0', 'c-wait0'],
    },
    {
      why: 'an owner above its share does not take a GPU an owner under its share waits for',
      held: holders('a', 0, [1, 1, 1, 1, 1, 1, 1]),
      wait: [...waiting('b', 1, 2), ...waiting('a', 1)],
      placed: [],
    },
  ])('$why', ({ held, wait, placed }) => {
    expect(place(held, wait).placed).toEqual(placed);
  });
});

describe('placeFairly: reclaiming GPUs from an owner above its share', () => {
  it('a hog holding every GPU gives one back to a newcomer; its surplus waits, held back', () => {
    const result = place(holders('a', 0, [1, 1, 1, 1, 1, 1, 1, 1]), [
      ...waiting('a', 12),
      ...waiting('b', 1),
    ]);
    expect(result.placed).toEqual([]);
    expect(result.reclaim).toEqual([
      {
        workerId: 'a-run7',
        reason: 'making room for owner b: owner a holds 8 h100-80g GPUs, above its fair share of 7 of 8',
      },
    ]);
    expect(result.pending['b-wait0']).toBe(
      'waiting for 1 GPU of h100-80g: all 8 held (owner a: 8, above its fair share of 7)',
    );
    expect(result.pending['a-wait0']).toBe(
      'held back: owner a is above its fair share of h100-80g (holds 8, share 7 of 8); workers of owners below their share go first',
    );
  });

  it('two owners wanting more than half: the hog gives back down to half', () => {
    const result = place(holders('a', 0, [1, 1, 1, 1, 1, 1, 1, 1]), [
      ...waiting('a', 12),
      ...waiting('b', 6),
    ]);
    expect(result.reclaim.map((r) => r.workerId)).toEqual(['a-run7', 'a-run6', 'a-run5', 'a-run4']);
  });

  it('takes workers not serving yet first, then the newest', () => {
    const held = [...holders('a', 0, [1, 1, 1, 1, 1, 1]), ...holders('a', 6, [1, 1], STARTING)];
    held[6] = { ...(held[6] as GpuHolder), workerId: 'a-starting0' };
    held[7] = { ...(held[7] as GpuHolder), workerId: 'a-starting1' };
    const result = place(held, waiting('b', 3));
    expect(result.reclaim.map((r) => r.workerId)).toEqual(['a-starting1', 'a-starting0', 'a-run5']);
  });

  it('reclaims nothing while GPUs being freed already cover the need', () => {
    const held = holders('a', 0, [1, 1, 1, 1, 1, 1, 1, 1]);
    held[7] = { ...(held[7] as GpuHolder), leaving: true };
    const result = place(held, waiting('b', 1));
    expect(result.reclaim).toEqual([]);
    expect(result.pending['b-wait0']).toBe(
      'waiting for 1 GPU of h100-80g: all 8 held (owner a: 7); 1 being freed',
    );
  });

  it('frees what a bigger worker needs: one free GPU and one reclaimed for a 2-GPU worker', () => {
    const result = place(holders('a', 0, [1, 1, 1, 1, 1, 1, 1]), [...waiting('b', 1, 2), ...waiting('a', 1)]);
    expect(result.reclaim.map((r) => r.workerId)).toEqual(['a-run6']);
    expect(result.pending['a-wait0']).toMatch(/^held back: owner a is above its fair share/);
  });

  it('an owner above its share by less than a worker still gives that worker back, or the newcomer gets nothing', () => {
    const result = place(holders('a', 0, [2, 2, 2, 2]), waiting('b', 1));
    expect(result.reclaim.map((r) => r.workerId)).toEqual(['a-run3']);
  });

  it('names every owner holding the product, and who is above its share', () => {
    const held = [...holders('a', 0, [1, 1, 1, 1, 1, 1]), ...holders('b', 6, [1, 1])];
    const result = place(held, waiting('c', 1));
    expect(result.pending['c-wait0']).toBe(
      'waiting for 1 GPU of h100-80g: all 8 held (owner a: 6, above its fair share of 5; owner b: 2)',
    );
    expect(result.reclaim.map((r) => r.workerId)).toEqual(['a-run5']);
  });

  it('one owner alone keeps the plain reason, and nothing is reclaimed from itself', () => {
    const result = place(holders('a', 0, [1, 1, 1, 1, 1, 1, 1, 1]), waiting('a', 1));
    expect(result.pending['a-wait0']).toBe('needs 1 GPU of h100-80g, 0 free');
    expect(result.reclaim).toEqual([]);
  });

  it('a worker that can never fit neither waits for a share nor makes anyone give GPUs back', () => {
    const result = place(holders('a', 0, [1, 1, 1, 1, 1, 1, 1, 1]), waiting('b', 1, 9));
    expect(result.reclaim).toEqual([]);
    expect(result.pending['b-wait0']).toMatch(/this server has only 8/);
  });
});
