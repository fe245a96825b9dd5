import { describe, expect, it } from 'vitest';
import type { Node } from './api.js';
import { clusterCatalog, clusterProducts, discoveredProducts } from './cluster-products.js';
import type { Pod } from './objects.js';

/**
 * A node as the API returns it (the Node object of the API reference: metadata.labels, spec, status.capacity and
 * status.allocatable) on a GPU node with NVIDIA's device plugin and GPU feature discovery (GFD 0.15+ writes both
 * the `cuda.runtime-version.*` labels and the older `cuda.runtime.*` ones; `cuda.driver.*` is the driver's version).
 */
function node(
  name: string,
  product: string,
  gpus: string,
  extra: Partial<Node> = {},
  cuda = ['12', '4'],
  memoryMiB = '81559',
): Node {
  return {
    metadata: {
      name,
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'p5.48xlarge',
        'nvidia.com/cuda.driver-version.full': '550.54.15',
        'nvidia.com/cuda.driver-version.major': '550',
        'nvidia.com/cuda.driver.major': '550',
        'nvidia.com/cuda.driver.minor': '54',
        'nvidia.com/cuda.driver.rev': '15',
        'nvidia.com/cuda.runtime-version.major': cuda[0] ?? '',
        'nvidia.com/cuda.runtime-version.minor': cuda[1] ?? '',
        'nvidia.com/cuda.runtime.major': cuda[0] ?? '',
        'nvidia.com/cuda.runtime.minor': cuda[1] ?? '',
        'nvidia.com/gfd.timestamp': '1716800000',
        'nvidia.com/gpu.compute.major': '9',
        'nvidia.com/gpu.compute.minor': '0',
        'nvidia.com/gpu.count': gpus,
        'nvidia.com/gpu.family': 'hopper',
        'nvidia.com/gpu.machine': 'p5.48xlarge',
        'nvidia.com/gpu.memory': memoryMiB,
        'nvidia.com/gpu.present': 'true',
        'nvidia.com/gpu.product': product,
        'nvidia.com/gpu.replicas': '1',
        'nvidia.com/mig.capable': 'true',
        'nvidia.com/mig.strategy': 'single',
      },
      resourceVersion: '4281',
    },
    spec: {
      podCIDR: '10.244.1.0/24',
      providerID: `aws:///us-east-1a/i-${name}`,
      taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }],
    } as Node['spec'],
    status: {
      capacity: {
        cpu: '192',
        'ephemeral-storage': '3750000000Ki',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
        memory: '2113305440Ki',
        'nvidia.com/gpu': gpus,
        pods: '110',
      },
      allocatable: {
        cpu: '191450m',
        'ephemeral-storage': '3455982905117',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
        memory: '2111105888Ki',
        'nvidia.com/gpu': gpus,
        pods: '110',
      },
    },
    ...extra,
  };
}

