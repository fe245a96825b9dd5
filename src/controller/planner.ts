/**
 * The pure half of a pass for one endpoint: the actions (add, remove, fail) that bring its workers towards what
 * is desired, from startup deadlines, scale-down victims and the rolling replacement of an old revision.
 * controller.ts applies them.
 */
import type { Endpoint } from '../domain/endpoint.js';
import { healthCheckLabel } from '../domain/health-path.js';
import { isInTier, SCALE_DOWN_RANK, type WorkerErrorCode } from '../domain/worker.js';
import { budgetHolds } from './budget-holds.js';
import type { CrashRecord } from './crashes/backoff.js';
import { notFoundFailure } from './health/not-found-verdict.js';
import { isActive, isResting, type ManagedWorker } from './workers/managed-worker.js';

/** A frozen or suspended worker with a runtime call under way (tier-moves.ts). */
function inTierCall(worker: ManagedWorker): boolean {
  return isInTier(worker.state) && worker.tierCall !== undefined;
}

export interface EndpointPlanInput {
  endpoint: Endpoint;
  /** Every record of this endpoint's workers. */
  workers: ManagedWorker[];
  /** What scaling asks for (minNum until the autoscaler says otherwise); clamped here. */
  desiredWorkers: number;
  crash: CrashRecord;
  now: number;
  startupTimeoutMs: number;
  /**
   * How long a worker that had passed its health check may stay unhealthy (out of routing, holding its GPUs) before
   * it is failed UNHEALTHY and replaced.
   */
  unhealthyTimeoutMs: number;
  /** Workers to remove first when scaling down (the autoscaler's idle ones); the rest by SCALE_DOWN_RANK. */
  preferredVictims?: string[];
  /**
   * Workers with a request in flight or a job held or being taken (the autoscaler's word): no scale-down picks one,
   * so that a job a worker has just taken is never cut off by a scale-down that crossed its take (issue 29).
   */
  busyWorkers?: readonly string[];
  /**
   * Frozen or suspended workers that strict-resume requests wait for (gateway/affinity.ts, through the autoscaler):
   * woken first, also beyond the target. A resting worker in `busyWorkers` (strict requests wait for it) stays in
   * its tier rather than moving down.
   */
  wakeWorkers?: readonly string[];
  /** What the runtime offers for idle workers (absent: nothing: a scaled-down worker is removed). */
  tiers?: { freeze: boolean; suspend: boolean };
  /**
   * The owner's budget is spent (budget-holds.ts): the BUDGET_EXCEEDED sentence its waiting workers show. No worker
   * beyond minNum starts; those the plan adds, and those waiting for placement, stay held.
   */
  budgetExceeded?: string;
}

export type PlanAction =
  /**
   * New workers of the current revision; they start `pending` until placement gives them GPUs. `held`: they stay
   * pending, not placed, with this message (the owner's budget is spent).
   */
  | { type: 'add'; count: number; held?: string }
  /** A worker waiting for placement stays waiting with this message (the owner's budget is spent). */
  | { type: 'hold'; workerId: string; message: string }
  /** Drain then remove the worker (container and record). */
  | { type: 'remove'; workerId: string; reason: string }
  /** Mark failed with a stable code and remove its container; counts towards crash-loop backoff. */
  | {
      type: 'fail';
      workerId: string;
      code: WorkerErrorCode;
      message: string;
      /** The next worker of this revision would fail the same: the endpoint fails at once (backoff.ts). */
      final?: true;
    }
  /** An idle worker scaled down: frozen (out of routing, its GPUs kept) rather than removed. */
  | { type: 'freeze'; workerId: string }
  /** A frozen worker wakes (thawed), or a suspended one (restored), in place of a new worker. */
  | { type: 'thaw'; workerId: string }
  | { type: 'restore'; workerId: string }
  /** A frozen worker past keepFrozen moves down: its GPU state to host memory, its GPUs free. */
  | { type: 'suspend'; workerId: string; reason: string };

