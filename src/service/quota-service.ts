/**
 * Per-owner quotas in use: each owner's quota (configured, over the inventory's defaults), its use read from the
 * store, the checks that refuse a create, an update or a credentials save past a quota with QUOTA_EXCEEDED, and
 * the report `GET quota` answers. The arithmetic is domain/quota.ts.
 */
import {
  credentialQuotaBreach,
  type EndpointUse,
  endpointQuotaBreach,
  QUOTA_DESCRIPTIONS,
  type Quota,
  type QuotaBreach,
  type QuotaName,
} from '../domain/quota.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Admit } from '../store/endpoints.js';
import type { Store } from '../store/store.js';
import type { Principal } from './principal.js';

export interface QuotaReport {
  quota: Quota;
  use: Record<QuotaName, number>;
}

/** Quotas by owner: what each may declare, and the checks against it. */
export class QuotaService {
  readonly #o: { store: Store; quotaFor: (ownerId: string) => Quota };

  constructor(options: { store: Store; quotaFor: (ownerId: string) => Quota }) {
    this.#o = options;
  }

  /** The owner's quota and what it uses now. */
  async report(principal: Principal): Promise<QuotaReport> {
    const { store, quotaFor } = this.#o;
    const [use, credentials] = await Promise.all([
      store.endpoints.use(principal.ownerId),
      store.credentials.ids(principal.ownerId),
    ]);
    return { quota: quotaFor(principal.ownerId), use: { ...use, credentials: credentials.size } };
  }

  /**
   * The check a create (`before` undefined) or an update (`before`: the endpoint's use before it) runs in its
   * write's transaction: the owner's use then, with this endpoint's use replaced by `after`.
   */
  admitEndpoint(principal: Principal, before: EndpointUse | undefined, after: EndpointUse): Admit {
    const quota = this.#o.quotaFor(principal.ownerId);
    return (current) => {
      const breach = endpointQuotaBreach(quota, current, before, after);
      if (breach) throw quotaExceeded(breach);
    };
  }

  /** Refuses one more set of registry credentials past the owner's quota. */
  async checkCredentials(principal: Principal): Promise<void> {
    const saved = await this.#o.store.credentials.ids(principal.ownerId);
    const breach = credentialQuotaBreach(this.#o.quotaFor(principal.ownerId), saved.size);
    if (breach) throw quotaExceeded(breach);
  }
}

/** The one error every quota refusal answers with; metadata names the quota, its limit, the use now and after. */
export function quotaExceeded(breach: QuotaBreach): ApiError {
  const { quota, limit, used, usedAfter } = breach;
  return new ApiError(
    'QUOTA_EXCEEDED',
    `quota exceeded: ${QUOTA_DESCRIPTIONS[quota]} would be ${usedAfter}, above your quota of ${limit} (in use now: ${used}); GET quota shows your quotas`,
    { quota, limit, used, usedAfter },
  );
}
