/**
 * The autoscaler: how many workers of the current revision an endpoint should have, and which idle ones go.
 *
 * Pure: plain data in, plain data out, the time passed in as `now` (ms). No timers, no I/O. The caller (the
 * controller, signalled by the gateway on every enqueue) calls `decideScale` whenever the queue or the workers
 * change, and arms one timer for `nextCheckAt` so that time-driven changes (the oldest request reaching the
 * queue policy's wait, a worker reaching `idleTimeoutSeconds`) are decided the moment they happen, not at a tick.
 *
 * Decisions (DESIGN.md section 3, issue 4):
 * - Active workers are those in `pending`/`pulling`/`starting`/`running`/`unhealthy`, the same set as the
 *   controller's `ACTIVE_STATES`, so `desired` counts what the planner counts and never asks it to remove a worker
 *   by accident. `draining`/`stopped`/`failed` never count.
 * - Capacity on the way is `pending`/`pulling`/`starting` only: each will absorb `maxConcurrent` queued requests
 *   when it is up. `unhealthy` workers are active but not capacity on the way: they cannot serve now and may never
 *   recover (the controller fails them at the startup deadline or replaces them), so a queue behind them still
 *   gets new workers. `running` workers are taken to be full while anything is queued (the gateway only queues
 *   when no slot is free).
 * - Scale-up sizing, once the policy's threshold is crossed: `ceil(queued / maxConcurrent)` workers are needed,
 *   minus those still starting; never fewer than zero added.
 * - Wake from zero: a queued request at an endpoint with no active worker starts one at once, whatever the
 *   policy (the policy's sizing applies on top if its threshold is crossed too).
 * - Scale-down only with an empty queue. A victim has no request in flight and has been idle for
 *   `idleTimeoutSeconds`, idle counted from the later of `lastBusyAt` and `createdAt`: a worker is never idle
 *   for longer than it has existed, so a still-starting worker goes only once it has been around for the idle
 *   timeout with nothing queued (a burst that has gone away), never the moment the queue empties.
 * - Victim order is the controller's (`pickVictims`): still-starting first (`pending`, `pulling`, `starting`),
 *   then `unhealthy`, then `running`; within each, the newest first. Never more than `active - minWorkers`.
 * - `desired` is clamped to `[minWorkers, maxWorkers]`, `minWorkers` winning if the two cross (as the planner
 *   does). Only idle workers are ever named as victims: when `maxWorkers` was lowered below the active count,
 *   `desired` may be below `active - victims.length` and the controller picks the rest itself.
 */
import type { ScalingPolicy } from '../domain/endpoint.js';
import { SCALE_DOWN_RANK, type WorkerState } from '../domain/worker.js';

export interface ScalingWorker {
  id: string;
  state: WorkerState;
  /** Requests the gateway has on it now. */
  inFlight: number;
  /** When it last had a request in flight (ms); its idle time counts from here (or from `createdAt`, if later). */
  lastBusyAt: number;
  /** When the controller decided to have it (ms). */
  createdAt: number;
}

export interface ScalingInput {
  /** ms */
  now: number;
  /** queue: seconds the oldest queued request may wait; concurrency: how many may be queued. */
  policy: ScalingPolicy;
  minWorkers: number;
  maxWorkers: number;
  maxConcurrent: number;
  idleTimeoutSeconds: number;
  /** The endpoint's queue; `length` is authoritative (a stale `oldestEnqueuedAt` with length 0 is ignored). */
  queue: { length: number; oldestEnqueuedAt: number | null };
  /** The current revision's workers (old-revision ones are the rollout's business). */
  workers: readonly ScalingWorker[];
}

export interface ScalingDecision {
  /** Workers of the current revision wanted, within `[minWorkers, maxWorkers]`. */
  desired: number;
  /** Idle workers to drain and remove, in the order they should go. */
  victims: string[];
  /** One line for the logs. */
  reason: string;
  /**
   * When the policy's threshold was crossed (ms), to measure decision latency. `queue`: the oldest request's
   * enqueue time plus the policy's wait, also when still in the future. `concurrency`: `now` when more than
   * `value` are queued (the caller decides on every enqueue, so the first decision that sees it is the crossing).
   * Null with an empty queue or a `concurrency` threshold not crossed.
   */
  thresholdCrossedAt: number | null;
}

