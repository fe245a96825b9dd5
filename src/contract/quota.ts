/**
 * `GET quota` on the wire: each quota as a count or "unlimited", each use as a count, and which quotas apply and
 * why (the source of each, and of the owner's as a whole, with a reason); then the rates that bound the caller's
 * requests (the API's per key, the job submissions' per owner).
 */
import {
  type BudgetName,
  type BudgetStanding,
  type BudgetState,
  describeStanding,
} from '../domain/budget.js';
import { QUOTA_NAMES, type QuotaName, type QuotaSource } from '../domain/quota.js';

export type WireQuotaLimit = number | 'unlimited';

/** A token bucket's budget: `burst` requests at once, refilled at `requestsPerSecond`, counted for each `per`. */
export interface WireRate {
  requestsPerSecond: number;
  burst: number;
  per: 'key' | 'owner';
  /** A request costs one token and one more for each this many bytes of its body. */
  bytesPerToken: number;
}

export interface WireRates {
  /** Every API request (this listener's routes), per API key. */
  api: WireRate;
  /** `run`, `runsync` and `retry` on the gateway's `/v2`, per owner over all its keys. */
  jobSubmissions?: WireRate;
}

export interface WireQuotaReport {
  quota: Record<QuotaName, WireQuotaLimit>;
  used: Record<QuotaName, number>;
  source: QuotaSource;
  reason: string;
  sources: Record<QuotaName, QuotaSource>;
  rates?: WireRates;
  /** The budget that binds the caller (its monthly one, or the account's spend per hour), where one applies. */
  budget?: WireBudgetStanding;
}

/** A budget read against its use: ok, warning from 80 %, exceeded from 100 % (no new worker beyond minNum). */
export interface WireBudgetStanding {
  state: BudgetState;
  budget: BudgetName;
  limit: number;
  used: number;
  /** The currency, or `GPU-hours`. */
  unit: string;
  /** ISO 8601: when the use counts from 0 again. */
  resetsAt: string;
  message: string;
}

export function toWireBudgetStanding(standing: BudgetStanding): WireBudgetStanding {
  return {
    state: standing.state,
    budget: standing.budget,
    limit: standing.limit,
    used: standing.used,
    unit: standing.unit,
    resetsAt: new Date(standing.resetsAt).toISOString(),
    message: describeStanding(standing),
  };
}

export function toWireQuotaReport(
  report: {
    quota: Record<QuotaName, number>;
    use: Record<QuotaName, number>;
    source: QuotaSource;
    reason: string;
    sources: Record<QuotaName, QuotaSource>;
    budget?: BudgetStanding | undefined;
  },
  rates?: WireRates,
): WireQuotaReport {
  const quota = {} as Record<QuotaName, WireQuotaLimit>;
  const used = {} as Record<QuotaName, number>;
  for (const name of QUOTA_NAMES) {
    quota[name] = Number.isFinite(report.quota[name]) ? report.quota[name] : 'unlimited';
    used[name] = report.use[name];
  }
  return {
    quota,
    used,
    source: report.source,
    reason: report.reason,
    sources: { ...report.sources },
    ...(rates ? { rates } : {}),
    ...(report.budget ? { budget: toWireBudgetStanding(report.budget) } : {}),
  };
}
