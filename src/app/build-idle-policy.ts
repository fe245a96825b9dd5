/**
 * The idle policies of `corral serve` (docs/idle-policies.md): this replica's traffic marks (told by its gateway
 * and its jobs, written to the store in batches) and the idle pass, which every replica times and only the leader
 * runs, built from the config file's policies. Marks are kept even without a policy, so that one set later finds
 * each endpoint's real last traffic.
 */
import { DAY_MS, type IdlePolicySettings, idlePolicyFor } from '../domain/idle-policy.js';
import { IdlePass } from '../idle/idle-pass.js';
import { TrafficMarks } from '../idle/traffic-marks.js';
import type { Clock, Timers } from '../ports/clock.js';
import { IdlePolicyChanges } from '../service/idle-policy-changes.js';
import type { Store } from '../store/store.js';

/** The longest a mark waits for its write, and between two passes: a minute, less for policies of minutes. */
const MAX_INTERVAL_MS = 60_000;
const MIN_INTERVAL_MS = 1000;

export interface IdlePolicies {
  /** Traffic of an endpoint at `at` (memory only): the gateway's answered requests, the jobs submitted. */
  mark(endpointId: string, at: number): void;
  /** Starts the pass's timer (it passes while this replica leads); nothing without a configured policy. */
  start(): void;
  /** Resolves once the pass and the write of marks under way are done (tests on manual timers). */
  settled(): Promise<void>;
  /** Stops the pass and writes the marks left. */
  close(): Promise<void>;
}

export function buildIdlePolicies(parts: {
  store: Store;
  policies: IdlePolicySettings;
  leading: () => boolean;
  clock: Clock;
  timers: Timers;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
  /** Told the endpoint after the policy changed it (the controller reconciles it at once). */
  onChanged?: (endpointId: string) => void;
}): IdlePolicies {
  const { store, policies, clock, timers, logger } = parts;
  const intervalMs = idleIntervalMs(policies);
  const marks = new TrafficMarks({ activity: store.endpointActivity, timers, flushMs: intervalMs, logger });
  const changes = new IdlePolicyChanges({
    store,
    clock,
    ...(parts.onChanged ? { onChanged: parts.onChanged } : {}),
  });
  const pass = configured(policies)
    ? new IdlePass({
        endpoints: () => store.endpoints.listAll(),
        activity: store.endpointActivity,
        flushMarks: () => marks.flush(),
        policyFor: (ownerId) => idlePolicyFor(ownerId, policies),
        leading: parts.leading,
        lower: (ownerId, id, decide) => changes.lowerMaxWorkers(ownerId, id, decide),
        clock,
        timers,
        intervalMs,
        logger,
      })
    : undefined;
  return {
    mark: (endpointId, at) => marks.mark(endpointId, at),
    start: () => pass?.start(),
    async settled() {
      await Promise.all([pass?.settled(), marks.settled()]);
    },
    async close() {
      await pass?.stop();
      await marks.close();
    },
  };
}

/** Whether any owner has a policy (the default, or an owner's own). */
function configured(policies: IdlePolicySettings): boolean {
  return [policies.defaults, ...Object.values(policies.owners)].some((p) => p !== undefined && p !== 'off');
}

/** A tenth of the shortest step configured, within 1 s and a minute: a step is taken at most that late. */
export function idleIntervalMs(policies: IdlePolicySettings): number {
  const shortest = Math.min(
    ...[policies.defaults, ...Object.values(policies.owners)].flatMap((p) =>
      p === undefined || p === 'off' ? [] : p.steps.map((s) => s.afterDays * DAY_MS),
    ),
  );
  return Math.max(MIN_INTERVAL_MS, Math.min(MAX_INTERVAL_MS, Math.floor(shortest / 10)));
}
