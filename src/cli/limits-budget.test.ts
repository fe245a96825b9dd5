/**
 * `corral limits`' budget line: the budget that binds the caller, marked from its warning at 80 % and when
 * exceeded, and nothing from a server that reports none.
 */
import { describe, expect, it } from 'vitest';
import type { WireQuotaReport } from '../client/index.js';
import { toWireBudgetStanding } from '../contract/quota.js';
import type { BudgetStanding } from '../domain/budget.js';
import { formatQuota } from './limits.js';

const REPORT: WireQuotaReport = {
  quota: { endpoints: 10 } as WireQuotaReport['quota'],
  used: { endpoints: 1 } as WireQuotaReport['used'],
  source: 'config',
  reason: 'the config file sets quotas for owner "lab" (quotas.owners)',
  sources: { endpoints: 'config' } as WireQuotaReport['sources'],
};

const standing = (state: BudgetStanding['state'], used: number): BudgetStanding => ({
  state,
  budget: 'gpuHoursPerMonth',
  limit: 2,
  used,
  unit: 'GPU-hours',
  resetsAt: Date.parse('2026-12-01T00:00:00.000Z'),
});

describe('formatQuota', () => {
  it('warns from 80 % of the budget, naming its use and reset', () => {
    const out = formatQuota({ ...REPORT, budget: toWireBudgetStanding(standing('warning', 1.7)) });
    expect(out).toContain(
      'Budget: WARNING: the monthly GPU-hour budget (quotas budget.gpuHoursPerMonth) is 85 % used (1.7 of 2 GPU-hours used); it resets at 2026-12-01T00:00:00.000Z\n',
    );
  });

  it('says BUDGET_EXCEEDED and what it stops once spent', () => {
    const out = formatQuota({ ...REPORT, budget: toWireBudgetStanding(standing('exceeded', 2.1)) });
    expect(out).toMatch(/^Budget: EXCEEDED: BUDGET_EXCEEDED: .* no new worker starts beyond minNum/m);
  });

  it('shows an ok budget plainly, and no line without one', () => {
    expect(formatQuota({ ...REPORT, budget: toWireBudgetStanding(standing('ok', 0.5)) })).toContain(
      'Budget: the monthly GPU-hour budget (quotas budget.gpuHoursPerMonth) is 25 % used',
    );
    expect(formatQuota(REPORT)).not.toContain('Budget');
  });
});
