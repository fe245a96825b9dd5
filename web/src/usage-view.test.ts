import { describe, expect, it } from 'vitest';
import { usageCsv, type WireBillingRow } from '../../src/client/index.js';
import { rangeStart, summedRows, usageChart, usageQuery, usageTable } from './usage-view.js';

const NO_SECONDS = { downloading: 0, starting: 0, active: 0, idle: 0, frozen: 0, suspended: 0 };
const DAY = '2026-11-02T00:00:00.000Z';
const NEXT_DAY = '2026-11-03T00:00:00.000Z';

const row = (over: Partial<WireBillingRow>): WireBillingRow => ({
  time: DAY,
  amount: 0,
  timeBilledMs: 0,
  diskSpaceBilledGb: 0,
  ownerId: 'owner-a',
  gpuSeconds: NO_SECONDS,
  currency: 'EUR',
  ...over,
});

// Two days of ep-a (2 GPUs), one of ep-b.
const rows: WireBillingRow[] = [
  row({
    endpointId: 'ep-a',
    amount: 6,
    timeBilledMs: 3_600_000,
    gpuSeconds: { ...NO_SECONDS, starting: 3_600, active: 3_600 },
  }),
  row({ endpointId: 'ep-b', amount: 1, timeBilledMs: 1_800_000, gpuSeconds: { ...NO_SECONDS, idle: 1_800 } }),
  row({
    time: NEXT_DAY,
    endpointId: 'ep-a',
    amount: 1.5,
    timeBilledMs: 900_000,
    gpuSeconds: { ...NO_SECONDS, active: 1_800 },
  }),
];

describe("the usage page's figures", () => {
  it('asks for days from the first UTC day of the range until now', () => {
    const now = Date.parse('2026-11-30T15:20:00Z');
    expect(usageQuery(now, 30, 'state')).toEqual({
      bucketSize: 'day',
      grouping: 'state',
      startTime: '2026-11-01T00:00:00.000Z',
      endTime: '2026-11-30T15:20:00.000Z',
    });
  });

  it('sums the range per endpoint, the largest first, with a total in hours and money', () => {
    const summed = summedRows(rows, 'endpointId', '2026-11-01T00:00:00.000Z');
    expect(summed.map((r) => [r.endpointId, r.timeBilledMs, r.amount, r.gpuSeconds.active])).toEqual([
      ['ep-a', 4_500_000, 7.5, 5_400],
      ['ep-b', 1_800_000, 1, 0],
    ]);
    expect(usageTable(summed, 'endpointId')).toEqual({
      rows: [
        { key: 'ep-a', workerHours: '1.250', gpuHours: '2.500', amount: '7.50 EUR' },
        { key: 'ep-b', workerHours: '0.500', gpuHours: '0.500', amount: '1.00 EUR' },
      ],
      total: { key: 'Total', workerHours: '1.750', gpuHours: '3.000', amount: '8.50 EUR' },
    });
    expect(usageTable([], 'endpointId')).toEqual({ rows: [], total: undefined });
  });

  it('downloads the summed rows as corral usage --csv writes them, one line per table row', () => {
    const summed = summedRows(rows, 'endpointId', '2026-11-01T00:00:00.000Z');
    expect(usageCsv(summed, 'endpointId').split('\n')).toEqual([
      'time,endpointId,ownerId,timeBilledMs,gpuSeconds.downloading,gpuSeconds.starting,gpuSeconds.active,gpuSeconds.idle,gpuSeconds.frozen,gpuSeconds.suspended,amount,currency',
      '2026-11-01T00:00:00.000Z,ep-a,owner-a,4500000,0,3600,5400,0,0,0,7.5,EUR',
      '2026-11-01T00:00:00.000Z,ep-b,owner-a,1800000,0,0,0,1800,0,0,1,EUR',
      '',
    ]);
  });

  it("names no owner for a key several owners' rows share, and says so of mixed currencies", () => {
    const summed = summedRows(
      [
        row({ state: 'idle', ownerId: 'owner-a', gpuSeconds: { ...NO_SECONDS, idle: 10 } }),
        row({ state: 'idle', ownerId: 'owner-b', currency: 'USD', gpuSeconds: { ...NO_SECONDS, idle: 5 } }),
      ],
      'state',
      DAY,
    );
    expect(summed).toHaveLength(1);
    expect(summed[0]).toMatchObject({ state: 'idle', ownerId: null, currency: 'mixed currencies' });
    expect(summed[0]?.gpuSeconds.idle).toBe(15);
  });

  it('draws every day of the range, each key stacked on the larger ones below it', () => {
    const from = Date.parse(DAY);
    const summed = summedRows(rows, 'endpointId', DAY);
    const chart = usageChart(rows, summed, 'endpointId', from, 3);
    expect(chart.x).toEqual([from / 1000, from / 1000 + 86_400, from / 1000 + 2 * 86_400]);
    expect(chart.series.map((s) => [s.label, s.values, s.stacked])).toEqual([
      ['ep-a', [2, 0.5, 0], [2, 0.5, 0]],
      ['ep-b', [0.5, 0, 0], [2.5, 0.5, 0]],
    ]);
    expect(rangeStart(Date.parse('2026-11-04T23:59:00Z'), 3)).toBe(from);
  });

  it('colours states as the workers chart does', () => {
    const stateRows = [
      row({ state: 'active', gpuSeconds: { ...NO_SECONDS, active: 7_200 } }),
      row({ state: 'idle', gpuSeconds: { ...NO_SECONDS, idle: 3_600 } }),
    ];
    const chart = usageChart(stateRows, summedRows(stateRows, 'state', DAY), 'state', Date.parse(DAY), 1);
    expect(chart.series.map((s) => [s.label, s.color, s.stacked])).toEqual([
      ['active', '#1a7f37', [2]],
      ['idle', '#0a58ca', [3]],
    ]);
  });
});
