/**
 * `corral limits`: the allowed ranges of endpoint parameters, as a table, then the caller's quotas with their use,
 * where each comes from and why they apply (`--json`: the ranges only, as `GET endpoint/limit` answers).
 */
import type { Command } from 'commander';
import type { WireLimits, WireQuotaReport } from '../client/index.js';
import { type LimitRange, wireLimitKeys } from '../contract/limits.js';
import type { WireBudgetStanding, WireRate, WireRates } from '../contract/quota.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { type Column, formatTable } from './table.js';

export function makeLimitsCommand(deps: CliDeps): Command {
  return addClientOptions(
    newCommand('limits', deps).description('show the allowed ranges of endpoint parameters and your quotas'),
  ).action((_opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output, json }) => {
      const [limits, quota] = await Promise.all([client.getLimits(), json ? undefined : client.getQuota()]);
      output(limits, () => `${formatLimits(limits)}${quota ? `\n${formatQuota(quota)}` : ''}`);
    }),
  );
}

/** [label, the range it shows, unit]; the range's wire keys come from the contract. */
const ROWS: readonly (readonly [string, LimitRange, string])[] = [
  ['rootfsSize', 'rootfsSizeGB', 'GB'],
  ['local volume size', 'localVolumeSizeGB', 'GB'],
  ['workers (minNum/maxNum)', 'workers', ''],
  ['freeTimeout', 'idleTimeoutSeconds', 's'],
  ['maxConcurrent', 'concurrency', ''],
  ['queue wait (policy queue)', 'queueWaitSeconds', 's'],
  ['requests (policy concurrency)', 'requestCount', ''],
  ['gpuNum', 'gpus', ''],
  ['requestTimeout', 'requestTimeoutSeconds', 's'],
];

export function formatLimits(limits: WireLimits): string {
  const cell = (key: keyof WireLimits | undefined) => {
    const value = key === undefined ? undefined : limits[key];
    return typeof value === 'number' ? String(value) : '-';
  };
  const columns: Column[] = [
    { header: 'PARAMETER' },
    { header: 'MIN', align: 'right' },
    { header: 'MAX', align: 'right' },
    { header: 'FREE', align: 'right' },
    { header: 'UNIT' },
  ];
  const rows = ROWS.map(([label, range, unit]) => {
    const keys = wireLimitKeys(range);
    return [label, cell(keys.min), cell(keys.max), cell(keys.free), unit];
  });
  const cuda = Array.isArray(limits.cudaVersionList) ? limits.cudaVersionList.join(', ') : '';
  return `${formatTable(columns, rows)}\nCUDA versions: ${cuda === '' ? '-' : cuda}\n`;
}

/** Each quota's use and limit, where it comes from, and the one sentence that says which apply and why. */
export function formatQuota(report: WireQuotaReport): string {
  const columns: Column[] = [
    { header: 'QUOTA' },
    { header: 'USED', align: 'right' },
    { header: 'LIMIT', align: 'right' },
    { header: 'FROM' },
  ];
  const rows = Object.entries(report.quota).map(([name, limit]) => [
    name,
    String(report.used[name as keyof WireQuotaReport['used']] ?? '-'),
    String(limit),
    report.sources?.[name as keyof WireQuotaReport['sources']] ?? '-',
  ]);
  const why = report.reason === undefined ? '' : `Quotas: ${report.source} (${report.reason})\n`;
  return `${formatTable(columns, rows)}\n${why}${formatBudget(report.budget)}${formatRates(report.rates)}`;
}

/** The budget that binds the caller, loud from 80 % of it (a server without budgets sends none). */
function formatBudget(budget: WireBudgetStanding | undefined): string {
  if (!budget) return '';
  const mark = budget.state === 'exceeded' ? 'EXCEEDED: ' : budget.state === 'warning' ? 'WARNING: ' : '';
  return `Budget: ${mark}${budget.message}\n`;
}

/** The rates the caller's requests are held to, one line each (a server before them sends none). */
function formatRates(rates: WireRates | undefined): string {
  if (!rates) return '';
  const line = (what: string, rate: WireRate) =>
    `  ${what}: ${rate.requestsPerSecond} a second per ${rate.per}, bursts of ${rate.burst}, ` +
    `one more per ${rate.bytesPerToken / 1024} KiB of body\n`;
  return (
    'Rates (past them: 429 RATE_LIMITED with Retry-After):\n' +
    line('API requests', rates.api) +
    (rates.jobSubmissions ? line('job submissions (run, runsync, retry)', rates.jobSubmissions) : '')
  );
}
