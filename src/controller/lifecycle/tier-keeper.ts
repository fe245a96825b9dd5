/**
 * The controller's idle tiers in a pass (docs/workers.md, Idle tiers): carries out the plan's freeze, thaw, restore
 * and suspend actions (tier-moves.ts), restores a suspended worker onto its own GPUs once they are free (else it
 * waits with the reason a pending worker would give, and frozen workers of other endpoints holding them are moved
 * down for it: placement/restore-target.ts), moves frozen workers of other endpoints down for workers that wait for
 * their GPUs (placement/tier-pressure.ts), and stops the oldest suspended workers past the host memory budget.
 */
import type { Endpoint } from '../../domain/endpoint.js';
import type { IdleTiers } from '../../runtime/idle-tiers.js';
import { type Eviction, evictionEvents, forWhom } from '../placement/eviction-events.js';
import { type RestoreHolder, restoreTarget } from '../placement/restore-target.js';
import { chooseEvictions, overBudget } from '../placement/tier-pressure.js';
import type { WorkerPlacement } from '../placement/worker-placement.js';
import type { PlanAction } from '../planner.js';
import { isResting, type ManagedWorker } from '../workers/managed-worker.js';
import type { WorkerBook } from '../workers/worker-book.js';
import { TierMoves, type TierMovesOptions } from './tier-moves.js';
import type { WorkerLifecycle } from './worker-lifecycle.js';

export interface TierKeeperOptions extends Omit<TierMovesOptions, 'tiers'> {
  tiers: IdleTiers;
  book: WorkerBook;
  lifecycle: WorkerLifecycle;
  placement: WorkerPlacement;
  /** GPU uuid -> the worker holding it now. */
  heldGpus: () => Map<string, string>;
  /** Host memory suspended workers' GPU state may take, in bytes; past it the oldest is stopped. */
  suspendBudgetBytes: number;
}

type TierAction = Extract<PlanAction, { type: 'freeze' | 'thaw' | 'restore' | 'suspend' }>;

export function isTierAction(action: PlanAction): action is TierAction {
  return (
    action.type === 'freeze' ||
    action.type === 'thaw' ||
    action.type === 'restore' ||
    action.type === 'suspend'
  );
}

export class TierKeeper {
  readonly #o: TierKeeperOptions;
  readonly #moves: TierMoves;

  constructor(options: TierKeeperOptions) {
    this.#o = options;
    this.#moves = new TierMoves(options);
  }

  get suspendable(): boolean {
    return this.#moves.suspendable;
  }

  apply(action: TierAction, record: ManagedWorker, live: ReadonlyMap<string, Endpoint>): void {
    if (action.type === 'freeze') this.#moves.freeze(record);
    else if (action.type === 'thaw') this.#moves.thaw(record);
    else if (action.type === 'suspend') this.#moves.suspend(record, action.reason);
    else this.#restore(record, live);
  }

