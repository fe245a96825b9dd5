/**
 * What the Usage page shows of `GET billing/endpoints` (pure, tested): the ranges it offers and the query of one,
 * the rows of the range summed per endpoint or per state (what the table lists and the CSV download holds, by the
 * client's one CSV rule), the table's figures and total, and the stacked chart's columns: GPU-hours per UTC day,
 * one series per endpoint or state, each stacked on those before it.
 */
import {
  addBillingSums,
  type BillingSums,
  billingSums,
  type WireBillingParams,
  type WireBillingRow,
} from '../../src/client/index.js';

export type UsageBy = 'endpointId' | 'state';

export interface UsageRange {
  days: number;
  label: string;
}

export const USAGE_RANGES: readonly UsageRange[] = [
  { days: 7, label: '7 days' },
  { days: 30, label: '30 days' },
  { days: 90, label: '90 days' },
];
export const DEFAULT_USAGE_DAYS = 30;

const DAY_MS = 86_400_000;

/** The first UTC day of a range of `days` days ending today, epoch milliseconds. */
export function rangeStart(now: number, days: number): number {
  return Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
}

/** The route's query: per UTC day, from the range's first day until now. */
export function usageQuery(now: number, days: number, by: UsageBy): WireBillingParams {
  return {
    bucketSize: 'day',
    grouping: by,
    startTime: new Date(rangeStart(now, days)).toISOString(),
    endTime: new Date(now).toISOString(),
  };
}

/** The key a row is of: its endpoint or its state. */
export function keyOf(row: WireBillingRow, by: UsageBy): string {
  return String(row[by] ?? '-');
}

/**
 * The range's rows summed per key, as the route's rows (so that the CSV is `corral usage --csv`'s): `time` the
 * range's start, the owner where every row of the key has the same one, the largest GPU time first.
 */
export function summedRows(rows: readonly WireBillingRow[], by: UsageBy, from: string): WireBillingRow[] {
  const byKey = new Map<string, WireBillingRow>();
  for (const row of rows) {
    const key = keyOf(row, by);
    const sum = byKey.get(key);
    if (sum === undefined) {
      byKey.set(key, { ...row, time: from, gpuSeconds: { ...row.gpuSeconds } });
      continue;
    }
    const sums = addBillingSums(billingSums(sum), billingSums(row));
    sum.timeBilledMs = sums.timeBilledMs;
    sum.amount = sums.amount;
    sum.currency = sums.currency;
    if (sum.ownerId !== row.ownerId) sum.ownerId = null;
    for (const state of Object.keys(row.gpuSeconds) as (keyof WireBillingRow['gpuSeconds'])[]) {
      sum.gpuSeconds[state] = (sum.gpuSeconds[state] ?? 0) + row.gpuSeconds[state];
    }
  }
  return [...byKey.values()].sort(
    (a, b) =>
      billingSums(b).gpuSeconds - billingSums(a).gpuSeconds || keyOf(a, by).localeCompare(keyOf(b, by)),
  );
}

export interface UsageTableRow {
  key: string;
  workerHours: string;
  gpuHours: string;
  amount: string;
}

/** One line per summed row, then the total (`TOTAL`); hours with 3 decimals and the amount with its currency. */
export function usageTable(
  summed: readonly WireBillingRow[],
  by: UsageBy,
): { rows: UsageTableRow[]; total: UsageTableRow | undefined } {
  const line = (key: string, sums: BillingSums): UsageTableRow => ({
    key,
    workerHours: hoursText(sums.timeBilledMs / 1000),
    gpuHours: hoursText(sums.gpuSeconds),
    amount: `${sums.amount.toFixed(2)} ${sums.currency}`,
  });
  const rows = summed.map((row) => line(keyOf(row, by), billingSums(row)));
  const total =
    summed.length === 0 ? undefined : line('Total', summed.map(billingSums).reduce(addBillingSums));
  return { rows, total };
}

const hoursText = (seconds: number): string => (seconds / 3600).toFixed(3);

export interface UsageSeries {
  label: string;
  color: string;
  /** GPU-hours of this key per day. */
  values: number[];
  /** The values with those of every series before it added: the top of its part of each day's bar. */
  stacked: number[];
}

export interface UsageChart {
  /** Each day's start, seconds since the epoch (uPlot's x). */
  x: number[];
  /** In the order of the summed rows: the largest at the bottom of the stack. */
  series: UsageSeries[];
}

/** A colour per worker state, as the Endpoint page's workers chart colours them. */
const STATE_COLORS: Record<string, string> = {
  downloading: '#6e7781',
  starting: '#bf8700',
  active: '#1a7f37',
  idle: '#0a58ca',
  frozen: '#54aeff',
  suspended: '#8250df',
};
const PALETTE = ['#0a58ca', '#1a7f37', '#bf8700', '#8250df', '#cf222e', '#54aeff', '#bc4c00', '#57606a'];

/** Every day of the range (empty ones 0), one series per key of `summed`, stacked. */
export function usageChart(
  rows: readonly WireBillingRow[],
  summed: readonly WireBillingRow[],
  by: UsageBy,
  from: number,
  days: number,
): UsageChart {
  const x = Array.from({ length: days }, (_, i) => (from + i * DAY_MS) / 1000);
  const keys = summed.map((row) => keyOf(row, by));
  const values = keys.map(() => x.map(() => 0));
  for (const row of rows) {
    const day = Math.floor((Date.parse(row.time) - from) / DAY_MS);
    const series = values[keys.indexOf(keyOf(row, by))];
    if (series === undefined || day < 0 || day >= days) continue;
    series[day] = (series[day] ?? 0) + billingSums(row).gpuSeconds / 3600;
  }
  const below = x.map(() => 0);
  const series = keys.map((key, i) => {
    const own = values[i] as number[];
    const stacked = own.map((value, day) => {
      below[day] = (below[day] ?? 0) + value;
      return below[day] as number;
    });
    const color = by === 'state' ? (STATE_COLORS[key] ?? '#57606a') : (PALETTE[i % PALETTE.length] as string);
    return { label: key, color, values: own, stacked };
  });
  return { x, series };
}
