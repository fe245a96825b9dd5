import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { simulatedInventory } from '../gpu/inventory.js';
import { neverPlaceableOn } from './placement.js';

describe('neverPlaceableOn', () => {
  const never = neverPlaceableOn(
    simulatedInventory([{ productId: 'h100-80g', count: 2, cudaVersion: '12.4' }]),
  );
  const endpoint = (gpusPerWorker: number, productIds: string[] = []) =>
    sampleEndpoint({ patch: { workers: { gpusPerWorker }, productIds } });

  it('says nothing for a spec that fits the GPUs', () => {
    expect(never(endpoint(2))).toBeUndefined();
    expect(never(endpoint(1, ['h100-80g']))).toBeUndefined();
  });

  it("says why, in the controller's words, for one that never can", () => {
    expect(never(endpoint(3))).toBe('each worker needs 3 GPU(s); this server has 2 GPU(s) in all');
    expect(never(endpoint(1, ['a100-40g']))).toBe(
      'each worker needs 1 GPU(s) of a100-40g; this server has 2 GPU(s) in all',
    );
  });
});
