/**
 * The ledger's reader over a real (SQLite) store: amounts are the GPU price times the worker's GPUs times its time,
 * by each state's factor, plus a suspended worker's host memory at its price; no prices, amounts 0 and the
 * seconds still counted.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_STATE_FACTORS, type UsagePrices } from '../ports/usage.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { LedgerReader } from './ledger-reader.js';
import { NO_PRICES } from './prices.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 2);

const PRICES: UsagePrices = {
  currency: 'EUR',
  gpuPerHour: { 'h100-80g': 2 },
  stateFactors: { ...DEFAULT_STATE_FACTORS, idle: 0.5 },
  suspendedMemoryGBHour: 0.01,
};

async function ledger() {
  const store = new Store({ connection: connectSqlite(':memory:') });
  await store.migrate();
  const holding = {
    workerId: 'w1',
    ownerId: 'owner-1',
    endpointId: 'ep-a',
    gpuProductId: 'h100-80g',
    gpuCount: 2,
    hostMemoryBytes: 10e9,
  };
  // An hour starting, an hour active, an hour idle, an hour suspended, then gone.
  const states = ['starting', 'active', 'idle', 'suspended', null];
  for (const [i, state] of states.entries())
    await store.usageSegments.apply([{ holding, at: T0 + i * HOUR, state }]);
  return store;
}

describe('the ledger reader', () => {
  it('prices each state: GPU price x GPUs x time x factor, and suspended memory at its own price', async () => {
    const store = await ledger();
    const reader = new LedgerReader({
      segments: store.usageSegments,
      prices: PRICES,
      clock: () => T0 + 5 * HOUR,
    });
    const totals = await reader.totals({ ownerId: 'owner-1' }, T0, T0 + 5 * HOUR);
    // 2 GPUs x 2/h: starting 4 + active 4 + idle 4 x 0.5 + suspended (GPU factor 0) 10 GB x 0.01/h.
    expect(totals.amount).toBeCloseTo(4 + 4 + 2 + 0.1);
    expect(totals.timeBilledMs).toBe(4 * HOUR);
    expect(totals.gpuSeconds).toMatchObject({ starting: 7200, active: 7200, idle: 7200, suspended: 7200 });
    expect(totals.currency).toBe('EUR');
    const rows = await reader.query({ from: T0, to: T0 + 5 * HOUR, bucket: 'day', grouping: 'endpoint' });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ key: 'ep-a', ownerId: 'owner-1', time: T0, timeBilledMs: 4 * HOUR });
    expect(rows[0]?.amount).toBeCloseTo(10.1);
    await store.close();
  });

  it('with no prices counts the seconds at no amount', async () => {
    const store = await ledger();
    const reader = new LedgerReader({ segments: store.usageSegments, prices: NO_PRICES, clock: () => T0 });
    const rows = await reader.query({ from: T0, to: T0 + 5 * HOUR, bucket: 'hour', grouping: 'state' });
    expect(rows.map((r) => [r.key, r.timeBilledMs, r.amount])).toEqual([
      ['starting', HOUR, 0],
      ['active', HOUR, 0],
      ['idle', HOUR, 0],
      ['suspended', HOUR, 0],
    ]);
    await store.close();
  });
});
