/**
 * Idle policies (issue 32): an endpoint with no traffic for a while has its maxWorkers lowered, step by step, as
 * RunPod does (3 days to 2, 7 days to 0). Which policy applies to an owner, and the rule that says, for one
 * endpoint now, which step takes effect and what maxWorkers becomes. Pure: the spec and the last traffic come from
 * the store, the policies from the config file, the time from the caller.
 */

/** One step: once an endpoint has had no traffic for `afterDays` (fractions allowed), maxWorkers is at most this. */
export interface IdleStep {
  afterDays: number;
  maxWorkers: number;
}

/** Steps in ascending `afterDays`, their `maxWorkers` descending (config/file.ts checks both). */
export interface IdlePolicy {
  steps: readonly IdleStep[];
}

/** The configured policies: every owner's unless its own entry says otherwise (`off`: none for that owner). */
export interface IdlePolicySettings {
  defaults?: IdlePolicy | 'off';
  owners: Readonly<Record<string, IdlePolicy | 'off'>>;
}

export const DAY_MS = 24 * 3600 * 1000;

/** The owner's policy: its own entry, else the one for every owner; undefined where none applies. */
export function idlePolicyFor(ownerId: string, settings: IdlePolicySettings): IdlePolicy | undefined {
  const policy = Object.hasOwn(settings.owners, ownerId) ? settings.owners[ownerId] : settings.defaults;
  return policy === undefined || policy === 'off' ? undefined : policy;
}

/** What the rule reads of one endpoint. */
export interface IdleEndpoint {
  minWorkers: number;
  maxWorkers: number;
  createdAt: number;
  /** The last request through a gateway or job submitted, epoch ms; null: none ever (counted from `createdAt`). */
  lastTrafficAt: number | null;
  /** The last step that took effect, and when; a step taken before the last traffic belongs to an earlier idle time. */
  appliedStep: { index: number; at: number } | null;
}

/** A step whose time has come: it takes effect once per idle time, whether or not it lowers maxWorkers. */
export interface IdleDecision {
  /** The step's index in the policy, and the step. */
  index: number;
  step: IdleStep;
  /** Since when the endpoint has had no traffic (its creation when it never had any). */
  idleSince: number;
  from: number;
  /** maxWorkers after the step: the step's value, never below minWorkers, never above `from`. */
  to: number;
}

/**
 * The step that takes effect now, or undefined when none does (traffic too recent, or the latest step due already
 * took effect in this idle time). A step never raises maxWorkers, and never lowers it below minWorkers: an endpoint
 * whose owner keeps minWorkers warm keeps them, and its maxWorkers stops at minWorkers (minWorkers is never changed).
 * Where the step lowers nothing (`to === from`), it still takes effect: an owner who raises maxWorkers again after a
 * step is not lowered again by that step, only by a later one, or after traffic and a new idle time.
 */
export function idleDecision(
  endpoint: IdleEndpoint,
  policy: IdlePolicy,
  now: number,
): IdleDecision | undefined {
  const idleSince = Math.max(endpoint.createdAt, endpoint.lastTrafficAt ?? endpoint.createdAt);
  const idleMs = now - idleSince;
  let due = -1;
  policy.steps.forEach((step, index) => {
    if (step.afterDays * DAY_MS <= idleMs) due = index;
  });
  const step = policy.steps[due];
  if (step === undefined) return undefined;
  const applied = endpoint.appliedStep;
  if (applied && applied.at >= idleSince && applied.index >= due) return undefined;
  const from = endpoint.maxWorkers;
  const to = Math.min(from, Math.max(step.maxWorkers, endpoint.minWorkers));
  return { index: due, step, idleSince, from, to };
}

/** A length of idle time as people say it: days, else hours, else minutes, else seconds. */
export function idleLength(days: number): string {
  const seconds = days * 86_400;
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (seconds >= 86_400) return plural(round(days), 'day');
  if (seconds >= 3600) return plural(round(seconds / 3600), 'hour');
  if (seconds >= 60) return plural(round(seconds / 60), 'minute');
  return plural(round(seconds), 'second');
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** The event's sentence: which step lowered maxWorkers from what to what, since when, and how to raise it again. */
export function idleEventMessage(endpointId: string, decision: IdleDecision): string {
  const since = new Date(decision.idleSince).toISOString();
  return (
    `idle policy: no traffic since ${since} (${idleLength(decision.step.afterDays)} or more), maxWorkers lowered ` +
    `from ${decision.from} to ${decision.to} (step ${decision.index + 1}: ${decision.step.maxWorkers} after ` +
    `${idleLength(decision.step.afterDays)}); traffic does not raise it again: ` +
    `corral endpoints update ${endpointId} --max-workers ${decision.from}`
  );
}
