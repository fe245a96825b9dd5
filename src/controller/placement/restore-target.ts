/**
 * Where a suspended worker restores (pure; docs/workers.md, Idle tiers): onto its own GPUs where none is held by
 * another worker; else, where the runtime can restore a process onto other GPUs (`remaps`), onto free GPUs of the
 * same product with the memory it had recorded; else it waits, as a pending worker does, and where every GPU of its
 * that is busy is held by a frozen worker of another endpoint at rest, those are moved down for it (GPU pressure,
 * oldest idle first). No runtime remaps yet (the driver's `CUcheckpointRestoreArgs.gpuPairs` is not used: a failed
 * restore is final, and a worker's visible devices were fixed at its start), so a restore is onto its own GPUs.
 */

/** One GPU of the inventory, as the decision needs it. */
export interface RestoreGpu {
  uuid: string;
  productId: string;
  memoryGB: number;
}

/** A frozen worker at rest that may be moved down for the restore. */
export interface RestoreHolder {
  endpointId: string;
  /** Since when it is frozen (idle): the oldest goes first. */
  tierSince: number;
}

export interface RestoreTargetInput {
  workerId: string;
  endpointId: string;
  /** The GPUs it was suspended on, in order. */
  own: readonly string[];
  /** The GPU memory it held on each of them, in bytes, where recorded. */
  gpuBytes: Readonly<Record<string, number>>;
  /** The inventory. */
  gpus: readonly RestoreGpu[];
  /** GPU uuid -> the worker holding it now. */
  held: ReadonlyMap<string, string>;
  /** Frozen workers at rest, not moved down yet, by worker id. */
  resting: ReadonlyMap<string, RestoreHolder>;
  /** Whether the runtime can restore a worker onto GPUs other than those it started on. */
  remaps: boolean;
}

export type RestoreTarget =
  | { type: 'own' }
  | { type: 'remap'; pairs: { from: string; to: string }[] }
  | { type: 'wait'; busy: string[]; evict: string[] };

/** Where the worker restores now, or what it waits for (and whom to move down for it). */
export function restoreTarget(input: RestoreTargetInput): RestoreTarget {
  const isFree = (uuid: string) => {
    const holder = input.held.get(uuid);
    return holder === undefined || holder === input.workerId;
  };
  const busy = input.own.filter((uuid) => !isFree(uuid));
  if (busy.length === 0) return { type: 'own' };
  if (input.remaps) {
    const pairs = remapPairs(input, isFree);
    if (pairs) return { type: 'remap', pairs: pairs.filter((p) => p.from !== p.to) };
  }
  return { type: 'wait', busy, evict: evictionsFor(input, busy) };
}

/** Each own GPU onto itself where free, else onto a free GPU of its product big enough; undefined if one has none. */
function remapPairs(
  input: RestoreTargetInput,
  isFree: (uuid: string) => boolean,
): { from: string; to: string }[] | undefined {
  const byUuid = new Map(input.gpus.map((gpu) => [gpu.uuid, gpu]));
  const taken = new Set(input.own.filter(isFree));
  const pairs: { from: string; to: string }[] = [];
  for (const from of input.own) {
    if (isFree(from)) {
      pairs.push({ from, to: from });
      continue;
    }
    const product = byUuid.get(from)?.productId;
    const needs = input.gpuBytes[from] ?? 0;
    const to = input.gpus.find(
      (gpu) =>
        gpu.productId === product &&
        !taken.has(gpu.uuid) &&
        !input.own.includes(gpu.uuid) &&
        isFree(gpu.uuid) &&
        gpu.memoryGB * 1e9 >= needs,
    );
    if (!to || product === undefined) return undefined;
    taken.add(to.uuid);
    pairs.push({ from, to: to.uuid });
  }
  return pairs;
}

/**
 * The frozen workers of other endpoints holding its busy GPUs, oldest idle first; none unless every busy GPU's
 * holder is one (moving some down would free nothing it can restore onto).
 */
function evictionsFor(input: RestoreTargetInput, busy: readonly string[]): string[] {
  const holders = new Set<string>();
  for (const uuid of busy) {
    const holder = input.held.get(uuid);
    const resting = holder === undefined ? undefined : input.resting.get(holder);
    if (holder === undefined || !resting || resting.endpointId === input.endpointId) return [];
    holders.add(holder);
  }
  return [...holders].sort((a, b) => {
    const since = (id: string) => input.resting.get(id)?.tierSince ?? 0;
    return since(a) - since(b) || a.localeCompare(b);
  });
}
