/**
 * The GPU products endpoints ask for, with free counts: one per inventory GPU model plus configured ones; or, where
 * a scheduler places workers (kubernetes), the products it reports, named as configured.
 */
import { cudaVersionsUpTo, type Gpu, lowerVersion } from './inventory.js';

export interface Product {
  id: string;
  name: string;
  gpuModel: string;
  gpuMemoryGB: number;
  gpusTotal: number;
  gpusFree: number;
}

/** A product described in the config file; it overrides what the inventory says of the same id. */
export interface ConfiguredProduct {
  id: string;
  name?: string;
  gpuModel?: string;
  gpuMemoryGB?: number;
  /** The kubernetes runtime: `label=value` that its nodes carry, or a value of nvidia.com/gpu.product. */
  nodeLabel?: string;
}

/** One product per GPU model in the inventory, plus configured ones; `busy` holds the uuids in use. */
export function productCatalog(
  gpus: Gpu[],
  configured: ConfiguredProduct[],
  busy: ReadonlySet<string>,
): Product[] {
  const byId = new Map<string, Product>();
  for (const gpu of gpus) {
    const product = byId.get(gpu.productId) ?? {
      id: gpu.productId,
      name: gpu.model,
      gpuModel: gpu.model,
      gpuMemoryGB: gpu.memoryGB,
      gpusTotal: 0,
      gpusFree: 0,
    };
    product.gpusTotal += 1;
    if (!busy.has(gpu.uuid)) product.gpusFree += 1;
    byId.set(gpu.productId, product);
  }
  for (const entry of configured) {
    const known = byId.get(entry.id);
    byId.set(entry.id, {
      id: entry.id,
      name: entry.name ?? known?.name ?? entry.id,
      gpuModel: entry.gpuModel ?? known?.gpuModel ?? entry.id,
      gpuMemoryGB: entry.gpuMemoryGB ?? known?.gpuMemoryGB ?? 0,
      gpusTotal: known?.gpusTotal ?? 0,
      gpusFree: known?.gpusFree ?? 0,
    });
  }
  return [...byId.values()].sort((a, b) => a.id.localeCompare(b.id));
}

/** A product as a runtime's scheduler reports it (runtime/types.ts ScheduledProduct). */
export interface ScheduledCount {
  id: string;
  gpuModel?: string;
  gpuMemoryGB?: number;
  gpusTotal: number;
  gpusFree: number;
  /** The most GPUs one of its nodes offers (a worker runs on one node). */
  gpusPerNodeMax?: number;
  cudaVersion?: string;
}

/** The scheduler's products, with the configured names, models and memory where the configuration gives them. */
export function scheduledCatalog(
  scheduled: readonly ScheduledCount[],
  configured: ConfiguredProduct[],
): Product[] {
  const named = new Map(configured.map((p) => [p.id, p]));
  return scheduled.map((p) => {
    const entry = named.get(p.id);
    const model = entry?.gpuModel ?? p.gpuModel ?? p.id;
    return {
      id: p.id,
      name: entry?.name ?? model,
      gpuModel: model,
      gpuMemoryGB: entry?.gpuMemoryGB ?? p.gpuMemoryGB ?? 0,
      gpusTotal: p.gpusTotal,
      gpusFree: p.gpusFree,
    };
  });
}

/**
 * The CUDA versions a worker may ask for where a scheduler places it: every known one up to `configured` (the
 * configuration's), else up to the lowest its GPU products' nodes support, where every product with GPUs says.
 */
export function scheduledCudaVersions(scheduled: readonly ScheduledCount[], configured?: string): string[] {
  if (configured !== undefined) return cudaVersionsUpTo(configured);
  const withGpus = scheduled.filter((p) => p.gpusTotal > 0);
  const versions = withGpus.flatMap((p) => (p.cudaVersion === undefined ? [] : [p.cudaVersion]));
  if (versions.length === 0 || versions.length < withGpus.length) return [];
  return cudaVersionsUpTo(versions.reduce(lowerVersion));
}

/**
 * The GPUs a worker may ask for where a scheduler places it (`maxGPUNum`): the configured range, its maximum bounded
 * by the largest schedulable node's GPUs (a worker is one pod, and a pod runs on one node: 8 on a cluster of 2-GPU
 * nodes would be a pod no scheduler places). Before any node with GPUs is seen (nodes not listed yet, or refused),
 * the configured range as it is.
 */
export function scheduledGpuRange(
  scheduled: readonly ScheduledCount[],
  configured: { min: number; max: number },
): { min: number; max: number } {
  const largest = Math.max(0, ...scheduled.map((p) => p.gpusPerNodeMax ?? 0));
  if (largest === 0) return configured;
  return { min: configured.min, max: Math.max(configured.min, Math.min(configured.max, largest)) };
}