  /**
   * Onto its own GPUs, once none is held; meanwhile it stays suspended with the reason a pending worker gives, and
   * frozen workers of other endpoints that hold them are moved down for it, as for a pending worker.
   */
  #restore(record: ManagedWorker, live: ReadonlyMap<string, Endpoint>): void {
    const target = restoreTarget({
      workerId: record.id,
      endpointId: record.endpointId,
      own: record.suspendedOn?.gpuUuids ?? [],
      gpuBytes: record.suspendedOn?.gpuBytes ?? {},
      gpus: [],
      held: this.#o.heldGpus(),
      resting: this.#restingHolders(),
      // No runtime restores a worker onto other GPUs (restore-target.ts says why): never a remap.
      remaps: false,
    });
    if (target.type !== 'wait') {
      this.#moves.restore(record);
      return;
    }
    const { busy } = target;
    for (const workerId of target.evict) {
      const holder = this.#o.book.get(workerId);
      if (holder) this.#evict(holder, { endpointId: record.endpointId, neededBy: 'suspended' }, live);
    }
    // A pending worker would start on a free GPU of the product; this one restores only onto the GPUs it started on.
    const reason =
      this.#waitingReason(record, live) ??
      `waiting for its GPU ${busy.join(', ')} to be free (a suspended worker restores onto the GPUs it started on)`;
    const since = record.message.split('; waiting')[0] ?? record.message;
    const message = `${since}; ${reason.startsWith('waiting') ? reason : `waiting: ${reason}`}`;
    this.#o.lifecycle.move(record, { state: 'suspended', message });
  }

  /** What placement would say of a pending worker of this endpoint now (the same text a pending worker shows). */
  #waitingReason(record: ManagedWorker, live: ReadonlyMap<string, Endpoint>): string | undefined {
    const probe: ManagedWorker = { ...record, state: 'pending', gpuUuids: [], inRuntime: false };
    const others = [...this.#o.book.all()].filter((w) => w.id !== record.id);
    const result = this.#o.placement.place([...others, probe], live, () => this.#o.heldGpus());
    return result?.pending.find((p) => p.workerId === record.id)?.reason;
  }

  /**
   * Workers placement left waiting: frozen workers of other endpoints holding the GPUs they need are suspended
   * (where the runtime can and their endpoint keeps suspended workers) or stopped, oldest idle first.
   */
  relieve(
    all: readonly ManagedWorker[],
    waiting: readonly { workerId: string }[],
    live: ReadonlyMap<string, Endpoint>,
  ): void {
    const { book } = this.#o;
    const holders = all
      .filter(
        (w) => w.state === 'frozen' && isResting(w) && w.gpuUuids.length > 0 && w.evictedFor === undefined,
      )
      .map((w) => ({
        workerId: w.id,
        endpointId: w.endpointId,
        gpuUuids: w.gpuUuids,
        tierSince: w.tierSince ?? 0,
      }));
    if (holders.length === 0) return;
    const comingFree = new Set(all.filter((w) => w.evictedFor !== undefined).flatMap((w) => w.gpuUuids));
    const waitingWorkers = waiting.flatMap((p) => {
      const w = book.get(p.workerId);
      return w ? [{ workerId: w.id, endpointId: w.endpointId }] : [];
    });
    const evictions = chooseEvictions({
      waiting: waitingWorkers,
      holders,
      comingFree,
      placedWith: (freed) => {
        const held = new Map([...this.#o.heldGpus()].filter(([uuid]) => !freed.has(uuid)));
        const result = this.#o.placement.place(all, live, () => held);
        return new Map((result?.placed ?? []).map((p) => [p.workerId, p.gpus.map((g) => g.uuid)]));
      },
    });
    for (const { workerId, forEndpointId } of evictions) {
      const record = book.get(workerId);
      if (record) this.#evict(record, { endpointId: forEndpointId, neededBy: 'pending' }, live);
    }
  }

  /** Frozen workers at rest, not moved down yet: those a restore may have moved down for it. */
  #restingHolders(): Map<string, RestoreHolder> {
    const resting = new Map<string, RestoreHolder>();
    for (const w of this.#o.book.all()) {
      if (w.state === 'frozen' && isResting(w) && w.evictedFor === undefined)
        resting.set(w.id, { endpointId: w.endpointId, tierSince: w.tierSince ?? 0 });
    }
    return resting;
  }

  /**
   * A frozen worker moved down for a worker of the endpoint `needed`: suspended where it can be and its endpoint
   * keeps them, else stopped; both endpoints' events say so (placement/eviction-events.ts).
   */
  #evict(
    record: ManagedWorker,
    needed: { endpointId: string; neededBy: Eviction['neededBy'] },
    live: ReadonlyMap<string, Endpoint>,
  ): void {
    const evicted = live.get(record.endpointId);
    const neededEndpoint = live.get(needed.endpointId);
    const keepsSuspended = (evicted?.spec.workers.keepSuspendedSeconds ?? 0) > 0;
    const outcome = this.suspendable && keepsSuspended ? 'suspended' : 'stopped';
    const eviction =
      evicted && neededEndpoint
        ? ({
            workerId: record.id,
            evicted,
            gpuUuids: record.gpuUuids,
            needed: neededEndpoint,
            neededBy: needed.neededBy,
            outcome,
            at: this.#o.clock(),
          } as const)
        : undefined;
    const whom = eviction ? forWhom(eviction) : 'a worker of another endpoint';
    record.evictedFor = whom;
    if (outcome === 'suspended') this.#moves.suspend(record, 'GPU pressure', whom);
    else this.#o.lifecycle.drainAndRemove(record, `stopped to free its GPUs for ${whom}`);
    if (eviction)
      for (const [endpointId, event] of evictionEvents(eviction))
        this.#o.lifecycle.pushEvent(endpointId, event);
  }

  /** Suspended workers past the host memory budget are stopped, oldest first. */
  keepBudget(all: readonly ManagedWorker[]): void {
    const suspended = all
      .filter((w) => w.state === 'suspended' && isResting(w))
      .map((w) => ({
        workerId: w.id,
        hostBytes: Object.values(w.suspendedOn?.gpuBytes ?? {}).reduce((a, b) => a + b, 0),
        tierSince: w.tierSince ?? 0,
      }));
    const gb = (this.#o.suspendBudgetBytes / 1e9).toFixed(1);
    for (const workerId of overBudget(suspended, this.#o.suspendBudgetBytes)) {
      const record = this.#o.book.get(workerId);
      if (record)
        this.#o.lifecycle.drainAndRemove(
          record,
          `stopped: suspended workers' host memory is over its budget of ${gb} GB`,
        );
    }
  }
}