/** Decides, for one endpoint, what brings its workers towards what is desired. Pure. */
export function planEndpoint(input: EndpointPlanInput): PlanAction[] {
  const { endpoint, workers, now } = input;
  if (endpoint.desired === 'stopped') {
    return workers
      .filter((w) => w.state !== 'failed')
      .map((w) => ({ type: 'remove' as const, workerId: w.id, reason: 'endpoint stopped' }));
  }
  const actions: PlanAction[] = [];
  const timedOut = new Set<string>();
  for (const worker of workers) {
    const notFound = isProvingHealth(worker)
      ? notFoundFailure(worker, endpoint.spec.health.path, now)
      : undefined;
    if (notFound !== undefined) {
      timedOut.add(worker.id);
      actions.push({
        type: 'fail',
        workerId: worker.id,
        code: 'HEALTH_TIMEOUT',
        message: notFound,
        final: true,
      });
    } else if (hasMissedStartupDeadline(worker, now, input.startupTimeoutMs)) {
      timedOut.add(worker.id);
      actions.push({
        type: 'fail',
        workerId: worker.id,
        code: 'HEALTH_TIMEOUT',
        message: healthTimeoutMessage(worker, healthCheckLabel(endpoint.spec), input.startupTimeoutMs),
      });
    } else if (hasStayedUnhealthy(worker, now, input.unhealthyTimeoutMs)) {
      timedOut.add(worker.id);
      actions.push({
        type: 'fail',
        workerId: worker.id,
        code: 'UNHEALTHY',
        message: unhealthyMessage(worker, input.unhealthyTimeoutMs),
      });
    }
  }
  // A worker whose tier call is under way (a wake, or a freeze or suspend a request may have come during) counts
  // as capacity: the pass after its call wakes it rather than starting a new worker meanwhile.
  const active = workers.filter((w) => (isActive(w) || inTierCall(w)) && !timedOut.has(w.id));
  const current = active.filter((w) => w.revision === endpoint.revision);
  const old = active.filter((w) => w.revision !== endpoint.revision);
  const { minWorkers, maxWorkers } = endpoint.spec.workers;
  const target = Math.max(minWorkers, Math.min(maxWorkers, input.desiredWorkers));

  const resting = workers.filter(isResting);
  const deficit = Math.max(0, target - current.length);
  const woken = wakeResting(resting, endpoint.revision, deficit, new Set(input.wakeWorkers));
  actions.push(...woken);
  const toAdd = now >= input.crash.retryAt ? Math.max(0, deficit - woken.length) : 0;
  const budget = input.budgetExceeded;
  const holds = budgetHolds(current, minWorkers, toAdd, budget !== undefined);
  if (holds.addFree > 0) actions.push({ type: 'add', count: holds.addFree });
  if (budget !== undefined) {
    if (holds.addHeld > 0) actions.push({ type: 'add', count: holds.addHeld, held: budget });
    for (const workerId of holds.held) actions.push({ type: 'hold', workerId, message: budget });
  }
  const busy = new Set(input.busyWorkers);
  if (current.length > target) {
    const removable = current.filter(
      (w) => isActive(w) && !busy.has(w.id) && w !== keptToProveHealth(current, target),
    );
    const count = Math.min(removable.length, current.length - target);
    for (const victim of pickVictims(removable, count, input.preferredVictims)) {
      actions.push(
        mayFreeze(victim, endpoint, input.tiers)
          ? { type: 'freeze', workerId: victim.id }
          : { type: 'remove', workerId: victim.id, reason: 'scaled down' },
      );
    }
  }
  const wokenIds = new Set(woken.map((a) => a.workerId));
  actions.push(
    ...moveDownResting(
      // One of an old revision goes as before: it is never woken for a request.
      resting.filter((w) => !wokenIds.has(w.id) && (!busy.has(w.id) || w.revision !== endpoint.revision)),
      endpoint,
      now,
      input.tiers,
    ),
  );
  actions.push(...retireOldRevision(old, current, target));
  return actions;
}

/** A scaled-down worker is frozen where its endpoint keeps frozen workers and it serves (running and healthy). */
function mayFreeze(worker: ManagedWorker, endpoint: Endpoint, tiers: EndpointPlanInput['tiers']): boolean {
  return (
    tiers?.freeze === true &&
    endpoint.spec.workers.keepFrozenSeconds > 0 &&
    worker.state === 'running' &&
    worker.healthy &&
    worker.revision === endpoint.revision
  );
}

/**
 * The warmest resting workers of the current revision take the place of new ones: frozen first (a thaw), the most
 * recently frozen first, then suspended (a restore). Those `wanted` (strict-resume requests wait for them) wake
 * first, and whatever the deficit.
 */
function wakeResting(
  resting: ManagedWorker[],
  revision: number,
  deficit: number,
  wanted: ReadonlySet<string>,
): Extract<PlanAction, { type: 'thaw' | 'restore' }>[] {
  const candidates = resting.filter((w) => w.revision === revision);
  const count = Math.max(deficit, candidates.filter((w) => wanted.has(w.id)).length);
  if (count === 0) return [];
  const rank = (w: ManagedWorker) => (wanted.has(w.id) ? -1 : w.state === 'frozen' ? 0 : 1);
  return candidates
    .sort((a, b) => rank(a) - rank(b) || (b.tierSince ?? 0) - (a.tierSince ?? 0))
    .slice(0, count)
    .map((w) => ({ type: w.state === 'frozen' ? ('thaw' as const) : ('restore' as const), workerId: w.id }));
}

/**
 * Resting workers past their tier's time move down: frozen past keepFrozen are suspended (where the runtime can and
 * keepSuspended is set) or removed; suspended past keepSuspended are removed; those of an old revision go.
 */
