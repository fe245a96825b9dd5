/**
 * Which live endpoints belong to owners that hold no active admin key: on a single-tenant runtime (local, workers
 * as host processes) their commands would run with Corral's rights, so `corral serve` names them at start.
 */
import type { Store } from '../store/store.js';

export async function endpointsOfNonAdminOwners(
  store: Pick<Store, 'apiKeys' | 'endpoints'>,
): Promise<{ id: string; ownerId: string }[]> {
  const admins = new Set(
    (await store.apiKeys.list()).filter((k) => k.admin && k.revokedAt === null).map((k) => k.ownerId),
  );
  return (await store.endpoints.listAll())
    .filter((e) => !admins.has(e.ownerId))
    .map((e) => ({ id: e.id, ownerId: e.ownerId }));
}
