/**
 * GPU products as the cluster has them (issue 12, item 4). Pure: nodes and pods in, products out.
 *
 * - Which products: the configured ones (each found on its nodes by its node label, default
 *   `nvidia.com/gpu.product={id}`), plus one per GPU model NVIDIA's GPU feature discovery labels nodes with
 *   (`nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3` with `nvidia.com/gpu.memory=81559` MiB -> `h100-80g`, named as
 *   Corral names a local GPU) that no configured product claims.
 * - Per product: its schedulable nodes' allocatable GPUs (the configured resource, default `nvidia.com/gpu`), summed
 *   and the most on one node (what one pod can ask for), what
 *   Corral's pods on them hold, what Corral's pods wait for, and the CUDA version every one of its nodes' drivers
 *   supports: GPU feature discovery's `nvidia.com/cuda.runtime-version.major`/`minor` labels, or the older
 *   `nvidia.com/cuda.runtime.major`/`minor` (`nvidia.com/cuda.driver.*` are the driver's own version, 550.54.15, not
 *   a CUDA version). Other tenants' pods on the nodes are not seen (Corral lists only its own).
 */
import { marketedMemoryGB, productIdFor } from '../../gpu/inventory.js';
import type { Node } from './api.js';
import { labelValue } from './names.js';
import type { Pod } from './objects.js';
import {
  DEFAULT_GPU_RESOURCE,
  DEFAULT_PRODUCT_LABEL,
  POD_LABELS,
  type ProductNodeLabel,
  productSelector,
} from './pod-spec.js';
import { parseQuantity } from './quantity.js';

export interface ProductCapacity {
  id: string;
  /** The node label value its nodes carry (`NVIDIA-H100-80GB-HBM3`), where they carry the default label. */
  gpuModel?: string;
  /** From `nvidia.com/gpu.memory` (MiB), as the GPU is sold (80, not 79.6); where every node says the same. */
  gpuMemoryGB?: number;
  /** Schedulable nodes carrying the product's label. */
  nodes: number;
  /** Their allocatable GPUs, summed. */
  gpusTotal: number;
  /** The most one of them has: no pod of the product can ask for more (a pod runs on one node). */
  gpusPerNodeMax: number;
  /** GPUs Corral's running or starting pods hold on those nodes. */
  gpusRequested: number;
  /** gpusTotal minus gpusRequested, never below 0 (other tenants' pods are not seen). */
  gpusFree: number;
  /** GPUs Corral's pods of the product wait for (not bound to a node yet). */
  gpusWaiting: number;
  /** The lowest CUDA version the product's nodes' drivers support (`12.4`), where every node says. */
  cudaVersion?: string;
}

/** GPU feature discovery's labels Corral reads (docs/kubernetes.md). */
export const GFD_LABELS = {
  memoryMiB: 'nvidia.com/gpu.memory',
  /** The highest CUDA version the driver supports: `cuda.runtime-version.*` since GFD 0.15, `cuda.runtime.*` before. */
  cudaMajor: ['nvidia.com/cuda.runtime-version.major', 'nvidia.com/cuda.runtime.major'],
  cudaMinor: ['nvidia.com/cuda.runtime-version.minor', 'nvidia.com/cuda.runtime.minor'],
} as const;

export interface ClusterProductOptions {
  /** Configured products, in order: id -> its node label (absent: DEFAULT_PRODUCT_LABEL=id). */
  configured: readonly string[];
  products?: Readonly<Record<string, ProductNodeLabel>>;
  gpuResource?: string;
}

export interface ClusterCatalog {
  /** Configured products first, in their order, then discovered ones by id. */
  products: ProductCapacity[];
  /** Every product's node label, configured and discovered: what a pod of the product selects. */
  selectors: Record<string, ProductNodeLabel>;
}

function gpus(quantity: string | undefined): number {
  if (quantity === undefined) return 0;
  const value = parseQuantity(quantity);
  return value === undefined || value < 0 ? 0 : Math.floor(value);
}

