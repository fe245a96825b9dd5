/**
 * The budget rule: which budget applies to an owner, the month's and the hour's periods in UTC, ok / warning at
 * 80 % / exceeded at 100 %, the nearer of two limits, and the sentence an owner reads.
 */
import { describe, expect, it } from 'vitest';
import {
  budgetFor,
  describeStanding,
  hourlyStanding,
  monthlyStanding,
  monthStart,
  nextMonthStart,
  worst,
} from './budget.js';

const NOW = Date.parse('2026-11-29T12:34:56.000Z');
const DECEMBER = Date.parse('2026-12-01T00:00:00.000Z');
const use = (amount: number, gpuHours: number) => ({ amount, gpuHours, currency: 'USD' });

describe('budget periods', () => {
  it('a month runs from its first day to the next one, in UTC, across a year end', () => {
    expect(monthStart(NOW)).toBe(Date.parse('2026-11-01T00:00:00.000Z'));
    expect(nextMonthStart(NOW)).toBe(DECEMBER);
    const lastMoment = Date.parse('2026-12-31T23:59:59.999Z');
    expect(monthStart(lastMoment)).toBe(DECEMBER);
    expect(nextMonthStart(lastMoment)).toBe(Date.parse('2027-01-01T00:00:00.000Z'));
  });
});

describe('monthlyStanding', () => {
  it('is ok below 80 %, a warning from 80 %, exceeded from 100 %, and resets at the next month', () => {
    const budget = { perMonth: 100 };
    expect(monthlyStanding(budget, use(79.99, 0), NOW)?.state).toBe('ok');
    expect(monthlyStanding(budget, use(80, 0), NOW)?.state).toBe('warning');
    expect(monthlyStanding(budget, use(99.9, 0), NOW)?.state).toBe('warning');
    expect(monthlyStanding(budget, use(100, 0), NOW)).toEqual({
      state: 'exceeded',
      budget: 'perMonth',
      limit: 100,
      used: 100,
      unit: 'USD',
      resetsAt: DECEMBER,
    });
  });

  it('counts GPU-hours in fractions, and the nearer of two limits decides', () => {
    const budget = { perMonth: 100, gpuHoursPerMonth: 0.01 };
    const standing = monthlyStanding(budget, use(1, 0.009), NOW);
    expect(standing).toMatchObject({ state: 'warning', budget: 'gpuHoursPerMonth', unit: 'GPU-hours' });
    expect(monthlyStanding(budget, use(100, 0), NOW)?.budget).toBe('perMonth');
  });

  it('a limit of 0 is exceeded before anything is used; no budget, no standing', () => {
    expect(monthlyStanding({ gpuHoursPerMonth: 0 }, use(0, 0), NOW)?.state).toBe('exceeded');
    expect(monthlyStanding(undefined, use(1e9, 1e9), NOW)).toBeUndefined();
    expect(monthlyStanding({}, use(1e9, 1e9), NOW)).toBeUndefined();
  });
});

describe('hourlyStanding', () => {
  it("reads the clock hour's spend and resets at the next hour", () => {
    expect(hourlyStanding(80, 81, 'USD', NOW)).toMatchObject({
      state: 'exceeded',
      budget: 'spendPerHour',
      resetsAt: Date.parse('2026-11-29T13:00:00.000Z'),
    });
    expect(hourlyStanding(undefined, 1e9, 'USD', NOW)).toBeUndefined();
  });

  it('an exceeded hourly limit binds over a monthly warning', () => {
    const monthly = monthlyStanding({ perMonth: 100 }, use(95, 0), NOW);
    const hourly = hourlyStanding(10, 10, 'USD', NOW);
    expect(worst([monthly, hourly])?.budget).toBe('spendPerHour');
    expect(worst([undefined, monthly])?.budget).toBe('perMonth');
  });
});

describe('budgetFor', () => {
  const settings = { defaults: { perMonth: 50 }, owners: { big: { gpuHoursPerMonth: 10 } } };

  it("an owner's own entry replaces the one for every owner", () => {
    expect(budgetFor('big', settings, false)).toEqual({ gpuHoursPerMonth: 10 });
    expect(budgetFor('small', settings, false)).toEqual({ perMonth: 50 });
  });

  it('the operator is held only to a budget set for it by owner id', () => {
    expect(budgetFor('ops', settings, true)).toBeUndefined();
    expect(budgetFor('big', settings, true)).toEqual({ gpuHoursPerMonth: 10 });
  });
});

describe('describeStanding', () => {
  it('names the code, the budget, its use and limit, and the reset time when exceeded', () => {
    const standing = monthlyStanding({ gpuHoursPerMonth: 0.002 }, use(0, 0.0025), NOW);
    expect(standing && describeStanding(standing)).toBe(
      'BUDGET_EXCEEDED: the monthly GPU-hour budget (quotas budget.gpuHoursPerMonth) is spent (0.0025 of 0.002 GPU-hours used): no new worker starts beyond minNum until it resets at 2026-12-01T00:00:00.000Z; running workers go on',
    );
  });

  it('says how much is used when warning', () => {
    const standing = monthlyStanding({ perMonth: 200 }, use(170, 0), NOW);
    expect(standing && describeStanding(standing)).toBe(
      'the monthly budget (quotas budget.perMonth) is 85 % used (170 of 200 USD used); it resets at 2026-12-01T00:00:00.000Z',
    );
  });
});
