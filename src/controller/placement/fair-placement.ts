/**
 * Placement by fair share (pure). When GPUs are short, a waiting worker of an owner under its max-min fair share of a
 * product (fair-share.ts) is placed before one of an owner that would go above it, and the latter waits while the
 * former does ("held back"). When an owner under its share waits and another holds more than its share, workers
 * of that owner are named to drain (those not serving yet, then the newest, first; while it is above its share), so that the freed
 * GPUs go to the waiting owner. Placement itself (which GPUs) is placement.ts's.
 */
import type { Gpu } from '../../gpu/inventory.js';
import { fairShares } from './fair-share.js';
import {
  canEverFit,
  cudaSatisfies,
  type PendingWorker,
  type PlacedWorker,
  type PlacementWorker,
  placeWorkers,
} from './placement.js';

export interface FairWorker extends PlacementWorker {
  ownerId: string;
}

/** A worker holding GPUs now. */
export interface GpuHolder {
  workerId: string;
  ownerId: string;
  gpuUuids: readonly string[];
  /** Draining, stopped or failed: its GPUs free up soon and count for no one's share. */
  leaving: boolean;
  /** Lower goes first when GPUs are reclaimed (SCALE_DOWN_RANK: not serving yet before serving). */
  rank: number;
  createdAt: number;
}

export interface FairPlacementRequest {
  gpus: Gpu[];
  /** GPU uuid -> the worker holding it (placement never hands these out). */
  allocations: ReadonlyMap<string, string>;
  holders: readonly GpuHolder[];
  /** Waiting workers, oldest first. */
  waiting: FairWorker[];
}

export interface Reclaim {
  workerId: string;
  reason: string;
}

export interface FairPlacementResult {
  placed: PlacedWorker[];
  pending: PendingWorker[];
  /** Workers to drain and remove so that an owner under its fair share gets GPUs. */
  reclaim: Reclaim[];
}

/** Per product: how many GPUs, and each owner's holding and fair share. */
interface Product {
  id: string;
  capacity: number;
  holds: Map<string, number>;
  shares: Map<string, number>;
}

export function placeFairly(request: FairPlacementRequest): FairPlacementResult {
  // Nothing to share: workers that need no GPU (the common case of a big pass) are placed as they are.
  if (request.waiting.every((w) => needOf(w) === 0))
    return { ...placeWorkers({ ...request, workers: request.waiting }), reclaim: [] };
  const inventory = [...new Map(request.gpus.map((gpu) => [gpu.uuid, gpu])).values()];
  const productOf = new Map(inventory.map((gpu) => [gpu.uuid, gpu.productId]));
  // Per worker, once (a pass may hold tens of thousands of waiting workers, most of them alike).
  const kinds = new Map<string, { fits: boolean; accepts: string[] }>();
  const kindOf = (w: FairWorker) => {
    const key = `${needOf(w)}|${w.cudaVersion}|${w.productIds.join(',')}`;
    let kind = kinds.get(key);
    if (!kind) {
      kind = { fits: needOf(w) > 0 && canEverFit(w, inventory), accepts: acceptedProducts(w, inventory) };
      kinds.set(key, kind);
    }
    return kind;
  };
  const fits = (w: FairWorker) => kindOf(w).fits;
  const acceptsOf = (w: FairWorker) => kindOf(w).accepts;
  const products = productsOf(request, inventory, productOf, fits, acceptsOf);
  const share = (productId: string, ownerId: string) => products.get(productId)?.shares.get(ownerId) ?? 0;

  // Oldest first, each owner's waiting workers are within its share until their GPUs would take it above.
  const projected = new Counts();
  for (const [productId, p] of products) for (const [owner, n] of p.holds) projected.add(owner, productId, n);
  const within: { worker: FairWorker; level: number }[] = [];
  const above: FairWorker[] = [];
  for (const worker of request.waiting) {
    const need = needOf(worker);
    const productId = fits(worker)
      ? acceptsOf(worker).find((id) => projected.get(worker.ownerId, id) + need <= share(id, worker.ownerId))
      : undefined;
    if (fits(worker) && productId === undefined) {
      above.push(worker);
      continue;
    }
    // How much of its share the owner has before this worker: the least served owners' workers go first.
    let level = 0;
    if (productId !== undefined) {
      level = projected.get(worker.ownerId, productId) / share(productId, worker.ownerId);
      projected.add(worker.ownerId, productId, need);
    }
    within.push({ worker, level });
  }

  const ordered = within.sort((a, b) => a.level - b.level).map((w) => w.worker);
  const first = placeWorkers({ gpus: request.gpus, allocations: request.allocations, workers: ordered });
  const taken = new Map(request.allocations);
  for (const { workerId, gpus } of first.placed) for (const gpu of gpus) taken.set(gpu.uuid, workerId);
  const byId = new Map(request.waiting.map((w) => [w.workerId, w]));
  const waitingWithin = first.pending.flatMap((p) => {
    const worker = byId.get(p.workerId);
    return worker && fits(worker) ? [worker] : [];
  });
  // Products an owner under its share waits for: no one above its share takes them meanwhile.
  const blocked = new Set(waitingWithin.flatMap(acceptsOf));
  const free = new Set(above.filter((w) => !acceptsOf(w).some((id) => blocked.has(id))));
  const second = placeWorkers({ gpus: request.gpus, allocations: taken, workers: [...free] });

  const placedNow = new Set([...first.placed, ...second.placed].flatMap((p) => p.gpus.map((g) => g.uuid)));
  const soon = soonFree(request, inventory, taken, placedNow);
  const reclaim = reclaimFor(waitingWithin, acceptsOf, products, request.holders, productOf, new Map(soon));
  const pending: PendingWorker[] = [];
  for (const p of first.pending) {
    const worker = byId.get(p.workerId);
    const contested =
      worker && fits(worker) && acceptsOf(worker).find((id) => othersHold(products.get(id), worker.ownerId));
    const product = contested ? products.get(contested) : undefined;
    pending.push({
      workerId: p.workerId,
      reason: worker && product ? waitingReason(worker, product, taken, inventory, soon) : p.reason,
    });
  }
  for (const p of second.pending) {
    const worker = byId.get(p.workerId);
    // Shares matter only where other owners want the product too.
    const shared = worker && [...(products.get(acceptsOf(worker)[0] ?? '')?.shares.keys() ?? [])].length > 1;
    pending.push({
      workerId: p.workerId,
      reason: worker && shared ? `${p.reason}; ${shareNote(worker)}` : p.reason,
    });
  }
  for (const worker of above.filter((w) => !free.has(w))) {
    pending.push({
      workerId: worker.workerId,
      reason: `held back: ${shareNote(worker)}; workers of owners below their share go first`,
    });
  }
  return { placed: [...first.placed, ...second.placed], pending, reclaim };

  function shareNote(worker: FairWorker): string {
    const productId = acceptsOf(worker)[0] ?? '';
    const p = products.get(productId);
    const holds = p?.holds.get(worker.ownerId) ?? 0;
    const fair = share(productId, worker.ownerId);
    const where = holds > fair ? 'is above' : holds === fair ? 'is at' : 'would go above';
    return `owner ${worker.ownerId} ${where} its fair share of ${productId} (holds ${holds}, share ${fair} of ${p?.capacity ?? 0})`;
  }
}

