/**
 * Per-owner quotas in use: each owner's quota (configured, over the inventory's defaults; the operator's without
 * the default GPU quotas), its use read from the store, the checks that refuse a create, an update or a save of a
 * counted thing (credentials, secrets, invoke keys) past a quota with QUOTA_EXCEEDED, and the report `GET quota`
 * answers. The arithmetic is domain/quota.ts.
 */
import type { BudgetStanding } from '../domain/budget.js';
import {
  type CountQuotaName,
  countQuotaBreach,
  describeBreach,
  type EndpointUse,
  endpointQuotaBreach,
  type OwnerQuota,
  type Quota,
  type QuotaBreach,
  type QuotaName,
} from '../domain/quota.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { BudgetStandings } from '../ports/budgets.js';
import type { Admit } from '../store/endpoints/endpoints.js';
import type { JobUseStore } from '../store/jobs/job-roles.js';
import type { CountAdmit } from '../store/owner-turn.js';
import type { Store } from '../store/store.js';
import type { Principal } from './principal.js';

export interface QuotaReport extends OwnerQuota {
  use: Record<QuotaName, number>;
  /** The budget that binds the owner, where one applies. */
  budget?: BudgetStanding | undefined;
}

export interface QuotaServiceOptions {
  store: Pick<Store, 'endpoints' | 'apiKeys' | 'credentials' | 'secrets' | 'invokeKeys'> & {
    jobs: JobUseStore;
  };
  /** An owner's quota; `operator`: whether it holds an admin key. */
  quotaFor: (ownerId: string, operator: boolean) => OwnerQuota;
  /** Owners' budgets (service/budget-service.ts); absent: none is reported. */
  budgets?: BudgetStandings;
}

/** Quotas by owner: what each may declare, and the checks against it. */
export class QuotaService {
  readonly #o: QuotaServiceOptions;

  constructor(options: QuotaServiceOptions) {
    this.#o = options;
  }

  /** The owner's quota: whether it is the operator is read from its keys at each call (a revoke applies at once). */
  async quotaOf(ownerId: string): Promise<OwnerQuota> {
    return this.#o.quotaFor(ownerId, await this.#o.store.apiKeys.holdsAdmin(ownerId));
  }

  /** The owner's quota, where it comes from, and what it uses now. */
  async report(principal: Principal): Promise<QuotaReport> {
    const { store } = this.#o;
    const { ownerId } = principal;
    const [owner, use, credentials, secrets, invokeKeys, jobs, budget] = await Promise.all([
      this.quotaOf(ownerId),
      store.endpoints.use(ownerId),
      store.credentials.count(ownerId),
      store.secrets.count(ownerId),
      store.invokeKeys.countActive(ownerId),
      store.jobs.ownerUse(ownerId),
      this.#o.budgets?.read(ownerId),
    ]);
    return { ...owner, use: { ...use, credentials, secrets, invokeKeys, ...jobs }, budget };
  }

  /**
   * The check a create (`before` undefined) or an update (`before`: the endpoint's use before it) runs in its
   * write's transaction: the owner's use then, with this endpoint's use replaced by `after`. `quota` is
   * `quotaOf(principal.ownerId)`'s, read before the write.
   */
  admitEndpoint(quota: Quota, before: EndpointUse | undefined, after: EndpointUse): Admit {
    return (current) => {
      const breach = endpointQuotaBreach(quota, current, before, after);
      if (breach) throw quotaExceeded(breach);
    };
  }

  /** The check a save of one more counted thing runs in its write's transaction, in the owner's turn. */
  async admitCount(principal: Principal, name: CountQuotaName): Promise<CountAdmit> {
    const { quota } = await this.quotaOf(principal.ownerId);
    return (saved) => {
      const breach = countQuotaBreach(quota, name, saved);
      if (breach) throw quotaExceeded(breach);
    };
  }
}

/** The one error every quota refusal answers with; metadata names the quota, its limit, the use now and after. */
export function quotaExceeded(breach: QuotaBreach): ApiError {
  const { quota, limit, used, usedAfter } = breach;
  return new ApiError('QUOTA_EXCEEDED', describeBreach(breach), { quota, limit, used, usedAfter });
}
