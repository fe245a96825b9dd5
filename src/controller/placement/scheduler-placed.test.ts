import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../../test/support/controller-harness.js';
import type { WorkerSpec } from '../../runtime/types.js';
import { schedulerPlacement } from './worker-placement.js';

describe('Controller: workers placed by the runtime scheduler', () => {
  let h: ControllerHarness;
  const specs: WorkerSpec[] = [];
  beforeEach(async () => {
    specs.length = 0;
    // No GPU of Corral's, and a cluster whose product has no free GPU: the scheduler decides, not Corral.
    h = await controllerHarness({
      gpus: [],
      placement: schedulerPlacement({
        products: () => [{ id: 'h100-80g', gpusTotal: 8, gpusFree: 0 }],
      }),
    });
    const create = h.runtime.create.bind(h.runtime);
    h.runtime.create = (spec, onProgress) => {
      specs.push(spec);
      return create(spec, onProgress);
    };
  });
  afterEach(() => h.close());

  it('creates each worker at once with its product and GPU count, and holds none back for an inventory', async () => {
    const endpoint = await h.create({
      productIds: ['h100-80g'],
      workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 8 },
    });
    h.controller.start();
    await h.eventually(async () => {
      const rows = await h.store.workers.listByEndpoint(endpoint.id);
      expect(rows.map((w) => w.status.state)).toEqual(['running', 'running']);
    });
    expect(specs.map((s) => [s.placement, s.gpus])).toEqual([
      [{ product: 'h100-80g', gpuNum: 8, authId: '', latestTag: true }, []],
      [{ product: 'h100-80g', gpuNum: 8, authId: '', latestTag: true }, []],
    ]);
    const [stored] = await h.store.endpoints.listAll();
    expect(stored?.status.error).not.toBe('INSUFFICIENT_GPU');
    expect(h.controller.heldGpus().size).toBe(0);
  });
});
