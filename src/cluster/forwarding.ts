/**
 * Where a gateway that holds no slot of an endpoint's workers sends the endpoint's requests (pure): to the live
 * replica that holds the most of those workers' slots (`shareOf` under the membership in force), ties to the
 * smallest id, among those whose gateway URL is known. Nowhere (undefined) when this replica holds a slot, when
 * the endpoint has no routable worker (a wake from zero queues locally), or when no other replica holds one
 * (docs/operations.md, "One worker's slots across replicas").
 */
import { shareOf } from './slot-shares.js';

export interface ForwardQuestion {
  self: string;
  /** The live replicas' ids, sorted (the membership in force); undefined: none known (shares expired). */
  members: readonly string[] | undefined;
  /** Each other replica's gateway URL, by id (a replica missing here is never chosen). */
  gatewayUrls: ReadonlyMap<string, string>;
  /** The endpoint's routable workers and this replica's share of each now. */
  workers: readonly { id: string; slots: number }[];
  /** The endpoint's maxConcurrent: every worker's slots. */
  capacity: number;
}

export interface ForwardTarget {
  replicaId: string;
  url: string;
}

export function forwardTarget(q: ForwardQuestion): ForwardTarget | undefined {
  if (q.workers.length === 0 || q.members === undefined) return undefined;
  for (const worker of q.workers) if (worker.slots > 0) return undefined;
  let best: ForwardTarget | undefined;
  let bestSlots = 0;
  for (const member of q.members) {
    if (member === q.self) continue;
    const url = q.gatewayUrls.get(member);
    if (url === undefined) continue;
    let slots = 0;
    for (const worker of q.workers) slots += shareOf(q.capacity, q.members, member, worker.id);
    // Members are sorted: a later one with as many slots loses the tie.
    if (slots > bestSlots) {
      best = { replicaId: member, url };
      bestSlots = slots;
    }
  }
  return best;
}
