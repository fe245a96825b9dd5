/**
 * `GET quota` on the wire: each quota as a count or "unlimited", each use as a count, and which quotas apply and
 * why (the source of each, and of the owner's as a whole, with a reason).
 */
import { QUOTA_NAMES, type QuotaName, type QuotaSource } from '../domain/quota.js';

export type WireQuotaLimit = number | 'unlimited';

export interface WireQuotaReport {
  quota: Record<QuotaName, WireQuotaLimit>;
  used: Record<QuotaName, number>;
  source: QuotaSource;
  reason: string;
  sources: Record<QuotaName, QuotaSource>;
}

export function toWireQuotaReport(report: {
  quota: Record<QuotaName, number>;
  use: Record<QuotaName, number>;
  source: QuotaSource;
  reason: string;
  sources: Record<QuotaName, QuotaSource>;
}): WireQuotaReport {
  const quota = {} as Record<QuotaName, WireQuotaLimit>;
  const used = {} as Record<QuotaName, number>;
  for (const name of QUOTA_NAMES) {
    quota[name] = Number.isFinite(report.quota[name]) ? report.quota[name] : 'unlimited';
    used[name] = report.use[name];
  }
  return { quota, used, source: report.source, reason: report.reason, sources: { ...report.sources } };
}
