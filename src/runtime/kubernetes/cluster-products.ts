/**
 * GPU products as the cluster has them (issue 12, item 4): per product, the allocatable GPUs of its schedulable
 * nodes (those carrying its node label) and what Corral's pods on them request, and the CUDA version every one of
 * its nodes' drivers supports (the `nvidia.com/cuda.driver.major`/`minor` labels of NVIDIA's GPU feature discovery).
 * Pure: nodes and pods in, numbers out. Other tenants' pods on the nodes are not counted (Corral lists only its own).
 */

import type { Node } from './api.js';
import { labelValue } from './names.js';
import type { Pod } from './objects.js';
import { DEFAULT_GPU_RESOURCE, POD_LABELS, type ProductNodeLabel, productSelector } from './pod-spec.js';
import { parseQuantity } from './quantity.js';

export interface ProductCapacity {
  id: string;
  /** Schedulable nodes carrying the product's label. */
  nodes: number;
  /** Their allocatable GPUs, summed. */
  gpusTotal: number;
  /** GPUs Corral's running or starting pods hold on those nodes. */
  gpusRequested: number;
  /** gpusTotal minus gpusRequested, never below 0 (other tenants' pods are not seen). */
  gpusFree: number;
  /** GPUs Corral's pods of the product wait for (not bound to a node yet). */
  gpusWaiting: number;
  /** The lowest CUDA version the product's nodes' drivers support (`12.4`), where every node says. */
  driverCudaVersion?: string;
}

export const CUDA_DRIVER_LABELS = {
  major: 'nvidia.com/cuda.driver.major',
  minor: 'nvidia.com/cuda.driver.minor',
};

function gpus(quantity: string | undefined): number {
  if (quantity === undefined) return 0;
  const value = parseQuantity(quantity);
  return value === undefined || value < 0 ? 0 : Math.floor(value);
}

function podGpus(pod: Pod, resource: string): number {
  let total = 0;
  for (const container of pod.spec?.containers ?? []) total += gpus(container.resources?.limits?.[resource]);
  return total;
}

/** A pod that holds (or will hold) its GPUs: not finished. A terminating pod holds them until it is gone. */
function holds(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

function cudaVersion(node: Node): string | undefined {
  const major = node.metadata?.labels?.[CUDA_DRIVER_LABELS.major];
  const minor = node.metadata?.labels?.[CUDA_DRIVER_LABELS.minor];
  if (major === undefined || !/^\d+$/.test(major)) return undefined;
  return `${Number(major)}.${minor !== undefined && /^\d+$/.test(minor) ? Number(minor) : 0}`;
}

function lowerVersion(a: string, b: string): string {
  const [aMajor = 0, aMinor = 0] = a.split('.').map(Number);
  const [bMajor = 0, bMinor = 0] = b.split('.').map(Number);
  return aMajor < bMajor || (aMajor === bMajor && aMinor <= bMinor) ? a : b;
}

/**
 * Each product's capacity. `products` maps a product id to its node label (default: DEFAULT_PRODUCT_LABEL = id, as
 * podSpec's node selector); `pods` are Corral's (they carry corral.dev/product).
 */
export function clusterProducts(
  productIds: readonly string[],
  nodes: readonly Node[],
  pods: readonly Pod[],
  options: { products?: Readonly<Record<string, ProductNodeLabel>>; gpuResource?: string },
): ProductCapacity[] {
  const resource = options.gpuResource ?? DEFAULT_GPU_RESOURCE;
  return productIds.map((id) => {
    const [[label, value] = ['', '']] = Object.entries(productSelector(id, options));
    const matching = nodes.filter(
      (n) => n.metadata?.labels?.[label] === value && n.spec?.unschedulable !== true,
    );
    const names = new Set(matching.map((n) => n.metadata?.name ?? ''));
    const ownPods = pods.filter(
      (p) => p.metadata?.labels?.[POD_LABELS.product] === labelValue(id) && holds(p),
    );
    let gpusRequested = 0;
    let gpusWaiting = 0;
    for (const pod of ownPods) {
      const node = pod.spec?.nodeName;
      if (node === undefined || node === '') gpusWaiting += podGpus(pod, resource);
      else if (names.has(node)) gpusRequested += podGpus(pod, resource);
    }
    const gpusTotal = matching.reduce((sum, n) => sum + gpus(n.status?.allocatable?.[resource]), 0);
    const versions = matching.map(cudaVersion);
    const known = versions.filter((v): v is string => v !== undefined);
    const driverCudaVersion =
      known.length > 0 && known.length === versions.length ? known.reduce(lowerVersion) : undefined;
    return {
      id,
      nodes: matching.length,
      gpusTotal,
      gpusRequested,
      gpusFree: Math.max(0, gpusTotal - gpusRequested),
      gpusWaiting,
      ...(driverCudaVersion === undefined ? {} : { driverCudaVersion }),
    };
  });
}
