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
    ['NVIDIA GeForce RTX 4090', 24, 'rtx4090-24g'],
    ['NVIDIA RTX A6000', 48, 'rtx-a6000-48g'],
    ['NVIDIA RTX 6000 Ada Generation', 48, 'rtx6000-ada-48g'],
    ['Tesla T4', 16, 't4-16g'],
    ['NVIDIA H200', 141, 'h200-141g'],
  ])('names %s (%i GB) %s', (name, memory, id) => {
    expect(productIdFor(name, memory)).toBe(id);
  });

  // memory.total as nvidia-smi reports it (MiB) on these cards.
  it.each([
    ['NVIDIA H100 80GB HBM3', 81559, 'h100-80g', 80],
    ['NVIDIA H100 PCIe', 81559, 'h100-80g', 80],
    ['NVIDIA H100 NVL', 95830, 'h100-94g', 94],
    ['NVIDIA A100-SXM4-80GB', 81920, 'a100-80g', 80],
    ['NVIDIA A100 80GB PCIe', 81920, 'a100-80g', 80],
    ['NVIDIA A100-SXM4-40GB', 40960, 'a100-40g', 40],
    ['NVIDIA A100-PCIE-40GB', 40960, 'a100-40g', 40],
    ['NVIDIA L4', 23034, 'l4-24g', 24],
    ['NVIDIA H200', 143771, 'h200-141g', 141],
    ['NVIDIA A10', 23028, 'a10-24g', 24],
    ['NVIDIA A10G', 23028, 'a10g-24g', 24],
    ['NVIDIA GeForce RTX 4090', 24564, 'rtx4090-24g', 24],
    ['NVIDIA L40S', 46068, 'l40s-48g', 48],
    ['Tesla T4', 15360, 't4-16g', 16],
    ['Tesla V100-SXM2-16GB', 16160, 'v100-16g', 16],
    ['NVIDIA GH200 480GB', 97871, 'gh200-96g', 96],
    ['NVIDIA Future 1000', 1_000_000, 'future-1000-977g', 977],
  ])('nvidia-smi %s with %i MiB is %s', (name, memoryMiB, id, memoryGB) => {
    const [gpu] = parseNvidiaSmi(`0, GPU-x, ${name}, ${memoryMiB}, 550.54.15\n`, BANNER);
    expect(gpu?.productId).toBe(id);
    expect(gpu?.memoryGB).toBe(memoryGB);
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
