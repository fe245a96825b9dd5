/** `GET quota` on the wire: each quota as a count or "unlimited", and each use as a count. */
import { QUOTA_NAMES, type QuotaName } from '../domain/quota.js';

export type WireQuotaLimit = number | 'unlimited';

export interface WireQuotaReport {
  quota: Record<QuotaName, WireQuotaLimit>;
  used: Record<QuotaName, number>;
}

export function toWireQuotaReport(report: {
  quota: Record<QuotaName, number>;
  use: Record<QuotaName, number>;
}): WireQuotaReport {
  const quota = {} as Record<QuotaName, WireQuotaLimit>;
  const used = {} as Record<QuotaName, number>;
  for (const name of QUOTA_NAMES) {
    quota[name] = Number.isFinite(report.quota[name]) ? report.quota[name] : 'unlimited';
    used[name] = report.use[name];
  }
  return { quota, used };
}