function needOf(worker: PlacementWorker): number {
  return Math.max(0, Math.floor(worker.gpusNeeded));
}

/** Products of the inventory the worker may run on (with its CUDA version), in its order of preference. */
function acceptedProducts(worker: PlacementWorker, inventory: Gpu[]): string[] {
  const usable = new Set(
    inventory.filter((g) => cudaSatisfies(g, worker.cudaVersion)).map((g) => g.productId),
  );
  const wanted = worker.productIds.length > 0 ? worker.productIds : [...usable].sort();
  return wanted.filter((id) => usable.has(id));
}

/** Owner -> product -> GPUs. */
class Counts {
  readonly #counts = new Map<string, number>();

  get(ownerId: string, productId: string): number {
    return this.#counts.get(`${ownerId}\u0000${productId}`) ?? 0;
  }

  add(ownerId: string, productId: string, n: number): void {
    this.#counts.set(`${ownerId}\u0000${productId}`, this.get(ownerId, productId) + n);
  }
}

function productsOf(
  request: FairPlacementRequest,
  inventory: Gpu[],
  productOf: ReadonlyMap<string, string>,
  fits: (w: FairWorker) => boolean,
  acceptsOf: (w: FairWorker) => string[],
): Map<string, Product> {
  const products = new Map<string, Product>();
  const product = (id: string) => {
    let p = products.get(id);
    if (!p) {
      p = { id, capacity: 0, holds: new Map(), shares: new Map() };
      products.set(id, p);
    }
    return p;
  };
  for (const gpu of inventory) product(gpu.productId).capacity += 1;
  for (const holder of request.holders) {
    if (holder.leaving) continue;
    for (const uuid of holder.gpuUuids) {
      const id = productOf.get(uuid);
      if (id !== undefined) bump(product(id).holds, holder.ownerId, 1);
    }
  }
  // What each owner wants of a product: what it holds plus what its waiting workers that may use it need.
  const wants = new Map<string, Map<string, number>>();
  for (const [id, p] of products) wants.set(id, new Map(p.holds));
  for (const worker of request.waiting) {
    if (!fits(worker)) continue;
    for (const id of acceptsOf(worker)) bump(wants.get(id) ?? new Map(), worker.ownerId, needOf(worker));
  }
  for (const [id, p] of products) {
    const demands = [...(wants.get(id) ?? new Map<string, number>())].map(([ownerId, n]) => ({
      ownerId,
      wants: n,
      holds: p.holds.get(ownerId) ?? 0,
    }));
    p.shares = fairShares(p.capacity, demands);
  }
  return products;
}

function bump(map: Map<string, number>, key: string, n: number): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

function othersHold(product: Product | undefined, ownerId: string): boolean {
  return [...(product?.holds ?? [])].some(([owner, n]) => owner !== ownerId && n > 0);
}

/**
 * Product -> GPUs free now or soon: neither held nor placed in this pass, or held by a worker that is leaving or by
 * none (a removal, or a create under way for a worker that is gone).
 */
