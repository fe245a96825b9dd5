/**
 * The budget service over a ledger in memory: the month's totals read against the owner's budget, GPU-hours only
 * of the states that hold GPUs, the cache (one ledger read per owner per few seconds, however many ask), a change
 * of state told to listeners, the operator exempt from the budget for every owner, and the account's hourly spend.
 */
import { describe, expect, it } from 'vitest';
import type { BudgetSettings } from '../domain/budget.js';
import type {
  UsageQuery,
  UsageReader,
  UsageRow,
  UsageScope,
  UsageState,
  UsageTotals,
} from '../ports/usage.js';
import { BudgetService } from './budget-service.js';

const NOW = Date.parse('2026-11-29T12:30:00.000Z');
const NOVEMBER = Date.parse('2026-11-01T00:00:00.000Z');

function seconds(partial: Partial<Record<UsageState, number>>): Record<UsageState, number> {
  return { downloading: 0, starting: 0, active: 0, idle: 0, frozen: 0, suspended: 0, ...partial };
}

/** A ledger whose owners' totals are set by the test; it counts its reads. */
class MemoryLedger implements UsageReader {
  readonly byOwner = new Map<string, UsageTotals>();
  hourRows: UsageRow[] = [];
  ownerReads: { ownerId: string; since: number; now: number }[] = [];
  queries: UsageQuery[] = [];

  set(ownerId: string, gpuSeconds: Partial<Record<UsageState, number>>, amount = 0): void {
    const all = seconds(gpuSeconds);
    const timeBilledMs = Object.values(all).reduce((a, b) => a + b, 0) * 1000;
    this.byOwner.set(ownerId, { gpuSeconds: all, timeBilledMs, amount, currency: 'USD' });
  }

  async query(query: UsageQuery): Promise<UsageRow[]> {
    this.queries.push(query);
    return this.hourRows;
  }

  async totals({ ownerId = '' }: UsageScope, since: number, now: number): Promise<UsageTotals> {
    this.ownerReads.push({ ownerId, since, now });
    return (
      this.byOwner.get(ownerId) ?? { gpuSeconds: seconds({}), timeBilledMs: 0, amount: 0, currency: 'USD' }
    );
  }
}

function setup(settings: BudgetSettings, operators: string[] = []) {
  const ledger = new MemoryLedger();
  let now = NOW;
  const service = new BudgetService({
    usage: ledger,
    settings,
    clock: () => now,
    isOperator: async (ownerId) => operators.includes(ownerId),
    freshMs: 5_000,
  });
  return { ledger, service, advance: (ms: number) => (now += ms) };
}

describe('BudgetService', () => {
  it("reads the owner's totals since the month's start (UTC) against its GPU-hour budget", async () => {
    const { ledger, service } = setup({ owners: { lab: { gpuHoursPerMonth: 1 } } });
    // 0.9 GPU-hours held (starting, active, idle, frozen); suspended and downloading time holds no GPU.
    ledger.set('lab', {
      starting: 360,
      active: 2160,
      idle: 360,
      frozen: 360,
      suspended: 7200,
      downloading: 999,
    });
    const standing = await service.read('lab');
    expect(standing).toMatchObject({ state: 'warning', budget: 'gpuHoursPerMonth', limit: 1 });
    expect(standing?.used).toBeCloseTo(0.9, 10);
    expect(ledger.ownerReads).toEqual([{ ownerId: 'lab', since: NOVEMBER, now: NOW }]);
  });

  it('asks the ledger once per owner per few seconds however often it is asked, and again after', async () => {
    const { ledger, service, advance } = setup({ owners: { lab: { perMonth: 10 } } });
    ledger.set('lab', {}, 12);
    await service.read('lab');
    for (let i = 0; i < 100; i++) expect(service.standingOf('lab')?.state).toBe('exceeded');
    await service.read('lab');
    expect(ledger.ownerReads).toHaveLength(1);
    advance(5_000);
    ledger.set('lab', {}, 1);
    // The stale standing answers at once while a fresh read goes out.
    expect(service.standingOf('lab')?.state).toBe('exceeded');
    await service.read('lab');
    expect(ledger.ownerReads).toHaveLength(2);
    expect(service.standingOf('lab')?.state).toBe('ok');
  });

  it('reads once for callers that ask together', async () => {
    const { ledger, service } = setup({ owners: { lab: { perMonth: 10 } } });
    await Promise.all([service.read('lab'), service.read('lab'), service.read('lab')]);
    expect(ledger.ownerReads).toHaveLength(1);
  });

  it('tells listeners when an owner moves from one state to another, not at every read', async () => {
    const { ledger, service, advance } = setup({ owners: { lab: { perMonth: 10 } } });
    const changed: string[] = [];
    service.onChange((ownerId) => changed.push(ownerId));
    ledger.set('lab', {}, 1);
    await service.read('lab');
    advance(5_000);
    await service.read('lab');
    expect(changed).toEqual(['lab']);
    ledger.set('lab', {}, 10);
    advance(5_000);
    await service.read('lab');
    expect(changed).toEqual(['lab', 'lab']);
  });

  it('holds no owner to the budget for every owner when it is the operator, and reads nothing for it', async () => {
    const { ledger, service } = setup({ defaults: { perMonth: 0 }, owners: {} }, ['ops']);
    expect(await service.read('ops')).toBeUndefined();
    expect(await service.read('tenant')).toMatchObject({ state: 'exceeded', budget: 'perMonth' });
    expect(ledger.ownerReads.map((r) => r.ownerId)).toEqual(['tenant']);
  });

  it('reads nothing at all when no budget is configured', async () => {
    const { ledger, service } = setup({ owners: {} });
    expect(service.standingOf('lab')).toBeUndefined();
    expect(await service.read('lab')).toBeUndefined();
    expect(ledger.ownerReads).toHaveLength(0);
    expect(ledger.queries).toHaveLength(0);
  });

  it("holds every owner, the operator too, to the account's spend this clock hour", async () => {
    const { ledger, service } = setup({ owners: {}, spendPerHour: 80 }, ['ops']);
    const row = (key: string, amount: number): UsageRow => ({
      time: Date.parse('2026-11-29T12:00:00.000Z'),
      key,
      ownerId: key,
      gpuSeconds: seconds({}),
      timeBilledMs: 0,
      amount,
      currency: 'USD',
    });
    ledger.hourRows = [row('a', 50), row('ops', 30.5)];
    expect(await service.read('ops')).toMatchObject({
      state: 'exceeded',
      budget: 'spendPerHour',
      used: 80.5,
      resetsAt: Date.parse('2026-11-29T13:00:00.000Z'),
    });
    expect(await service.read('b')).toMatchObject({ state: 'exceeded', budget: 'spendPerHour' });
    expect(ledger.queries).toEqual([
      { from: Date.parse('2026-11-29T12:00:00.000Z'), to: NOW, bucket: 'hour', grouping: 'owner' },
    ]);
  });

  it('keeps the last standing when a read fails', async () => {
    const { ledger, service, advance } = setup({ owners: { lab: { perMonth: 10 } } });
    ledger.set('lab', {}, 11);
    await service.read('lab');
    ledger.totals = async () => {
      throw new Error('database unavailable');
    };
    advance(5_000);
    await service.read('lab');
    expect(service.standingOf('lab')?.state).toBe('exceeded');
  });
});
