import { describe, expect, it } from 'vitest';
import { scheduledCatalog, scheduledCudaVersions, scheduledGpuRange } from './products.js';

describe('scheduledCatalog', () => {
  it("lists the scheduler's products with the configured names, else what the nodes say", () => {
    const scheduled = [
      { id: 'h100-80g', gpuModel: 'NVIDIA-H100-80GB-HBM3', gpuMemoryGB: 80, gpusTotal: 16, gpusFree: 5 },
      { id: 'pool-a', gpusTotal: 4, gpusFree: 4 },
    ];
    const configured = [{ id: 'pool-a', name: 'Pool A', gpuModel: 'NVIDIA A100', gpuMemoryGB: 40 }];
    expect(scheduledCatalog(scheduled, configured)).toEqual([
      {
        id: 'h100-80g',
        name: 'NVIDIA-H100-80GB-HBM3',
        gpuModel: 'NVIDIA-H100-80GB-HBM3',
        gpuMemoryGB: 80,
        gpusTotal: 16,
        gpusFree: 5,
      },
      { id: 'pool-a', name: 'Pool A', gpuModel: 'NVIDIA A100', gpuMemoryGB: 40, gpusTotal: 4, gpusFree: 4 },
    ]);
  });
});

describe('scheduledCudaVersions', () => {
  const products = [
    { id: 'h100-80g', gpusTotal: 8, gpusFree: 8, cudaVersion: '12.4' },
    { id: 'l4-24g', gpusTotal: 2, gpusFree: 2, cudaVersion: '12.2' },
    // No node: says nothing, counts for nothing.
    { id: 'b200', gpusTotal: 0, gpusFree: 0 },
  ];

  it('goes up to the lowest version of the products with GPUs, or to the configured one', () => {
    expect(scheduledCudaVersions(products).at(-1)).toBe('12.2');
    expect(scheduledCudaVersions(products)).toContain('11.8');
    expect(scheduledCudaVersions(products, '12.8').at(-1)).toBe('12.8');
  });

  it('is empty while a product with GPUs does not say (unless configured)', () => {
    const unknown = [...products, { id: 'a100-40g', gpusTotal: 4, gpusFree: 4 }];
    expect(scheduledCudaVersions(unknown)).toEqual([]);
    expect(scheduledCudaVersions(unknown, '12.4').at(-1)).toBe('12.4');
    expect(scheduledCudaVersions([])).toEqual([]);
  });
});

describe('scheduledGpuRange (maxGPUNum where a scheduler places workers)', () => {
  const configured = { min: 1, max: 8 };

  it('is bounded by the largest node of any product: 2 on a cluster of 2-GPU nodes, not 8', () => {
    const twoGpuNodes = [
      { id: 'l4-24g', gpusTotal: 4, gpusFree: 4, gpusPerNodeMax: 2 },
      { id: 'a10-24g', gpusTotal: 1, gpusFree: 1, gpusPerNodeMax: 1 },
    ];
    expect(scheduledGpuRange(twoGpuNodes, configured)).toEqual({ min: 1, max: 2 });
  });

  it('never above the configured maximum, nor below its minimum', () => {
    const big = [{ id: 'b200', gpusTotal: 16, gpusFree: 16, gpusPerNodeMax: 16 }];
    expect(scheduledGpuRange(big, configured)).toEqual({ min: 1, max: 8 });
    const one = [{ id: 't4', gpusTotal: 1, gpusFree: 1, gpusPerNodeMax: 1 }];
    expect(scheduledGpuRange(one, { min: 2, max: 8 })).toEqual({ min: 2, max: 2 });
  });

  it('is the configured range while no node with GPUs is seen (nodes not listed yet)', () => {
    expect(scheduledGpuRange([], configured)).toEqual(configured);
    expect(scheduledGpuRange([{ id: 'b200', gpusTotal: 0, gpusFree: 0 }], configured)).toEqual(configured);
  });
});
