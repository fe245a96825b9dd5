/**
 * Who places waiting workers on GPUs, as the controller sees it (pure). Two policies:
 *
 * - `inventoryPlacement`: Corral does, on its own GPU inventory (`--gpus`, or the machine's): fair shares among
 *   owners, which GPUs each worker gets, why one waits, which workers drain for an owner under its share
 *   (fair-placement.ts, placement.ts).
 * - `schedulerPlacement`: the runtime's scheduler does (kubernetes). Every waiting worker starts at once, holding no
 *   GPU of Corral's; the scheduler decides where it runs and says why it waits (the worker's message then is the
 *   scheduler's). Corral only picks, among the endpoint's products, the first whose free GPUs fit it.
 */
import type { Endpoint, EndpointSpec } from '../../domain/endpoint.js';
import type { Gpu } from '../../gpu/inventory.js';
import type { GpuScheduler } from '../../runtime/types.js';
import { isPlaceable, type ManagedWorker } from '../workers/managed-worker.js';
import { type FairPlacementResult, placeFairly } from './fair-placement.js';
import { whyNeverPlaceable } from './placement.js';
import { placementRequest } from './placement-request.js';

/** What placement decided: `placed` start now (with these GPUs, for that product where the policy picked one). */
export interface PlacementDecision extends Omit<FairPlacementResult, 'placed'> {
  placed: { workerId: string; gpus: Gpu[]; productId?: string }[];
}

export interface WorkerPlacement {
  /**
   * Places the pending workers of live endpoints; `held` (GPU uuid -> worker) is asked only by a policy that
   * hands out GPUs. Undefined when no worker waits.
   */
  place(
    workers: readonly ManagedWorker[],
    live: ReadonlyMap<string, Endpoint>,
    held: () => ReadonlyMap<string, string>,
  ): PlacementDecision | undefined;
  /** Why workers of this spec can never run (INSUFFICIENT_GPU's message), or undefined. */
  whyNeverPlaceable(spec: EndpointSpec): string | undefined;
}

/** Corral places workers on `gpus`, by fair share. */
export function inventoryPlacement(gpus: Gpu[]): WorkerPlacement {
  return {
    place(workers, live, held) {
      const request = placementRequest(workers, live, gpus, held());
      return request ? placeFairly(request) : undefined;
    },
    whyNeverPlaceable: (spec) => whyNeverPlaceable(spec, gpus),
  };
}

/**
 * The runtime's scheduler places workers. A worker of an endpoint that names products goes to the first of them,
 * in its order, with enough free GPUs for it as the scheduler last reported (counting the workers placed before it
 * in this pass), else to its first: the scheduler then says why it waits. One that names none goes to the product
 * with the most free GPUs, or none for a worker without GPUs (any node).
 */
export function schedulerPlacement(scheduler: GpuScheduler): WorkerPlacement {
  return {
    place(workers, live) {
      const pending = workers
        .filter((w) => isPlaceable(w) && live.has(w.endpointId))
        .sort((a, b) => a.createdAt - b.createdAt);
      if (pending.length === 0) return undefined;
      let free: Map<string, number> | undefined;
      const placed = pending.map((worker) => {
        const spec = live.get(worker.endpointId)?.spec;
        const need = spec?.workers.gpusPerWorker ?? 0;
        const wanted = spec?.productIds ?? [];
        if (need === 0 && wanted.length === 0) return { workerId: worker.id, gpus: [], productId: '' };
        free ??= new Map(scheduler.products().map((p) => [p.id, p.gpusFree]));
        const freeOf = (id: string) => free?.get(id) ?? 0;
        const candidates =
          wanted.length > 0 ? wanted : [...free.keys()].sort((a, b) => freeOf(b) - freeOf(a));
        const productId = candidates.find((id) => freeOf(id) >= need) ?? candidates[0] ?? '';
        free.set(productId, freeOf(productId) - need);
        return { workerId: worker.id, gpus: [], productId };
      });
      return { placed, pending: [], reclaim: [] };
    },
    whyNeverPlaceable: () => undefined,
  };
}
