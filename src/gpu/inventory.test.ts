import { describe, expect, it } from 'vitest';
import {
  parseGpuSource,
  parseNvidiaSmi,
  productIdFor,
  simulatedInventory,
  supportedCudaVersions,
} from './inventory.js';
import { productCatalog } from './products.js';

const BANNER = `+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
`;

describe('parseGpuSource', () => {
  it.each([
    ['auto', { kind: 'auto' }],
    ['8', { kind: 'simulated', groups: [{ productId: 'sim-80g', count: 8, cudaVersion: '12.8' }] }],
    ['h100-80g:2', { kind: 'simulated', groups: [{ productId: 'h100-80g', count: 2, cudaVersion: '12.8' }] }],
    [
      'h100-80g:4,a100-40g:2@12.2',
      {
        kind: 'simulated',
        groups: [
          { productId: 'h100-80g', count: 4, cudaVersion: '12.8' },
          { productId: 'a100-40g', count: 2, cudaVersion: '12.2' },
        ],
      },
    ],
  ])('%s', (input, expected) => {
    expect(parseGpuSource(input)).toEqual(expected);
  });

  it.each(['', 'h100', 'h100-80g:', 'H100:x', 'a:1:2'])('rejects %j with a readable message', (input) => {
    expect(() => parseGpuSource(input)).toThrow(/model:count/);
  });
});

describe('nvidia-smi', () => {
  it('parses the query output and the CUDA version from the banner', () => {
    const gpus = parseNvidiaSmi(
      '0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n1, GPU-bbbb, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n',
      BANNER,
    );
    expect(gpus).toHaveLength(2);
    expect(gpus[1]).toEqual({
      index: 1,
      uuid: 'GPU-bbbb',
      model: 'NVIDIA H100 80GB HBM3',
      productId: 'h100-80g',
      memoryGB: 80,
      driverVersion: '550.54.15',
      cudaVersion: '12.4',
      simulated: false,
    });
  });

  it.each([
    ['NVIDIA H100 80GB HBM3', 80, 'h100-80g'],
    ['NVIDIA A100-SXM4-40GB', 40, 'a100-40g'],
    ['NVIDIA GeForce RTX 4090', 24, 'rtx-4090-24g'],
    ['Tesla T4', 15, 't4-15g'],
    ['NVIDIA H200', 140, 'h200-140g'],
  ])('names %s (%i GB) %s', (name, memory, id) => {
    expect(productIdFor(name, memory)).toBe(id);
  });
});

describe('supportedCudaVersions', () => {
  it('lists known versions up to the oldest driver', () => {
    const gpus = [
      ...simulatedInventory([{ productId: 'h100-80g', count: 1, cudaVersion: '12.4' }]),
      ...simulatedInventory([{ productId: 'a100-40g', count: 1, cudaVersion: '12.1' }]),
    ];
    expect(supportedCudaVersions(gpus)).toEqual(['11.8', '12.0', '12.1']);
  });

  it('is empty without GPUs', () => {
    expect(supportedCudaVersions([])).toEqual([]);
  });
});

describe('productCatalog', () => {
  it('has one product per model with total and free counts', () => {
    const gpus = simulatedInventory([
      { productId: 'h100-80g', count: 2, cudaVersion: '12.4' },
      { productId: 'a100-40g', count: 1, cudaVersion: '12.4' },
    ]);
    const busy = new Set([gpus[0]?.uuid ?? '']);
    expect(productCatalog(gpus, [{ id: 'h100-80g', name: 'H100 80GB' }], busy)).toEqual([
      {
        id: 'a100-40g',
        name: 'Simulated a100-40g',
        gpuModel: 'Simulated a100-40g',
        gpuMemoryGB: 40,
        gpusTotal: 1,
        gpusFree: 1,
      },
      {
        id: 'h100-80g',
        name: 'H100 80GB',
        gpuModel: 'Simulated h100-80g',
        gpuMemoryGB: 80,
        gpusTotal: 2,
        gpusFree: 1,
      },
    ]);
  });
});
