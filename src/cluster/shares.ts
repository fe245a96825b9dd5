/**
 * What share of a cluster-wide amount this replica holds (pure): the live replicas from the heartbeat rows, this
 * replica's rank among them, and an amount split exactly between them. The API's per-key rate limit is split this
 * way (docs/operations.md, Rate limits across replicas): each replica enforces its share, so the replicas together
 * never admit more than the configured limit, with no database round trip on the request path.
 */

/** How many replicas are live and this one's rank among them (0: the first by id). */
export interface Membership {
  count: number;
  rank: number;
}

/** One process (SQLite), or no heartbeat read yet: the whole amount. */
export const ALONE: Membership = { count: 1, rank: 0 };

/**
 * The live replicas at `now` (the database's clock): those seen within `staleAfterMs`, ranked by id. This replica
 * counts whatever its own row says (it is live: it is asking), so a replica whose first beat has not landed yet
 * still counts itself.
 */
export function membershipOf(
  rows: readonly { id: string; lastSeenAt: number }[],
  self: string,
  now: number,
  staleAfterMs: number,
): Membership {
  const live = new Set(rows.filter((r) => now - r.lastSeenAt <= staleAfterMs).map((r) => r.id));
  live.add(self);
  const ids = [...live].sort();
  return { count: ids.length, rank: ids.indexOf(self) };
}

/**
 * A whole `total` split exactly: `floor(total / count)` each, and one more to each of the `total % count` lowest
 * ranks, so that the shares add up to `total`.
 */
export function integerShare(total: number, m: Membership): number {
  const base = Math.floor(total / m.count);
  return base + (m.rank < total % m.count ? 1 : 0);
}

export interface RateLimit {
  requestsPerSecond: number;
  burst: number;
}

/**
 * This replica's part of a per-key rate limit: the refill rate divided evenly (a rate need not be whole), the
 * burst split as whole requests (integerShare). A burst smaller than the number of replicas would leave some with
 * none, refusing every request they get: each keeps at least one, the only case where the sum exceeds the limit.
 */
export function rateLimitShare(limit: RateLimit, m: Membership): RateLimit {
  if (m.count <= 1) return limit;
  return {
    requestsPerSecond: limit.requestsPerSecond / m.count,
    burst: Math.max(1, integerShare(limit.burst, m)),
  };
}
