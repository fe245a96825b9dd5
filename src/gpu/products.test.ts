import { describe, expect, it } from 'vitest';
import { scheduledCatalog, scheduledCudaVersions } from './products.js';

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
