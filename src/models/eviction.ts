/**
 * Which cached models to remove to bring the cache under its disk budget: the least recently used first, never one
 * an endpoint names (its next worker would download it again) nor one in use. Pure: it takes plain facts.
 */

export interface EvictionCandidate {
  name: string;
  diskBytes: number;
  lastUsedAt: number;
}

/** The models to remove, in order; fewer than needed when the rest are named (the budget is then exceeded). */
export function modelsToEvict(
  models: EvictionCandidate[],
  budgetBytes: number,
  kept: (name: string) => boolean,
): EvictionCandidate[] {
  let total = models.reduce((sum, model) => sum + model.diskBytes, 0);
  const evicted: EvictionCandidate[] = [];
  const oldestFirst = models.filter((model) => !kept(model.name)).sort((a, b) => a.lastUsedAt - b.lastUsedAt);
  for (const model of oldestFirst) {
    if (total <= budgetBytes) break;
    evicted.push(model);
    total -= model.diskBytes;
  }
  return evicted;
}
