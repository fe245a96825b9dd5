/**
 * GPU placement (pure): which free GPUs each waiting worker gets. Each GPU is held by at most one worker; a worker
 * gets all its GPUs from one product, only on drivers that support its CUDA version, lowest indices first. Workers
 * are placed in the order given (callers order them by priority); one that cannot fit stays pending with a human
 * reason and does not block the ones after it.
 */
import type { EndpointSpec } from '../../domain/endpoint.js';
import { compareVersions, type Gpu } from '../../gpu/inventory.js';

export interface PlacementWorker {
  workerId: string;
  gpusNeeded: number;
  /** Products the worker may run on, in order of preference; empty means any. */
  productIds: string[];
  /** Lowest CUDA version the worker needs from the driver: 'any' (or empty) or e.g. '12.4'. */
  cudaVersion: string;
}

export interface PlacementRequest {
  gpus: Gpu[];
  /** GPU uuid -> the worker holding it. */
  allocations: ReadonlyMap<string, string>;
  workers: PlacementWorker[];
}

export interface PlacedWorker {
  workerId: string;
  gpus: Gpu[];
}

export interface PendingWorker {
  workerId: string;
  /** Human: 'needs 2 GPUs of h100-80g, 1 free'. */
  reason: string;
}

export interface PlacementResult {
  placed: PlacedWorker[];
  pending: PendingWorker[];
}

export function placeWorkers(request: PlacementRequest): PlacementResult {
  const seen = new Set<string>();
  // Free GPUs, lowest index first; a uuid listed twice in the inventory counts once.
  const free = request.gpus
    .filter((gpu) => {
      if (seen.has(gpu.uuid) || request.allocations.has(gpu.uuid)) return false;
      seen.add(gpu.uuid);
      return true;
    })
    .sort((a, b) => a.index - b.index);
  const taken = new Set<string>();
  const placed: PlacedWorker[] = [];
  const pending: PendingWorker[] = [];

  for (const worker of request.workers) {
    const needed = Math.max(0, Math.floor(worker.gpusNeeded));
    if (needed === 0) {
      placed.push({ workerId: worker.workerId, gpus: [] });
      continue;
    }
    const available = free.filter((gpu) => !taken.has(gpu.uuid));
    const choice = choose(worker, needed, available);
    if (choice) {
      for (const gpu of choice) taken.add(gpu.uuid);
      placed.push({ workerId: worker.workerId, gpus: choice });
    } else {
      pending.push({
        workerId: worker.workerId,
        reason: pendingReason(worker, needed, available, request.gpus),
      });
    }
  }
  return { placed, pending };
}

/** Whether the whole inventory, all of it free, could ever hold this worker (false: NO_CAPACITY). */
export function canEverFit(worker: PlacementWorker, gpus: Gpu[]): boolean {
  const needed = Math.max(0, Math.floor(worker.gpusNeeded));
  if (needed === 0) return true;
  const unique = [...new Map(gpus.map((gpu) => [gpu.uuid, gpu])).values()];
  return choose(worker, needed, unique) !== undefined;
}

/**
 * Why workers of this spec can never be placed on `gpus`, all of them free (INSUFFICIENT_GPU's message), or
 * undefined when they can. The controller reports it as the endpoint's state; the gateway refuses requests with it.
 */
export function whyNeverPlaceable(spec: EndpointSpec, gpus: Gpu[]): string | undefined {
  const need = spec.workers.gpusPerWorker;
  const worker = {
    workerId: '',
    gpusNeeded: need,
    productIds: spec.productIds,
    cudaVersion: spec.workers.cudaVersion,
  };
  if (canEverFit(worker, gpus)) return undefined;
  const products = spec.productIds.length > 0 ? ` of ${spec.productIds.join(' or ')}` : '';
  return `each worker needs ${need} GPU(s)${products}; this server has ${gpus.length} GPU(s) in all`;
}

export function cudaSatisfies(gpu: Gpu, cudaVersion: string): boolean {
  if (cudaVersion === '' || cudaVersion === 'any') return true;
  return gpu.cudaVersion !== '' && compareVersions(gpu.cudaVersion, cudaVersion) >= 0;
}

/** Products to try, in order: the worker's own preference, or (any) products by their lowest free GPU index. */
function candidateProducts(worker: PlacementWorker, available: Gpu[]): string[] {
  if (worker.productIds.length > 0) return worker.productIds;
  return [...new Set(available.map((gpu) => gpu.productId))];
}

/** `available` is sorted by index, so the first `needed` matches are the lowest indices. */
function choose(worker: PlacementWorker, needed: number, available: Gpu[]): Gpu[] | undefined {
  const sorted = [...available].sort((a, b) => a.index - b.index);
  for (const productId of candidateProducts(worker, sorted)) {
    const matching = sorted.filter(
      (gpu) => gpu.productId === productId && cudaSatisfies(gpu, worker.cudaVersion),
    );
    if (matching.length >= needed) return matching.slice(0, needed);
  }
  return undefined;
}

function plural(n: number): string {
  return `${n} GPU${n === 1 ? '' : 's'}`;
}

function pendingReason(worker: PlacementWorker, needed: number, available: Gpu[], inventory: Gpu[]): string {
  const cuda =
    worker.cudaVersion === '' || worker.cudaVersion === 'any' ? '' : ` with CUDA ${worker.cudaVersion}+`;
  const products =
    worker.productIds.length > 0 ? worker.productIds : [...new Set(inventory.map((gpu) => gpu.productId))];
  const freeOf = (productId: string) =>
    available.filter((gpu) => gpu.productId === productId && cudaSatisfies(gpu, worker.cudaVersion)).length;
  const existing = (productId: string) =>
    inventory.filter((gpu) => gpu.productId === productId && cudaSatisfies(gpu, worker.cudaVersion)).length;

  if (products.length === 0) return `needs ${plural(needed)}${cuda}, this server has none`;
  if (worker.productIds.length === 1 && products[0] !== undefined) {
    const productId = products[0];
    const total = existing(productId);
    if (total === 0) return `needs ${plural(needed)} of ${productId}${cuda}, this server has none`;
    if (total < needed)
      return `needs ${plural(needed)} of ${productId}${cuda}, this server has only ${total}`;
    return `needs ${plural(needed)} of ${productId}${cuda}, ${freeOf(productId)} free`;
  }
  const what = worker.productIds.length > 0 ? `one of ${products.join(', ')}` : 'one product';
  const counts = products.map((productId) => `${productId} ${freeOf(productId)}`).join(', ');
  return `needs ${plural(needed)} of ${what}${cuda}, free: ${counts}`;
}
