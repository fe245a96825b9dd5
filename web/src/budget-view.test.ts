import { describe, expect, it } from 'vitest';
import type { WireQuotaReport } from '../../src/client/index.js';
import { budgetBanner } from './budget-view.js';

type Budget = NonNullable<WireQuotaReport['budget']>;

const standing = (over: Partial<Budget>): { budget: Budget } => ({
  budget: {
    state: 'ok',
    budget: 'gpuHoursPerMonth',
    limit: 10,
    used: 1,
    unit: 'GPU-hours',
    resetsAt: '2026-12-01T00:00:00.000Z',
    message: 'the monthly GPU-hour budget ... ',
    ...over,
  },
});

describe('the budget banner', () => {
  it('says nothing without a budget or below 80 % of it', () => {
    expect(budgetBanner(undefined)).toBeUndefined();
    expect(budgetBanner({})).toBeUndefined();
    expect(budgetBanner(standing({ used: 7.9 }))).toBeUndefined();
  });

  it("warns from 80 % with the share used and the server's sentence", () => {
    const message =
      'the monthly GPU-hour budget (quotas budget.gpuHoursPerMonth) is 85 % used (8.5 of 10 GPU-hours used); it resets at 2026-12-01T00:00:00.000Z';
    expect(budgetBanner(standing({ state: 'warning', used: 8.5, message }))).toEqual({
      kind: 'warning',
      title: 'Budget 85 % used.',
      message,
      resetsAt: '2026-12-01T00:00:00.000Z',
    });
  });

  it('says at 100 % that no new worker starts', () => {
    expect(budgetBanner(standing({ state: 'exceeded', used: 10, limit: 10 }))).toMatchObject({
      kind: 'exceeded',
      title: 'Budget spent: no new worker starts beyond minNum.',
    });
    expect(budgetBanner(standing({ state: 'exceeded', used: 0, limit: 0 }))?.kind).toBe('exceeded');
  });
});
