/**
 * Max-min fair shares of one GPU product among the owners that want it (pure). Each owner gets what it wants if that
 * is no more than an equal split of what is left; the rest split what remains equally. Shares are whole GPUs: the
 * GPUs an equal split leaves over go one each to the owners holding the most already (then by owner id), so that
 * rounding takes as little as possible from running workers.
 */

export interface OwnerDemand {
  ownerId: string;
  /** GPUs of the product the owner's workers hold now plus those its waiting workers need. */
  wants: number;
  /** GPUs of the product it holds now. */
  holds: number;
}

/** Owner id -> its fair share of `capacity` GPUs. Owners wanting none get none. */
export function fairShares(capacity: number, demands: readonly OwnerDemand[]): Map<string, number> {
  const shares = new Map<string, number>();
  const wanting = demands.filter((d) => d.wants > 0).sort((a, b) => a.wants - b.wants);
  let remaining = Math.max(0, capacity);
  let index = 0;
  // Owners wanting no more than an equal split of what is left get all they want, smallest first.
  for (; index < wanting.length; index++) {
    const demand = wanting[index];
    if (!demand || demand.wants > remaining / (wanting.length - index)) break;
    shares.set(demand.ownerId, demand.wants);
    remaining -= demand.wants;
  }
  const rest = wanting.slice(index);
  if (rest.length === 0) return shares;
  const each = Math.floor(remaining / rest.length);
  let leftOver = remaining - each * rest.length;
  const byHolding = [...rest].sort((a, b) => b.holds - a.holds || a.ownerId.localeCompare(b.ownerId));
  for (const demand of byHolding) {
    const extra = leftOver > 0 ? 1 : 0;
    leftOver -= extra;
    shares.set(demand.ownerId, each + extra);
  }
  return shares;
}
