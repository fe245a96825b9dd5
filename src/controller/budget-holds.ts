/**
 * An owner past its budget (domain/budget.ts): which of an endpoint's workers may still start. Up to minNum of its
 * current revision may (started ones count first); every other worker not started yet stays pending, held, its
 * message saying BUDGET_EXCEEDED, and is not placed until the budget allows. Workers already started are never
 * touched: running work goes on. Also what the plan's holds change on the workers (applied by
 * placement/start-holds.ts). Pure.
 */
import { awaitsPlacement, type ManagedWorker } from './workers/managed-worker.js';

export interface BudgetHolds {
  /** Workers waiting for placement that stay waiting. */
  held: string[];
  /** Of the workers to add, how many may start (the rest are added held). */
  addFree: number;
  addHeld: number;
}

/**
 * `current`: the endpoint's active workers of its current revision; `toAdd`: the new workers the plan wants.
 * Without `exceeded`, nothing is held.
 */
export function budgetHolds(
  current: readonly ManagedWorker[],
  minWorkers: number,
  toAdd: number,
  exceeded: boolean,
): BudgetHolds {
  if (!exceeded) return { held: [], addFree: toAdd, addHeld: 0 };
  const waiting = current.filter(awaitsPlacement).sort((a, b) => a.createdAt - b.createdAt);
  const started = current.length - waiting.length;
  const mayStart = Math.max(0, minWorkers - started);
  const held = waiting.slice(mayStart).map((w) => w.id);
  const addFree = Math.min(toAdd, Math.max(0, mayStart - waiting.length));
  return { held, addFree, addHeld: toAdd - addFree };
}

/** A new pending worker, held with `message` when its owner's budget is spent (the plan's `add` with `held`). */
export function heldIf(record: ManagedWorker, message: string | undefined): ManagedWorker {
  return message === undefined ? record : { ...record, budgetHeld: true, message };
}

/** A worker whose hold changes: held with `message`, or let go to placement (`message` undefined). */
export interface HoldChange {
  worker: ManagedWorker;
  message: string | undefined;
}

/**
 * `holds`: worker id -> the message of the plan's hold. Those it names that are not held with that message yet are
 * held with it; any other held worker of the endpoint is let go (the budget allows it again, or minNum does).
 */
export function holdChanges(
  workers: readonly ManagedWorker[],
  holds: ReadonlyMap<string, string>,
): HoldChange[] {
  const changes: HoldChange[] = [];
  for (const worker of workers) {
    const message = holds.get(worker.id);
    if (message !== undefined && (worker.budgetHeld !== true || worker.message !== message))
      changes.push({ worker, message });
    else if (message === undefined && worker.budgetHeld === true)
      changes.push({ worker, message: undefined });
  }
  return changes;
}