/** A CPU node: no GPU labels, no nvidia.com/gpu in its resources. */
const cpuNode: Node = {
  metadata: { name: 'cpu-1', labels: { 'kubernetes.io/hostname': 'cpu-1', 'kubernetes.io/os': 'linux' } },
  spec: {},
  status: {
    capacity: { cpu: '16', memory: '65843428Ki', pods: '110' },
    allocatable: { cpu: '15890m', memory: '65228004Ki', pods: '110' },
  },
};

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
      cpuNode,
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
        gpuModel: H100,
        gpuMemoryGB: 80,
        nodes: 2,
        gpusTotal: 16,
        gpusPerNodeMax: 8,
        gpusRequested: 3,
        gpusFree: 13,
        gpusWaiting: 4,
        cudaVersion: '12.2',
      },
    ]);
  });

  it('finds a product by its own label, and by the default label and its id when none is configured', () => {
    const pool = node('a-1', '', '4');
    pool.metadata = { ...pool.metadata, labels: { ...pool.metadata?.labels, 'example.com/pool': 'a100' } };
    const nodes = [pool, node('b-1', 'b200', '8'), cpuNode];
    const [a100, b200, none] = clusterProducts(['a100', 'b200', 'l4'], nodes, [], { products });
    expect(a100).toMatchObject({ nodes: 1, gpusTotal: 4, gpusFree: 4 });
    expect(a100?.gpuModel).toBeUndefined();
    expect(b200).toMatchObject({ nodes: 1, gpusTotal: 8 });
    expect(none).toEqual({
      id: 'l4',
      nodes: 0,
      gpusTotal: 0,
      gpusPerNodeMax: 0,
      gpusRequested: 0,
      gpusFree: 0,
      gpusWaiting: 0,
    });
  });

  it('says the most GPUs one schedulable node has: what one pod of the product can ask for', () => {
    const nodes = [
      node('gpu-1', H100, '2'),
      node('gpu-2', H100, '4'),
      // Cordoned (a drain): its GPUs are no pod's to ask for.
      node('gpu-3', H100, '8', { spec: { unschedulable: true } }),
    ];
    const [h100] = clusterProducts(['h100'], nodes, [], { products });
    expect(h100).toMatchObject({ gpusTotal: 6, gpusPerNodeMax: 4 });
  });

  it('counts a MIG resource when that is the configured one; no CUDA version unless every node says', () => {
    const mig = node('gpu-1', H100, '0');
    mig.status = { allocatable: { 'nvidia.com/mig-1g.10gb': '7' } };
    const unlabelled = node('gpu-2', H100, '0');
    for (const key of Object.keys(unlabelled.metadata?.labels ?? {})) {
      if (key.startsWith('nvidia.com/cuda.runtime')) delete unlabelled.metadata?.labels?.[key];
    }
    const [h100] = clusterProducts(['h100'], [mig, unlabelled], [], {
      products,
      gpuResource: 'nvidia.com/mig-1g.10gb',
    });
    expect(h100?.gpusTotal).toBe(7);
    expect(h100?.cudaVersion).toBeUndefined();
  });

  it('reads the CUDA version from the older cuda.runtime labels alone, never from the driver version', () => {
    const old = node('gpu-1', H100, '8', {}, ['11', '4']);
    delete old.metadata?.labels?.['nvidia.com/cuda.runtime-version.major'];
    delete old.metadata?.labels?.['nvidia.com/cuda.runtime-version.minor'];
    expect(clusterProducts(['h100'], [old], [], { products })[0]?.cudaVersion).toBe('11.4');
  });

  it('never reports fewer than 0 free GPUs', () => {
    const [h100] = clusterProducts(['h100'], [node('gpu-1', H100, '1')], [pod('h100', 2, 'gpu-1')], {
      products,
    });
    expect(h100).toMatchObject({ gpusTotal: 1, gpusRequested: 2, gpusFree: 0 });
  });
});

describe('discoveredProducts', () => {
  it('names each GPU model the nodes carry as Corral names a local GPU, unless a configured product claims it', () => {
    const nodes = [
      node('h-1', H100, '8'),
      node('h-2', H100, '8'),
      node('t4-1', 'Tesla-T4', '1', {}, ['12', '2'], '15360'),
      node('l4-1', 'NVIDIA-L4', '4', {}, ['12', '4'], '23034'),
      cpuNode,
    ];
    expect(discoveredProducts(nodes, { configured: ['h100'], products })).toEqual({
      'l4-24g': { label: 'nvidia.com/gpu.product', value: 'NVIDIA-L4' },
      't4-16g': { label: 'nvidia.com/gpu.product', value: 'Tesla-T4' },
    });
    // Without nvidia.com/gpu.memory (nor a size in the name): the model alone.
    const bare = node('t4-2', 'Tesla-T4', '1');
    delete bare.metadata?.labels?.['nvidia.com/gpu.memory'];
    expect(discoveredProducts([bare], { configured: [] })).toEqual({
      t4: { label: 'nvidia.com/gpu.product', value: 'Tesla-T4' },
    });
    // A configured product of the same id keeps it: the model is left out.
    expect(Object.keys(discoveredProducts(nodes, { configured: ['t4-16g'] }))).toEqual([
      'h100-80g',
      'l4-24g',
    ]);
  });
});

describe('clusterCatalog', () => {
  it('lists configured products first, then discovered ones, with the selectors pods of each use', () => {
    const nodes = [node('h-1', H100, '8'), node('l4-1', 'NVIDIA-L4', '4', {}, ['12', '4'], '23034')];
    const catalog = clusterCatalog(nodes, [pod('l4-24g', 1, 'l4-1')], { configured: ['b200'] });
    expect(catalog.products.map((p) => [p.id, p.gpusTotal, p.gpusFree])).toEqual([
      ['b200', 0, 0],
      ['h100-80g', 8, 8],
      ['l4-24g', 4, 3],
    ]);
    expect(catalog.products[1]).toMatchObject({ gpuModel: H100, gpuMemoryGB: 80, cudaVersion: '12.4' });
    expect(catalog.selectors).toEqual({
      b200: { label: 'nvidia.com/gpu.product', value: 'b200' },
      'h100-80g': { label: 'nvidia.com/gpu.product', value: H100 },
      'l4-24g': { label: 'nvidia.com/gpu.product', value: 'NVIDIA-L4' },
    });
  });
});
