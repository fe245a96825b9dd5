/**
 * Which endpoints name which models, read from the store's endpoints (issue 34): the models the cache keeps from
 * eviction, and the endpoints `GET models` shows beside each cached model.
 */
import type { ModelUser } from '../api/routes/models.js';
import type { Endpoint } from '../domain/endpoint.js';

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
