import { canEverFit } from '../controller/placement.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Gpu } from '../gpu/inventory.js';

/**
 * The controller's INSUFFICIENT_GPU rule (canEverFit, and the same message), for the gateway: it refuses requests,
 * and rejects queued ones, the moment it sees a spec that can never be placed on these GPUs, not a pass later when
 * the endpoint's status says so.
 */
export function neverPlaceableOn(gpus: Gpu[]): (endpoint: Endpoint) => string | undefined {
  return ({ spec }) => {
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
  };
}