function moveDownResting(
  resting: ManagedWorker[],
  endpoint: Endpoint,
  now: number,
  tiers: EndpointPlanInput['tiers'],
): PlanAction[] {
  const { keepFrozenSeconds, keepSuspendedSeconds } = endpoint.spec.workers;
  const actions: PlanAction[] = [];
  for (const w of resting) {
    const since = w.tierSince ?? now;
    if (w.revision !== endpoint.revision) {
      actions.push({ type: 'remove', workerId: w.id, reason: 'replaced by a new revision' });
    } else if (w.state === 'frozen' && now - since >= keepFrozenSeconds * 1000) {
      const reason = `frozen for ${keepFrozenSeconds} s`;
      actions.push(
        tiers?.suspend === true && keepSuspendedSeconds > 0
          ? { type: 'suspend', workerId: w.id, reason }
          : { type: 'remove', workerId: w.id, reason },
      );
    } else if (w.state === 'suspended' && now - since >= keepSuspendedSeconds * 1000) {
      actions.push({ type: 'remove', workerId: w.id, reason: `suspended for ${keepSuspendedSeconds} s` });
    }
  }
  return actions;
}

export function hasMissedStartupDeadline(
  worker: ManagedWorker,
  now: number,
  startupTimeoutMs: number,
): boolean {
  return isProvingHealth(worker) && worker.startedAt !== null && now - worker.startedAt > startupTimeoutMs;
}

/** Started, never ready: bound by the startup deadline and the 404 verdict. */
function isProvingHealth(worker: Pick<ManagedWorker, 'state' | 'readyAt'>): boolean {
  return (worker.state === 'starting' || worker.state === 'unhealthy') && worker.readyAt === null;
}

/**
 * A worker that had been ready and has been unhealthy for longer than `unhealthyTimeoutMs`: its app stopped
 * answering (hung, its container restarted or paused and never came back) and it must not keep its GPUs.
 */
export function hasStayedUnhealthy(
  worker: Pick<ManagedWorker, 'state' | 'readyAt' | 'unhealthySince'>,
  now: number,
  unhealthyTimeoutMs: number,
): boolean {
  return (
    worker.state === 'unhealthy' &&
    worker.readyAt !== null &&
    worker.unhealthySince !== undefined &&
    now - worker.unhealthySince > unhealthyTimeoutMs
  );
}

/** "unhealthy for more than 60 s after it had served; last probe: connection refused on port 8000". */
export function unhealthyMessage(
  worker: Pick<ManagedWorker, 'healthCause'>,
  unhealthyTimeoutMs: number,
): string {
  const base = `unhealthy for more than ${Math.round(unhealthyTimeoutMs / 1000)} s after it had served`;
  return worker.healthCause === '' ? base : `${base}; last probe: ${worker.healthCause}`;
}

/** "never passed its health check /health within 300 s of starting; last probe: HTTP 404 from /health". */
export function healthTimeoutMessage(worker: ManagedWorker, path: string, startupTimeoutMs: number): string {
  const base = `never passed its health check ${path} within ${Math.round(startupTimeoutMs / 1000)} s of starting`;
  return worker.healthCause === '' ? base : `${base}; last probe: ${worker.healthCause}`;
}

/**
 * Scaling to zero keeps the oldest worker still proving its health (started, never ready) until it passes or misses
 * its startup deadline: otherwise a `minNum: 0` endpoint whose request went away would drop a broken worker before
 * HEALTH_TIMEOUT, never learn why, and start another at the next request. Scaling to one or more removes any.
 */
export function keptToProveHealth(current: ManagedWorker[], target: number): ManagedWorker | undefined {
  if (target > 0) return undefined;
  const proving = current.filter(
    (w) => (w.state === 'starting' || w.state === 'unhealthy') && w.readyAt === null,
  );
  return proving.sort((a, b) => a.createdAt - b.createdAt)[0];
}

/** The autoscaler's idle victims first, then those not serving yet, then the newest. */
export function pickVictims(
  workers: ManagedWorker[],
  count: number,
  preferred: string[] = [],
): ManagedWorker[] {
  const rank = (w: ManagedWorker) => (preferred.includes(w.id) ? -1 : SCALE_DOWN_RANK[w.state]);
  return [...workers].sort((a, b) => rank(a) - rank(b) || b.createdAt - a.createdAt).slice(0, count);
}

/**
 * Rolling replacement: old-revision workers go once the new revision has `target` healthy workers. When a
 * new worker waits for GPUs that only an old one holds, one old worker goes per pass to make room.
 */
function retireOldRevision(old: ManagedWorker[], current: ManagedWorker[], target: number): PlanAction[] {
  if (old.length === 0) return [];
  const ready = current.filter((w) => w.state === 'running' && w.healthy).length;
  if (ready >= target) {
    return old.map((w) => ({
      type: 'remove' as const,
      workerId: w.id,
      reason: 'replaced by a new revision',
    }));
  }
  const waitingForGpus = current.some((w) => w.state === 'pending');
  const oldest = [...old].sort((a, b) => a.createdAt - b.createdAt)[0];
  return waitingForGpus && oldest
    ? [{ type: 'remove', workerId: oldest.id, reason: 'making room for the new revision' }]
    : [];
}
