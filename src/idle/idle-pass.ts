/**
 * The idle policies' pass (docs/idle-policies.md), run every `intervalMs` where this replica leads (each replica
 * keeps the timer and asks `leading` at each tick, so a leader change needs no hand-over): for each
 * live running endpoint whose owner has a policy, the rule of domain/idle-policy.ts over its spec, its last traffic
 * and the step already taken; a step that lowers maxWorkers is written through `lower` (the endpoint service's
 * update path: revision, event, audit), and each step taken is recorded so that it is taken once per idle time.
 */
import type { Endpoint } from '../domain/endpoint.js';
import { type IdleDecision, type IdlePolicy, idleDecision, idleEventMessage } from '../domain/idle-policy.js';
import type { Clock, Timers } from '../ports/clock.js';
import type { EndpointActivity, EndpointActivityRepository } from '../store/endpoints/endpoint-activity.js';

/** What the pass asks of the endpoint's update path: `decide` is asked again of the endpoint as stored. */
export type LowerMaxWorkers = (
  ownerId: string,
  endpointId: string,
  decide: (
    endpoint: Endpoint,
  ) => { maxWorkers: number; message: string; data: Record<string, unknown> } | undefined,
) => Promise<unknown>;

export interface IdlePassOptions {
  /** Every live endpoint (the store's). */
  endpoints: () => Promise<readonly Endpoint[]>;
  activity: Pick<EndpointActivityRepository, 'all' | 'recordIdleStep' | 'forgetDeleted'>;
  /** Writes this replica's marks not yet written before a pass reads them. */
  flushMarks: () => Promise<void>;
  policyFor: (ownerId: string) => IdlePolicy | undefined;
  /** Whether this replica leads now (the controller's lease); only the leader's ticks pass. */
  leading: () => boolean;
  lower: LowerMaxWorkers;
  clock: Clock;
  timers: Timers;
  intervalMs: number;
  logger: {
    info(fields: object, message: string): void;
    warn(fields: object, message: string): void;
  };
}

export class IdlePass {
  readonly #o: IdlePassOptions;
  #timer: unknown;
  /** Between `start` and `stop`; a pass under way ends at its next endpoint once it is false. */
  #running = false;
  #current: Promise<void> = Promise.resolve();
  #busy = false;

  constructor(options: IdlePassOptions) {
    this.#o = options;
  }

  /** A tick every intervalMs from now on (the first after one interval); those while this replica leads pass. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  /** No pass begins from now on; resolves once the one under way is done. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#o.timers.clearTimeout(this.#timer);
    await this.#current;
  }

  /** One pass; errors of one endpoint are logged and the others go on. */
  async #pass(): Promise<void> {
    const o = this.#o;
    await o.flushMarks();
    const [endpoints, activity] = await Promise.all([o.endpoints(), o.activity.all()]);
    for (const endpoint of endpoints) {
      if (!this.#running || !o.leading()) return;
      const policy = endpoint.desired === 'running' ? o.policyFor(endpoint.ownerId) : undefined;
      if (policy === undefined) continue;
      try {
        await this.#apply(endpoint, policy, activity.get(endpoint.id));
      } catch (error) {
        o.logger.warn({ err: error, endpointId: endpoint.id }, 'the idle policy could not be applied');
      }
    }
    await o.activity.forgetDeleted();
  }

  async #apply(
    endpoint: Endpoint,
    policy: IdlePolicy,
    activity: EndpointActivity | undefined,
  ): Promise<void> {
    const o = this.#o;
    const now = o.clock();
    const decideOn = (e: Endpoint): IdleDecision | undefined =>
      idleDecision(
        {
          minWorkers: e.spec.workers.minWorkers,
          maxWorkers: e.spec.workers.maxWorkers,
          createdAt: e.createdAt,
          lastTrafficAt: activity?.trafficAt ?? null,
          appliedStep: activity?.idleStep ?? null,
        },
        policy,
        now,
      );
    const decision = decideOn(endpoint);
    if (decision === undefined) return;
    if (decision.to < decision.from) {
      let written: IdleDecision | undefined;
      await o.lower(endpoint.ownerId, endpoint.id, (stored) => {
        written = decideOn(stored);
        return (
          written && {
            maxWorkers: written.to,
            message: idleEventMessage(stored.id, written),
            data: dataOf(written, activity),
          }
        );
      });
      if (written && written.to < written.from)
        o.logger.info(
          { endpointId: endpoint.id, from: written.from, to: written.to },
          'idle policy lowered maxWorkers',
        );
    }
    await o.activity.recordIdleStep(endpoint.id, decision.index, now);
  }

  #schedule(): void {
    this.#timer = this.#o.timers.setTimeout(() => {
      if (!this.#running) return;
      this.#schedule();
      // A tick while the last pass still runs is skipped; a replica that does not lead skips them all.
      if (this.#busy || !this.#o.leading()) return;
      this.#busy = true;
      this.#current = this.#pass()
        .catch((error: unknown) => this.#o.logger.warn({ err: error }, 'the idle policies pass failed'))
        .finally(() => {
          this.#busy = false;
        });
    }, this.#o.intervalMs);
  }

  /** Resolves once the pass under way (if any) is done: tests on manual timers fire a tick, then wait for it. */
  settled(): Promise<void> {
    return this.#current;
  }
}

function dataOf(decision: IdleDecision, activity: EndpointActivity | undefined): Record<string, unknown> {
  return {
    step: decision.index + 1,
    afterDays: decision.step.afterDays,
    from: decision.from,
    to: decision.to,
    idleSince: new Date(decision.idleSince).toISOString(),
    lastTrafficAt:
      activity?.trafficAt === null || activity?.trafficAt === undefined
        ? null
        : new Date(activity.trafficAt).toISOString(),
  };
}
