/**
 * Each endpoint's `updatedAt` as the controller last read it: an endpoint its owner changed since (a new image, a
 * start) has no failures held against it, so its crash backoff and crash loop are forgotten.
 */
import type { Endpoint } from '../domain/endpoint.js';

export class OwnerChanges {
  readonly #clear: (endpointId: string) => void;
  #seen = new Map<string, number>();

  /** `clear`: forgets the endpoint's failures (the crash ledger's). */
  constructor(options: { clear: (endpointId: string) => void }) {
    this.#clear = options.clear;
  }

  /** The whole pass: every live endpoint; those not among them are forgotten. */
  sawAll(endpoints: readonly Endpoint[]): void {
    const before = this.#seen;
    this.#seen = new Map(endpoints.map((e) => [e.id, e.updatedAt]));
    for (const [id, at] of this.#seen) if ((before.get(id) ?? at) !== at) this.#clear(id);
  }

  /** One endpoint's reconcile: that endpoint (undefined: deleted, forgotten). */
  saw(endpointId: string, endpoint: Endpoint | undefined): void {
    const before = this.#seen.get(endpointId);
    if (!endpoint) {
      this.#seen.delete(endpointId);
      return;
    }
    this.#seen.set(endpointId, endpoint.updatedAt);
    if ((before ?? endpoint.updatedAt) !== endpoint.updatedAt) this.#clear(endpointId);
  }
}