function soonFree(
  request: FairPlacementRequest,
  inventory: Gpu[],
  taken: ReadonlyMap<string, string>,
  placedNow: ReadonlySet<string>,
): Map<string, number> {
  const staying = new Set(request.holders.filter((h) => !h.leaving).map((h) => h.workerId));
  const spare = new Map<string, number>();
  for (const gpu of inventory) {
    if (placedNow.has(gpu.uuid)) continue;
    const holder = taken.get(gpu.uuid);
    if (holder === undefined || !staying.has(holder)) bump(spare, gpu.productId, 1);
  }
  return spare;
}

/** Which workers of owners above their share go, so that each waiting owner under its share gets what it needs. */
function reclaimFor(
  waiting: FairWorker[],
  acceptsOf: (w: FairWorker) => string[],
  products: Map<string, Product>,
  holders: readonly GpuHolder[],
  productOf: ReadonlyMap<string, string>,
  spare: Map<string, number>,
): Reclaim[] {
  const reclaim: Reclaim[] = [];
  const gone = new Set<string>();
  const holds = new Map([...products].map(([id, p]) => [id, new Map(p.holds)]));
  const byOwner = new Map<string, GpuHolder[]>();
  for (const holder of holders) {
    if (holder.leaving || holder.gpuUuids.length === 0) continue;
    const list = byOwner.get(holder.ownerId) ?? [];
    list.push(holder);
    byOwner.set(holder.ownerId, list);
  }
  for (const list of byOwner.values()) list.sort((a, b) => a.rank - b.rank || b.createdAt - a.createdAt);
  for (const worker of waiting) {
    const need = needOf(worker);
    const candidates = acceptsOf(worker);
    const coming = candidates.find((id) => (spare.get(id) ?? 0) >= need);
    if (coming !== undefined) {
      spare.set(coming, (spare.get(coming) ?? 0) - need);
      continue;
    }
    for (const productId of candidates) {
      const product = products.get(productId);
      const held = holds.get(productId);
      if (!product || !held) continue;
      const excess = (owner: string) => (held.get(owner) ?? 0) - (product.shares.get(owner) ?? 0);
      const owners = [...held.keys()]
        .filter((owner) => owner !== worker.ownerId && excess(owner) > 0)
        .sort((a, b) => excess(b) - excess(a) || a.localeCompare(b));
      let deficit = need - (spare.get(productId) ?? 0);
      const chosen: { holder: GpuHolder; owner: string; gpus: number; heldBefore: number }[] = [];
      const left = new Map(owners.map((owner) => [owner, excess(owner)]));
      for (const owner of owners) {
        const victims = (byOwner.get(owner) ?? []).filter(
          (h) => !gone.has(h.workerId) && h.gpuUuids.every((u) => productOf.get(u) === productId),
        );
        for (const holder of victims) {
          const gpus = holder.gpuUuids.length;
          if (deficit <= 0) break;
          // Above its share: it may go below by what one worker holds (a 2-GPU worker over a share of 3), or the
          // waiting owner would get nothing at all.
          if ((left.get(owner) ?? 0) <= 0) break;
          left.set(owner, (left.get(owner) ?? 0) - gpus);
          chosen.push({ holder, owner, gpus, heldBefore: held.get(owner) ?? 0 });
          deficit -= gpus;
        }
      }
      if (deficit > 0) continue;
      for (const { holder, owner, gpus, heldBefore } of chosen) {
        gone.add(holder.workerId);
        held.set(owner, (held.get(owner) ?? 0) - gpus);
        const fair = product.shares.get(owner) ?? 0;
        reclaim.push({
          workerId: holder.workerId,
          reason: `making room for owner ${worker.ownerId}: owner ${owner} holds ${heldBefore} ${productId} GPUs, above its fair share of ${fair} of ${product.capacity}`,
        });
      }
      spare.set(productId, -deficit);
      break;
    }
  }
  return reclaim;
}

/** "waiting for 1 GPU of h100-80g: all 8 held (owner a: 6, above its fair share of 4; owner b: 2)". */
function waitingReason(
  worker: FairWorker,
  product: Product,
  taken: ReadonlyMap<string, string>,
  inventory: Gpu[],
  soon: ReadonlyMap<string, number>,
): string {
  const need = needOf(worker);
  const free = inventory.filter((g) => g.productId === product.id && !taken.has(g.uuid)).length;
  const owners = [...product.holds]
    .filter(([, n]) => n > 0)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([owner, n]) => {
      const fair = product.shares.get(owner) ?? 0;
      return n > fair ? `owner ${owner}: ${n}, above its fair share of ${fair}` : `owner ${owner}: ${n}`;
    });
  const held = free === 0 ? `all ${product.capacity} held` : `${free} free of ${product.capacity}`;
  const freeing = (soon.get(product.id) ?? 0) - free;
  const coming = freeing > 0 ? `; ${freeing} being freed` : '';
  return `waiting for ${need} GPU${need === 1 ? '' : 's'} of ${product.id}: ${held} (${owners.join('; ')})${coming}`;
}
