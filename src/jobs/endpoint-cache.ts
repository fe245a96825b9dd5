/**
 * The worker routes' lookup of an endpoint by id, remembered for `ttlMs`: every take, result and ping names its
 * endpoint, and a spec read per request would cost more than the job's own queries. An update (a stop, a new
 * maxConcurrent) reaches the worker routes within `ttlMs`.
 */
import type { Endpoint } from '../domain/endpoint.js';
import type { Clock } from '../ports/clock.js';

/** Endpoints remembered at most; the oldest goes first. */
const MAX_ENTRIES = 10_000;

export function cachedEndpoints(
  find: (endpointId: string) => Promise<Endpoint | undefined>,
  options: { clock: Clock; ttlMs: number },
): (endpointId: string) => Promise<Endpoint | undefined> {
  const known = new Map<string, { endpoint: Endpoint | undefined; until: number }>();
  return async (endpointId) => {
    const now = options.clock();
    const hit = known.get(endpointId);
    if (hit && now < hit.until) return hit.endpoint;
    const endpoint = await find(endpointId);
    known.delete(endpointId);
    if (known.size >= MAX_ENTRIES) {
      const oldest = known.keys().next();
      if (!oldest.done) known.delete(oldest.value);
    }
    known.set(endpointId, { endpoint, until: now + options.ttlMs });
    return endpoint;
  };
}
