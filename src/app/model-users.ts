/**
 * Which endpoints name which models, read from the store's endpoints (issue 34): the models the caches keep from
 * eviction (this machine's, and the GPU nodes' through their agents), and the endpoints `GET models` shows beside each
 * cached model.
 */
import type { ModelUser } from '../api/routes/models.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Store } from '../store/store.js';

/** The models (`org/name`) any endpoint names, every owner's: never evicted. */
export async function namedModels(store: Pick<Store, 'endpoints'>): Promise<ReadonlySet<string>> {
  return new Set(modelUsers(await store.endpoints.listAll(), null).keys());
}

/** Model name -> the endpoints naming it, of one owner, or (null) of every owner. */
export function modelUsers(
  endpoints: readonly Endpoint[],
  ownerId: string | null,
): ReadonlyMap<string, ModelUser[]> {
  const users = new Map<string, ModelUser[]>();
  for (const endpoint of endpoints) {
    if (ownerId !== null && endpoint.ownerId !== ownerId) continue;
    for (const model of endpoint.spec.models) {
      const list = users.get(model.name) ?? [];
      if (!list.some((user) => user.endpointId === endpoint.id))
        list.push({ endpointId: endpoint.id, endpointName: endpoint.spec.name });
      users.set(model.name, list);
    }
  }
  return users;
}
