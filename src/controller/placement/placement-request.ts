/**
 * What one pass asks placement (fair-placement.ts) from the controller's records: the pending workers of live
 * endpoints, oldest first, with what their endpoints need, and every worker holding GPUs, with its owner.
 */
import type { Endpoint } from '../../domain/endpoint.js';
import { SCALE_DOWN_RANK } from '../../domain/worker.js';
import type { Gpu } from '../../gpu/inventory.js';
import { isActive, isPlaceable, type ManagedWorker } from '../workers/managed-worker.js';
import type { FairPlacementRequest } from './fair-placement.js';

/** Undefined when no worker waits: nothing to place, nothing to reclaim. */
export function placementRequest(
  workers: readonly ManagedWorker[],
  live: ReadonlyMap<string, Endpoint>,
  gpus: Gpu[],
  allocations: ReadonlyMap<string, string>,
): FairPlacementRequest | undefined {
  const pending = workers
    .filter((w) => isPlaceable(w) && live.has(w.endpointId))
    .sort((a, b) => a.createdAt - b.createdAt);
  if (pending.length === 0) return undefined;
  return {
    gpus,
    allocations,
    holders: workers
      .filter((w) => w.gpuUuids.length > 0)
      .map((w) => ({
        workerId: w.id,
        ownerId: w.ownerId,
        gpuUuids: w.gpuUuids,
        leaving: !isActive(w),
        rank: SCALE_DOWN_RANK[w.state],
        createdAt: w.createdAt,
      })),
    waiting: pending.map((w) => {
      const spec = live.get(w.endpointId)?.spec;
      return {
        workerId: w.id,
        ownerId: w.ownerId,
        gpusNeeded: spec?.workers.gpusPerWorker ?? 0,
        productIds: spec?.productIds ?? [],
        cudaVersion: spec?.workers.cudaVersion ?? 'any',
      };
    }),
  };
}