/** States that count towards the active (desired) count: present or on the way. */
export const ACTIVE_SCALING_STATES: ReadonlySet<WorkerState> = new Set([
  'pending',
  'pulling',
  'starting',
  'running',
  'unhealthy',
]);

/** States that are capacity on the way: each absorbs `maxConcurrent` queued requests once up. */
export const STARTING_STATES: ReadonlySet<WorkerState> = new Set(['pending', 'pulling', 'starting']);

export function decideScale(input: ScalingInput): ScalingDecision {
  const active = input.workers.filter((w) => ACTIVE_SCALING_STATES.has(w.state));
  const queued = queuedCount(input);
  const thresholdCrossedAt = policyThresholdAt(input, queued);
  return queued > 0
    ? scaleUp(input, active, queued, thresholdCrossedAt)
    : scaleDown(input, active, thresholdCrossedAt);
}

/**
 * The earliest time after `now` at which `decideScale` could decide differently with no new input, or null when
 * only new input (an enqueue, a dequeue, a worker changing state) can change it.
 */
export function nextCheckAt(input: ScalingInput): number | null {
  const { now } = input;
  const queued = queuedCount(input);
  if (queued > 0) {
    // Idle timers do not matter while anything is queued: the queue empties only by new input.
    if (input.policy.type !== 'queue') return null;
    const at = policyThresholdAt(input, queued);
    return at !== null && at > now ? at : null;
  }
  const active = input.workers.filter((w) => ACTIVE_SCALING_STATES.has(w.state));
  const room = victimRoom(input, active);
  if (room === 0) return null;
  const victims = pickIdleVictims(input, active);
  const chosen = new Set(victims.map((w) => w.id));
  const last = victims.length >= room ? victims[victims.length - 1] : undefined;
  let earliest: number | null = null;
  for (const w of active) {
    if (w.inFlight > 0 || chosen.has(w.id)) continue;
    // With the victims already at the floor, a newly idle worker matters only if it would go before one of them.
    if (last && victimOrder(w, last) > 0) continue;
    const at = idleSince(w) + idleTimeoutMs(input);
    if (at > now && (earliest === null || at < earliest)) earliest = at;
  }
  return earliest;
}

function scaleUp(
  input: ScalingInput,
  active: readonly ScalingWorker[],
  queued: number,
  thresholdCrossedAt: number | null,
): ScalingDecision {
  const { policy } = input;
  const perWorker = Math.max(1, Math.floor(input.maxConcurrent));
  const starting = active.filter((w) => STARTING_STATES.has(w.state)).length;
  const crossed = thresholdCrossedAt !== null && thresholdCrossedAt <= input.now;
  const waking = active.length === 0;

  let added = 0;
  let why: string;
  const queueText = describeQueue(input, queued);
  if (crossed) {
    const needed = Math.ceil(queued / perWorker);
    added = Math.max(0, needed - starting);
    why =
      starting > 0
        ? `${queueText} (${describePolicy(policy)}): needs ${needed}, ${starting} starting`
        : `${queueText} (${describePolicy(policy)})`;
  } else {
    why = `${queueText}, below ${describePolicy(policy)}`;
  }
  if (waking && added < 1) {
    added = 1;
    why = `${queueText} with no active worker: wake from zero`;
  }
  const raw = active.length + added;
  const desired = clamp(input, raw);
  const change = desired - active.length;
  const action =
    change > 0
      ? `+${plural(change, 'worker')}`
      : change < 0
        ? `-${plural(-change, 'worker')}`
        : `holding ${plural(desired, 'worker')}`;
  return {
    desired,
    victims: [],
    reason: `${why}: ${action}${clampNote(input, raw, desired)}`,
    thresholdCrossedAt,
  };
}

