/**
 * The idle policy's change of an endpoint (docs/idle-policies.md): its maxWorkers lowered, written through the same
 * store path as an owner's update (the endpoint's version checked, its revision by `revisedEndpoint`, an event and
 * an audit entry in the same transaction, the controller told), with the actor `idle-policy`. Lowering needs no
 * quota, and a value at or above minWorkers keeps the spec valid.
 */
import type { Endpoint } from '../domain/endpoint.js';
import { revisedEndpoint } from '../domain/revision.js';
import { applyPatch } from '../domain/spec-patch.js';
import type { Clock } from '../ports/clock.js';
import type { Store } from '../store/store.js';

/** The actor the audit log names for the idle policy's changes. */
export const IDLE_POLICY_ACTOR = 'idle-policy';

/** What the policy decides of the endpoint as stored: the new maxWorkers, and its event's words and facts. */
export type IdleLowering = (
  endpoint: Endpoint,
) => { maxWorkers: number; message: string; data: Record<string, unknown> } | undefined;

export class IdlePolicyChanges {
  readonly #o: { store: Pick<Store, 'endpoints'>; clock: Clock; onChanged?: (endpointId: string) => void };

  constructor(options: {
    store: Pick<Store, 'endpoints'>;
    clock: Clock;
    onChanged?: (endpointId: string) => void;
  }) {
    this.#o = options;
  }

  /**
   * Lowers the endpoint's maxWorkers to what `decide` says of it as stored (asked again on a concurrent change);
   * nothing is written where it says nothing or no lower value. The endpoint after, undefined when it is gone.
   */
  async lowerMaxWorkers(ownerId: string, id: string, decide: IdleLowering): Promise<Endpoint | undefined> {
    const { store, clock } = this.#o;
    const now = clock();
    let lowered = false;
    const result = await store.endpoints.mutate(
      ownerId,
      id,
      (endpoint) => {
        const decided = decide(endpoint);
        lowered = decided !== undefined && decided.maxWorkers < endpoint.spec.workers.maxWorkers;
        if (!decided || !lowered) return { next: endpoint, events: [], unchanged: true };
        const spec = applyPatch(endpoint.spec, { workers: { maxWorkers: decided.maxWorkers } });
        const revised = revisedEndpoint(endpoint, spec, now);
        return {
          next: revised.next,
          events: [
            {
              at: now,
              type: 'idle-policy',
              message: decided.message,
              data: { ...decided.data, fields: revised.fields, revision: revised.next.revision },
            },
          ],
        };
      },
      (applied) => ({
        at: now,
        ownerId,
        actor: IDLE_POLICY_ACTOR,
        action: 'endpoint.idle-policy',
        targetId: id,
        detail: applied.events[0] ? { event: applied.events[0].type } : {},
      }),
    );
    if (lowered) this.#o.onChanged?.(id);
    return result;
  }
}
