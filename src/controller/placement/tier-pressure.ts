/**
 * GPU and memory pressure on idle workers (pure; docs/workers.md, Idle tiers): which frozen workers give up their
 * GPUs to waiting workers of other endpoints (oldest idle first, no more than needed), and which suspended workers
 * are stopped when their host memory is over its budget (oldest first). Never a running worker.
 */

/** A frozen worker at rest, holding GPUs. */
export interface RestingHolder {
  workerId: string;
  endpointId: string;
  gpuUuids: readonly string[];
  /** Since when it is frozen (idle): the oldest goes first. */
  tierSince: number;
}

export interface EvictionInput {
  /** Workers placement left waiting for GPUs this pass. */
  waiting: readonly { workerId: string; endpointId: string }[];
  holders: readonly RestingHolder[];
  /** GPUs on their way to being free already (workers evicted by an earlier pass): counted as free. */
  comingFree?: ReadonlySet<string>;
  /**
   * What placement would do were these GPUs free too: waiting worker id -> the GPUs it would get. Pure (the
   * placement policy over plain records).
   */
  placedWith: (freed: ReadonlySet<string>) => ReadonlyMap<string, readonly string[]>;
}

export interface Eviction {
  workerId: string;
  /** The waiting worker that gets its GPUs. */
  forWorkerId: string;
  forEndpointId: string;
}

/**
 * The frozen workers of other endpoints to move down so that waiting workers can be placed: taken oldest idle first
 * until no more waiting workers would be placed, then those whose GPUs no waiting worker would get are dropped,
 * newest first. Each is named with the waiting worker its GPUs go to.
 */
export function chooseEvictions(input: EvictionInput): Eviction[] {
  const waitingEndpoints = new Set(input.waiting.map((w) => w.endpointId));
  const endpointOf = new Map(input.waiting.map((w) => [w.workerId, w.endpointId]));
  const candidates = input.holders
    .filter((h) => !waitingEndpoints.has(h.endpointId) || waitingEndpoints.size > 1)
    .sort((a, b) => a.tierSince - b.tierSince || a.workerId.localeCompare(b.workerId));
  if (candidates.length === 0 || input.waiting.length === 0) return [];
  const base = new Set(input.comingFree ?? []);
  const freedBy = (chosen: readonly RestingHolder[]) =>
    new Set([...base, ...chosen.flatMap((h) => h.gpuUuids)]);
  const placedCount = (chosen: readonly RestingHolder[]) => input.placedWith(freedBy(chosen)).size;
  const before = placedCount([]);
  let chosen: RestingHolder[] = [];
  let best = before;
  for (const holder of candidates) {
    const next = [...chosen, holder];
    chosen = next;
    best = Math.max(best, placedCount(next));
    if (best - before >= input.waiting.length) break;
  }
  if (best === before) return [];
  // Keep no more than needed: newest first, one whose absence places as many is dropped.
  for (const holder of [...chosen].reverse()) {
    const without = chosen.filter((h) => h !== holder);
    if (placedCount(without) >= best) chosen = without;
  }
  const placed = input.placedWith(freedBy(chosen));
  const evictions: Eviction[] = [];
  for (const holder of chosen) {
    const gets = [...placed].find(
      ([workerId, gpus]) =>
        endpointOf.get(workerId) !== holder.endpointId && gpus.some((uuid) => holder.gpuUuids.includes(uuid)),
    );
    if (gets)
      evictions.push({
        workerId: holder.workerId,
        forWorkerId: gets[0],
        forEndpointId: endpointOf.get(gets[0]) ?? '',
      });
  }
  return evictions;
}

/** A suspended worker and the host memory its GPU state takes. */
export interface SuspendedHolder {
  workerId: string;
  hostBytes: number;
  tierSince: number;
}

/** The suspended workers to stop, oldest first, until the rest fit in `budgetBytes`. */
export function overBudget(suspended: readonly SuspendedHolder[], budgetBytes: number): string[] {
  let total = suspended.reduce((sum, s) => sum + s.hostBytes, 0);
  const stop: string[] = [];
  for (const s of [...suspended].sort((a, b) => a.tierSince - b.tierSince)) {
    if (total <= budgetBytes) break;
    stop.push(s.workerId);
    total -= s.hostBytes;
  }
  return stop;
}