function scaleDown(
  input: ScalingInput,
  active: readonly ScalingWorker[],
  thresholdCrossedAt: number | null,
): ScalingDecision {
  const idle = idleWorkers(input, active);
  const victims = idle.slice(0, victimRoom(input, active));
  const raw = active.length - victims.length;
  const desired = clamp(input, raw);
  const timeoutText = `idleTimeout ${formatSeconds(input.idleTimeoutSeconds)} s`;
  let reason: string;
  if (victims.length > 0) {
    const starting = victims.filter((w) => STARTING_STATES.has(w.state)).length;
    const startingText = starting > 0 ? `, ${starting} still starting` : '';
    reason = `${plural(victims.length, 'worker')} idle past ${timeoutText}${startingText}: -${victims.length}`;
  } else if (idle.length > 0) {
    reason = `${plural(idle.length, 'worker')} idle past ${timeoutText}, kept by minWorkers ${input.minWorkers}: holding ${plural(desired, 'worker')}`;
  } else {
    reason = `queue empty, none idle past ${timeoutText}: holding ${plural(desired, 'worker')}`;
  }
  return {
    desired,
    victims: victims.map((w) => w.id),
    reason: `${reason}${clampNote(input, raw, desired)}`,
    thresholdCrossedAt,
  };
}

/** Active workers with nothing in flight, idle for the timeout, in the order they should go. */
function idleWorkers(input: ScalingInput, active: readonly ScalingWorker[]): ScalingWorker[] {
  const timeoutMs = idleTimeoutMs(input);
  return active.filter((w) => w.inFlight <= 0 && input.now - idleSince(w) >= timeoutMs).sort(victimOrder);
}

function pickIdleVictims(input: ScalingInput, active: readonly ScalingWorker[]): ScalingWorker[] {
  return idleWorkers(input, active).slice(0, victimRoom(input, active));
}

/** How many may go without going below minWorkers. */
function victimRoom(input: ScalingInput, active: readonly ScalingWorker[]): number {
  return Math.max(0, active.length - Math.max(0, input.minWorkers));
}

/** Still-starting first, then unhealthy, then running; within a state the newest first; then by id. */
function victimOrder(a: ScalingWorker, b: ScalingWorker): number {
  return (
    SCALE_DOWN_RANK[a.state] - SCALE_DOWN_RANK[b.state] ||
    b.createdAt - a.createdAt ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

function queuedCount(input: ScalingInput): number {
  const n = Math.floor(input.queue.length);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** When the oldest queued request arrived; an unknown time is taken as now (it has not waited). */
function oldestAt(input: ScalingInput): number {
  return input.queue.oldestEnqueuedAt ?? input.now;
}

function policyThresholdAt(input: ScalingInput, queued: number): number | null {
  if (queued === 0) return null;
  if (input.policy.type === 'queue') return oldestAt(input) + Math.max(0, input.policy.value) * 1000;
  return queued > input.policy.value ? input.now : null;
}

function idleSince(w: ScalingWorker): number {
  return Math.max(w.lastBusyAt, w.createdAt);
}

function idleTimeoutMs(input: ScalingInput): number {
  return Math.max(0, input.idleTimeoutSeconds) * 1000;
}

function clamp(input: ScalingInput, n: number): number {
  return Math.max(input.minWorkers, Math.min(input.maxWorkers, n));
}

function clampNote(input: ScalingInput, raw: number, desired: number): string {
  if (desired > raw) return ` (raised to minWorkers ${input.minWorkers})`;
  if (desired < raw) return ` (capped at maxWorkers ${input.maxWorkers})`;
  return '';
}

function describeQueue(input: ScalingInput, queued: number): string {
  if (input.policy.type !== 'queue') return `queue of ${queued}`;
  const waitedMs = Math.max(0, input.now - oldestAt(input));
  return `queue of ${queued} waited ${formatSeconds(waitedMs / 1000)} s`;
}

function describePolicy(policy: ScalingPolicy): string {
  return policy.type === 'queue'
    ? `policy queue ${formatSeconds(policy.value)} s`
    : `policy concurrency ${policy.value}`;
}

function formatSeconds(s: number): string {
  return Number.isInteger(s) ? String(s) : s.toFixed(1);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
