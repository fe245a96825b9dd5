/** The GPU products endpoints ask for: one per inventory GPU model, plus configured ones, with free counts. */
import type { Gpu } from './inventory.js';

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
