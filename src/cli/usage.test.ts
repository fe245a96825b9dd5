import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import type { WireBillingRow } from '../client/index.js';
import { makeUsageCommand } from './usage.js';

afterEach(() => {
  process.exitCode = undefined;
});

const NO_SECONDS = { downloading: 0, starting: 0, active: 0, idle: 0, frozen: 0, suspended: 0 };

const row = (over: Partial<WireBillingRow>): WireBillingRow => ({
  time: '2026-11-02T00:00:00.000Z',
  amount: 0,
  timeBilledMs: 0,
  diskSpaceBilledGb: 0,
  ownerId: 'owner-a',
  gpuSeconds: NO_SECONDS,
  currency: 'EUR',
  ...over,
});

const byEndpoint: WireBillingRow[] = [
  row({
    endpointId: 'ep-a',
    amount: 6,
    timeBilledMs: 3_600_000,
    gpuSeconds: { ...NO_SECONDS, starting: 3_600, active: 3_600 },
  }),
  row({
    time: '2026-11-03T00:00:00.000Z',
    endpointId: 'ep-b',
    amount: 1.5,
    timeBilledMs: 900_000,
    gpuSeconds: { ...NO_SECONDS, idle: 1_800 },
  }),
];

describe('corral usage', () => {
  it("prints a day's GPU time and price per endpoint, then the total; a week back by default", async () => {
    const h = makeHarness({ routes: { 'GET billing/endpoints': { body: byEndpoint } } });
    await runCommand(makeUsageCommand(h.deps), []);
    expect(h.err()).toBe('');
    expect(h.requests[0]?.query).toEqual({ bucketSize: 'day', grouping: 'endpointId' });
    expect(h.out()).toBe(
      [
        'DAY         ENDPOINT  WORKER HOURS  GPU HOURS    AMOUNT',
        '2026-11-02  ep-a             1.000      2.000  6.00 EUR',
        '2026-11-03  ep-b             0.250      0.500  1.50 EUR',
        'TOTAL                        1.250      2.500  7.50 EUR',
        '',
      ].join('\n'),
    );
  });

  it('asks the range given as ISO 8601 or as a time ago, the bucket and the endpoint', async () => {
    const h = makeHarness({ routes: { 'GET billing/endpoints': { body: [] } } });
    const now = h.deps.now();
    await runCommand(makeUsageCommand(h.deps), [
      '--from',
      '7d',
      '--to',
      '2026-11-03',
      '--bucket',
      'hour',
      '--endpoint',
      'ep-a',
    ]);
    expect(h.requests[0]?.query).toEqual({
      bucketSize: 'hour',
      grouping: 'endpointId',
      startTime: new Date(now - 7 * 86_400_000).toISOString(),
      endTime: '2026-11-03T00:00:00.000Z',
      endpointId: 'ep-a',
    });
    expect(h.out()).toBe('No usage in this range.\n');
  });

  it('splits by state, and names each owner when the rows are of several (an admin key)', async () => {
    const byState = [
      row({
        state: 'active',
        amount: 3,
        timeBilledMs: 1_800_000,
        gpuSeconds: { ...NO_SECONDS, active: 3_600 },
      }),
      row({ state: 'active', ownerId: 'owner-b', amount: 1, timeBilledMs: 600_000 }),
    ];
    const h = makeHarness({ routes: { 'GET billing/endpoints': { body: byState } } });
    await runCommand(makeUsageCommand(h.deps), ['--by', 'state', '--bucket', 'month']);
    expect(h.requests[0]?.query).toMatchObject({ grouping: 'state', bucketSize: 'month' });
    expect(h.out().split('\n').slice(0, 3)).toEqual([
      'MONTH    STATE   OWNER    WORKER HOURS  GPU HOURS    AMOUNT',
      '2026-11  active  owner-a         0.500      1.000  3.00 EUR',
      '2026-11  active  owner-b         0.167      0.000  1.00 EUR',
    ]);
  });

  it('writes CSV with a header and each state apart, for a billing system', async () => {
    const h = makeHarness({ routes: { 'GET billing/endpoints': { body: byEndpoint } } });
    await runCommand(makeUsageCommand(h.deps), ['--csv']);
    expect(h.out().split('\n')).toEqual([
      'time,endpointId,ownerId,timeBilledMs,gpuSeconds.downloading,gpuSeconds.starting,gpuSeconds.active,' +
        'gpuSeconds.idle,gpuSeconds.frozen,gpuSeconds.suspended,amount,currency',
      '2026-11-02T00:00:00.000Z,ep-a,owner-a,3600000,0,3600,3600,0,0,0,6,EUR',
      '2026-11-03T00:00:00.000Z,ep-b,owner-a,900000,0,0,0,1800,0,0,1.5,EUR',
      '',
    ]);
  });

  it('refuses a time it cannot read, before asking the server', async () => {
    const h = makeHarness({ routes: { 'GET billing/endpoints': { body: [] } } });
    await runCommand(makeUsageCommand(h.deps), ['--from', 'last tuesday']);
    expect(h.requests).toEqual([]);
    expect(h.err()).toContain('--from must be an ISO 8601 time');
    expect(process.exitCode).toBe(1);
  });

  it("says what the server refused, in the server's words", async () => {
    const refusal = {
      code: 400,
      reason: 'INVALID_QUERY',
      message: 'the range may span at most 366 days',
      metadata: { field: 'startTime' },
    };
    const h = makeHarness({ routes: { 'GET billing/endpoints': { status: 400, body: refusal } } });
    await runCommand(makeUsageCommand(h.deps), ['--from', '2020-01-01']);
    expect(h.err()).toContain('the range may span at most 366 days');
    expect(process.exitCode).toBe(1);
  });
});
