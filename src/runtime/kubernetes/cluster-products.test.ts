import { describe, expect, it } from 'vitest';
import type { Node } from './api.js';
import { clusterProducts } from './cluster-products.js';
import type { Pod } from './objects.js';

/** A node as the API returns it with NVIDIA's device plugin and GPU feature discovery. */
function node(
  name: string,
  product: string,
  gpus: string,
  extra: Partial<Node> = {},
  cuda = ['12', '4'],
): Node {
  return {
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'nvidia.com/gpu.product': product,
        'nvidia.com/gpu.count': gpus,
        'nvidia.com/cuda.driver.major': cuda[0] ?? '',
        'nvidia.com/cuda.driver.minor': cuda[1] ?? '',
      },
    },
    spec: {},
    status: {
      capacity: { cpu: '224', memory: '2113305440Ki', 'nvidia.com/gpu': gpus, pods: '110' },
      allocatable: { cpu: '223500m', memory: '2111105888Ki', 'nvidia.com/gpu': gpus, pods: '110' },
    },
    ...extra,
  };
}

function pod(product: string, gpus: number, nodeName: string | undefined, phase = 'Running'): Pod {
  return {
    metadata: { name: `corral-w-${Math.random()}`, labels: { 'corral.dev/product': product } },
    spec: {
      containers: [
        { name: 'worker', resources: { limits: { 'nvidia.com/gpu': String(gpus), memory: '80Gi' } } },
      ],
      ...(nodeName ? { nodeName } : {}),
    },
    status: { phase },
  };
}

const H100 = 'NVIDIA-H100-80GB-HBM3';
const products = { h100: { value: H100 }, a100: { label: 'example.com/pool', value: 'a100' } };

describe('clusterProducts', () => {
  it('sums allocatable GPUs of the product nodes and what Corral pods hold on them', () => {
    const nodes = [
      node('gpu-1', H100, '8'),
      node('gpu-2', H100, '8', {}, ['12', '2']),
      node('gpu-3', H100, '8', { spec: { unschedulable: true } }),
      node('cpu-1', '', '0'),
    ];
    const pods = [
      pod('h100', 2, 'gpu-1'),
      pod('h100', 1, 'gpu-2'),
      pod('h100', 4, undefined, 'Pending'),
      pod('h100', 1, 'gpu-1', 'Failed'),
      pod('h100', 8, 'gpu-3'),
    ];
    expect(clusterProducts(['h100'], nodes, pods, { products })).toEqual([
      {
        id: 'h100',
        nodes: 2,
        gpusTotal: 16,
        gpusRequested: 3,
        gpusFree: 13,
        gpusWaiting: 4,
        driverCudaVersion: '12.2',
      },
    ]);
  });

  it('finds a product by its own label, and by the default label and its id when none is configured', () => {
    const pool = node('a-1', '', '4');
    pool.metadata = { ...pool.metadata, labels: { ...pool.metadata?.labels, 'example.com/pool': 'a100' } };
    const nodes = [pool, node('b-1', 'b200', '8')];
    const [a100, b200, none] = clusterProducts(['a100', 'b200', 'l4'], nodes, [], { products });
    expect(a100).toMatchObject({ nodes: 1, gpusTotal: 4, gpusFree: 4 });
    expect(b200).toMatchObject({ nodes: 1, gpusTotal: 8 });
    expect(none).toEqual({ id: 'l4', nodes: 0, gpusTotal: 0, gpusRequested: 0, gpusFree: 0, gpusWaiting: 0 });
  });

  it('counts a MIG resource when that is the configured one; no CUDA version unless every node says', () => {
    const mig = node('gpu-1', H100, '0');
    mig.status = { allocatable: { 'nvidia.com/mig-1g.10gb': '7' } };
    const unlabelled = node('gpu-2', H100, '0');
    delete unlabelled.metadata?.labels?.['nvidia.com/cuda.driver.major'];
    const [h100] = clusterProducts(['h100'], [mig, unlabelled], [], {
      products,
      gpuResource: 'nvidia.com/mig-1g.10gb',
    });
    expect(h100?.gpusTotal).toBe(7);
    expect(h100?.driverCudaVersion).toBeUndefined();
  });

  it('never reports fewer than 0 free GPUs', () => {
    const [h100] = clusterProducts(['h100'], [node('gpu-1', H100, '1')], [pod('h100', 2, 'gpu-1')], {
      products,
    });
    expect(h100).toMatchObject({ gpusTotal: 1, gpusRequested: 2, gpusFree: 0 });
  });
});