/** The nodes that can take a worker with GPUs now: schedulable, with allocatable GPUs of the resource. */
export function gpuNodes(nodes: readonly Node[], resource = DEFAULT_GPU_RESOURCE): Node[] {
  return nodes.filter((n) => schedulable(n) && gpus(n.status?.allocatable?.[resource]) > 0);
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

function firstLabel(node: Node, keys: readonly string[]): string | undefined {
  for (const key of keys) {
    const value = node.metadata?.labels?.[key];
    if (value !== undefined && /^\d+$/.test(value)) return value;
  }
  return undefined;
}

function cudaVersion(node: Node): string | undefined {
  const major = firstLabel(node, GFD_LABELS.cudaMajor);
  if (major === undefined) return undefined;
  const minor = firstLabel(node, GFD_LABELS.cudaMinor);
  return `${Number(major)}.${minor === undefined ? 0 : Number(minor)}`;
}

function lowerVersion(a: string, b: string): string {
  const [aMajor = 0, aMinor = 0] = a.split('.').map(Number);
  const [bMajor = 0, bMinor = 0] = b.split('.').map(Number);
  return aMajor < bMajor || (aMajor === bMajor && aMinor <= bMinor) ? a : b;
}

function memoryGB(model: string, node: Node): number | undefined {
  const mib = Number(node.metadata?.labels?.[GFD_LABELS.memoryMiB]);
  return Number.isFinite(mib) && mib > 0 ? marketedMemoryGB(model, mib) : undefined;
}

/** A node the scheduler may place a new pod on (not cordoned). */
export const schedulable = (node: Node) => node.spec?.unschedulable !== true;

/**
 * Products of GPU models the nodes carry (DEFAULT_PRODUCT_LABEL) that no configured product claims: the id Corral
 * gives such a GPU on a machine of its own (`h100-80g`); where two models would get one id, or a configured
 * product has it already, the model is left out (configure a product for it).
 */
export function discoveredProducts(
  nodes: readonly Node[],
  options: Pick<ClusterProductOptions, 'configured' | 'products'>,
): Record<string, ProductNodeLabel> {
  const claimed = new Set(
    options.configured.map((id) => {
      const [[label, value] = ['', '']] = Object.entries(productSelector(id, options));
      return `${label}=${value}`;
    }),
  );
  const taken = new Set(options.configured);
  const models = new Map<string, Node>();
  for (const node of nodes) {
    const model = node.metadata?.labels?.[DEFAULT_PRODUCT_LABEL];
    if (model === undefined || model === '' || claimed.has(`${DEFAULT_PRODUCT_LABEL}=${model}`)) continue;
    if (!models.has(model)) models.set(model, node);
  }
  const found: Record<string, ProductNodeLabel> = {};
  for (const [model, node] of [...models].sort(([a], [b]) => a.localeCompare(b))) {
    const memory = memoryGB(model, node) ?? Number(/(\d+)\s*GB/i.exec(model)?.[1] ?? 0);
    // Without a memory size, the model alone (`t4`).
    const id = memory > 0 ? productIdFor(model, memory) : productIdFor(model, 0).replace(/-0g$/, '');
    if (taken.has(id)) continue;
    taken.add(id);
    found[id] = { label: DEFAULT_PRODUCT_LABEL, value: model };
  }
  return found;
}

/** Every product, configured and discovered, with its capacity; `pods` are Corral's (they carry corral.dev/product). */
export function clusterCatalog(
  nodes: readonly Node[],
  pods: readonly Pod[],
  options: ClusterProductOptions,
): ClusterCatalog {
  const discovered = discoveredProducts(nodes, options);
  const selectors: Record<string, ProductNodeLabel> = { ...discovered };
  for (const id of options.configured) {
    const [[label, value] = ['', '']] = Object.entries(productSelector(id, options));
    selectors[id] = { label, value };
  }
  const ids = [...options.configured, ...Object.keys(discovered).sort()];
  return {
    products: clusterProducts(ids, nodes, pods, {
      products: selectors,
      ...(options.gpuResource === undefined ? {} : { gpuResource: options.gpuResource }),
    }),
    selectors,
  };
}

/** Each product's capacity; `products` maps a product id to its node label (default DEFAULT_PRODUCT_LABEL=id). */
export function clusterProducts(
  productIds: readonly string[],
  nodes: readonly Node[],
  pods: readonly Pod[],
  options: { products?: Readonly<Record<string, ProductNodeLabel>>; gpuResource?: string },
): ProductCapacity[] {
  const resource = options.gpuResource ?? DEFAULT_GPU_RESOURCE;
  // Corral's pods by product, once (a pass may ask with thousands of pods).
  const podsOf = new Map<string, Pod[]>();
  for (const pod of pods) {
    if (!holds(pod)) continue;
    const product = pod.metadata?.labels?.[POD_LABELS.product] ?? '';
    const list = podsOf.get(product) ?? [];
    list.push(pod);
    podsOf.set(product, list);
  }
  return productIds.map((id) => {
    const [[label, value] = ['', '']] = Object.entries(productSelector(id, options));
    const matching = nodes.filter((n) => n.metadata?.labels?.[label] === value && schedulable(n));
    const names = new Set(matching.map((n) => n.metadata?.name ?? ''));
    let gpusRequested = 0;
    let gpusWaiting = 0;
    for (const pod of podsOf.get(labelValue(id)) ?? []) {
      const node = pod.spec?.nodeName;
      if (node === undefined || node === '') gpusWaiting += podGpus(pod, resource);
      else if (names.has(node)) gpusRequested += podGpus(pod, resource);
    }
    const perNode = matching.map((n) => gpus(n.status?.allocatable?.[resource]));
    const gpusTotal = perNode.reduce((sum, n) => sum + n, 0);
    const versions = matching.map(cudaVersion);
    const known = versions.filter((v): v is string => v !== undefined);
    const cuda =
      known.length > 0 && known.length === versions.length ? known.reduce(lowerVersion) : undefined;
    const model = label === DEFAULT_PRODUCT_LABEL ? value : undefined;
    const memories = new Set(matching.map((n) => memoryGB(model ?? '', n)));
    const [memory] = memories;
    return {
      id,
      ...(model === undefined || model === id ? {} : { gpuModel: model }),
      ...(memories.size === 1 && memory !== undefined ? { gpuMemoryGB: memory } : {}),
      nodes: matching.length,
      gpusTotal,
      gpusPerNodeMax: Math.max(0, ...perNode),
      gpusRequested,
      gpusFree: Math.max(0, gpusTotal - gpusRequested),
      gpusWaiting,
      ...(cuda === undefined ? {} : { cudaVersion: cuda }),
    };
  });
}
