/**
 * What a reader of `GET billing/endpoints` shows of its rows, one rule for `corral usage` and the dashboard's usage
 * page: a row's sums (worker time, GPU-seconds over every state, amount and currency) and their total, and the CSV
 * a billing system reads (RunPod's fields, Corral's owner and each state's GPU-seconds).
 */
import { USAGE_STATES } from '../ports/usage.js';
import type { WireBillingRow, WireGrouping } from './billing.js';

export interface BillingSums {
  timeBilledMs: number;
  /** GPU-seconds, every state. */
  gpuSeconds: number;
  amount: number;
  currency: string;
}

export function billingSums(row: WireBillingRow): BillingSums {
  const gpuSeconds = USAGE_STATES.reduce((sum, state) => sum + (row.gpuSeconds[state] ?? 0), 0);
  return { timeBilledMs: row.timeBilledMs, gpuSeconds, amount: row.amount, currency: row.currency };
}

/** Two sums added; rows in two currencies add to `mixed currencies`. */
export function addBillingSums(a: BillingSums, b: BillingSums): BillingSums {
  return {
    timeBilledMs: a.timeBilledMs + b.timeBilledMs,
    gpuSeconds: a.gpuSeconds + b.gpuSeconds,
    amount: a.amount + b.amount,
    currency: a.currency === b.currency ? a.currency : 'mixed currencies',
  };
}

/** One header line, then one line per row: RunPod's fields, Corral's owner and each state's GPU-seconds. */
export function usageCsv(rows: readonly WireBillingRow[], grouping: WireGrouping): string {
  const keyColumns = grouping === 'ownerId' ? ['ownerId'] : [grouping, 'ownerId'];
  const header = [
    'time',
    ...keyColumns,
    'timeBilledMs',
    ...USAGE_STATES.map((state) => `gpuSeconds.${state}`),
    'amount',
    'currency',
  ];
  const lines = rows.map((row) => [
    row.time,
    ...keyColumns.map((column) => String(row[column as WireGrouping] ?? '')),
    String(row.timeBilledMs),
    ...USAGE_STATES.map((state) => String(row.gpuSeconds[state] ?? 0)),
    String(row.amount),
    row.currency,
  ]);
  return [header, ...lines].map((cells) => `${cells.map(csvCell).join(',')}\n`).join('');
}

/** RFC 4180: a cell with a comma, a quote or a line break is quoted, its quotes doubled. */
function csvCell(cell: string): string {
  return /[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}
