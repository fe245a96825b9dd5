import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../../test/support/simulated-controller.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { simulatedInventory } from '../../gpu/inventory.js';
import { LABELS } from '../../runtime/types.js';

const eightGpus = simulatedInventory([{ productId: 'h100-80g', count: 8, cudaVersion: '12.4' }]);

describe('Controller: GPUs shared fairly between owners', () => {
  let h: ControllerHarness;
  beforeEach(async () => {
    h = await controllerHarness();
  });
  afterEach(() => h.close());

  const byState = async (endpoint: Endpoint) => {
    const counts: Record<string, number> = {};
    for (const w of await h.store.workers.listByEndpoint(endpoint.id)) {
      counts[w.status.state] = (counts[w.status.state] ?? 0) + 1;
    }
    return counts;
  };
  const messages = async (endpoint: Endpoint, state: string) =>
    (await h.store.workers.listByEndpoint(endpoint.id))
      .filter((w) => w.status.state === state)
      .map((w) => w.status.message);

  it('a hog holding every GPU (minNum 20) gives one back: the second owner runs within two passes', async () => {
    const hog = await h.create({
      ownerId: 'hog',
      patch: { workers: { minWorkers: 20, maxWorkers: 20, gpusPerWorker: 1 } },
    });
    const c = h.controller({ gpus: eightGpus });
    c.start();
    await h.eventually(async () => expect((await byState(hog)).running).toBe(8));
    expect((await byState(hog)).pending).toBe(12);

    const passes = vi.spyOn(h.runtime, 'list');
    const newcomer = await h.create({ ownerId: 'newcomer' });
    passes.mockClear();
    c.poke();
    await h.eventually(async () => expect((await byState(newcomer)).running).toBe(1));
    // Whole passes (a listing of every worker); the endpoints' own reconciles list theirs alone.
    const whole = passes.mock.calls.filter(([selector]) => selector[LABELS.endpoint] === undefined);
    expect(whole.length).toBeLessThanOrEqual(3);

    // The hog keeps its fair share (7 of 8); its surplus waits, saying why.
    await h.flush();
    expect(await byState(hog)).toEqual({ running: 7, pending: 13 });
    const waiting = await messages(hog, 'pending');
    expect(new Set(waiting)).toEqual(
      new Set([
        'needs 1 GPU of one product, free: h100-80g 0; owner hog is at its fair share of h100-80g (holds 7, share 7 of 8)',
      ]),
    );
    expect(new Set(c.heldGpus().keys()).size).toBe(8);

    // Stable: more passes take nothing more from either.
    await h.advance(1_000, 20);
    expect(await byState(hog)).toEqual({ running: 7, pending: 13 });
    expect((await byState(newcomer)).running).toBe(1);
  });

  it('a worker of an owner under its share waits saying who holds the GPUs, the hog above its share', async () => {
    const hog = await h.create({
      ownerId: 'hog',
      patch: { workers: { minWorkers: 8, maxWorkers: 8, gpusPerWorker: 1 } },
    });
    const c = h.controller({ gpus: eightGpus });
    c.start();
    await h.eventually(async () => expect((await byState(hog)).running).toBe(8));
    // The hog's worker takes its grace period to go: the newcomer waits meanwhile, told why.
    const release = h.runtime.holdRemovals();
    const newcomer = await h.create({ ownerId: 'newcomer' });
    c.poke();
    await h.eventually(async () =>
      expect(await messages(newcomer, 'pending')).toEqual([
        'waiting for 1 GPU of h100-80g: all 8 held (owner hog: 7); 1 being freed',
      ]),
    );
    expect(await messages(hog, 'stopped')).toEqual([
      'drained (making room for owner newcomer: owner hog holds 8 h100-80g GPUs, above its fair share of 7 of 8); removing its container',
    ]);
    release();
    await h.eventually(async () => expect((await byState(newcomer)).running).toBe(1));
  });

  it('two owners both wanting every GPU end with half each', async () => {
    const a = await h.create({
      ownerId: 'a',
      patch: { workers: { minWorkers: 8, maxWorkers: 8, gpusPerWorker: 1 } },
    });
    const c = h.controller({ gpus: eightGpus });
    c.start();
    await h.eventually(async () => expect((await byState(a)).running).toBe(8));
    const b = await h.create({
      ownerId: 'b',
      patch: { workers: { minWorkers: 8, maxWorkers: 8, gpusPerWorker: 1 } },
    });
    c.poke();
    await h.eventually(async () => {
      expect((await byState(a)).running).toBe(4);
      expect((await byState(b)).running).toBe(4);
    });
    await h.advance(1_000, 20);
    expect((await byState(a)).running).toBe(4);
    expect((await byState(b)).running).toBe(4);
  });
});
