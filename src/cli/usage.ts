/**
 * `corral usage`: the usage ledger's GPU time and its price (docs/usage.md), over RunPod's billing route
 * (`GET billing/endpoints`): a table per bucket and endpoint, GPU type, owner or state with a total, or CSV for a
 * billing system.
 */
import { type Command, Option } from 'commander';
import {
  addBillingSums,
  type BillingSums,
  billingSums,
  usageCsv,
  type WireBillingParams,
  type WireBillingRow,
  type WireGrouping,
} from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { CliError } from './output.js';
import { formatTable } from './table.js';

const BY: Record<string, { grouping: WireGrouping; header: string }> = {
  endpoint: { grouping: 'endpointId', header: 'ENDPOINT' },
  gpu: { grouping: 'gpuTypeId', header: 'GPU' },
  owner: { grouping: 'ownerId', header: 'OWNER' },
  state: { grouping: 'state', header: 'STATE' },
};
const BUCKETS = ['hour', 'day', 'week', 'month'] as const;
type Bucket = (typeof BUCKETS)[number];

interface UsageOptions {
  from?: string;
  to?: string;
  by: string;
  bucket: Bucket;
  endpoint?: string;
  owner?: string;
  csv?: boolean;
}

export function makeUsageCommand(deps: CliDeps): Command {
  return addClientOptions(
    newCommand('usage', deps)
      .description("your workers' GPU time and its price, by day and endpoint (an admin key: every owner's)")
      .option(
        '--from <time>',
        'ISO 8601 (2026-11-01) or a time ago (30m, 24h, 7d, 4w); default a week before --to',
      )
      .option('--to <time>', 'ISO 8601 or a time ago, exclusive; default now')
      .addOption(new Option('--by <group>', 'one row per').choices(Object.keys(BY)).default('endpoint'))
      .addOption(new Option('--bucket <span>', 'the span of each row (UTC)').choices(BUCKETS).default('day'))
      .option('--endpoint <id>', 'only this endpoint')
      .option('--owner <id>', "admin keys only: only this owner's workers")
      .option('--csv', 'comma-separated values, one line per row, for a spreadsheet or a billing system'),
  ).action((_opts, command: Command) =>
    runWithClient<UsageOptions>(deps, command, async ({ client, opts, output }) => {
      const by = BY[opts.by] as (typeof BY)[string];
      const params = usageParams(opts, by.grouping, deps.now());
      const rows = await client.getBilling(params);
      if (opts.csv === true) deps.stdout(usageCsv(rows, by.grouping));
      else output(rows, () => usageTable(rows, by, opts.bucket));
    }),
  );
}

/** The route's query from the command's options; a time that is neither ISO 8601 nor a time ago is refused. */
export function usageParams(opts: UsageOptions, grouping: WireGrouping, now: number): WireBillingParams {
  const params: WireBillingParams = { bucketSize: opts.bucket, grouping };
  if (opts.from !== undefined) params.startTime = timeOption('--from', opts.from, now);
  if (opts.to !== undefined) params.endTime = timeOption('--to', opts.to, now);
  if (opts.endpoint !== undefined) params.endpointId = opts.endpoint;
  if (opts.owner !== undefined) params.ownerId = opts.owner;
  return params;
}

const AGO_UNITS_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

function timeOption(flag: string, value: string, now: number): string {
  const ago = /^(\d+)([mhdw])$/.exec(value.trim());
  if (ago) return new Date(now - Number(ago[1]) * (AGO_UNITS_MS[ago[2] as string] as number)).toISOString();
  const at = Date.parse(value);
  if (!Number.isFinite(at)) {
    throw new CliError(
      `${flag} must be an ISO 8601 time (2026-11-01, 2026-11-01T12:00Z) or a time ago (7d), got "${value}"`,
    );
  }
  return new Date(at).toISOString();
}

function usageTable(
  rows: readonly WireBillingRow[],
  by: { grouping: WireGrouping; header: string },
  bucket: Bucket,
) {
  if (rows.length === 0) return 'No usage in this range.\n';
  const owners = new Set(rows.map((row) => row.ownerId));
  const withOwner = by.grouping !== 'ownerId' && owners.size > 1;
  const line = (time: string, key: string, owner: string, r: BillingSums) => [
    time,
    key,
    ...(withOwner ? [owner] : []),
    hours(r.timeBilledMs / 1000),
    hours(r.gpuSeconds),
    `${r.amount.toFixed(2)} ${r.currency}`,
  ];
  const body = rows.map((row) =>
    line(bucketText(row.time, bucket), String(row[by.grouping] ?? '-'), row.ownerId ?? '-', billingSums(row)),
  );
  const total = rows.map(billingSums).reduce(addBillingSums);
  return formatTable(
    [
      bucket.toUpperCase(),
      by.header,
      ...(withOwner ? ['OWNER'] : []),
      { header: 'WORKER HOURS', align: 'right' },
      { header: 'GPU HOURS', align: 'right' },
      { header: 'AMOUNT', align: 'right' },
    ],
    [...body, line('TOTAL', '', '', total)],
  );
}

const hours = (seconds: number): string => (seconds / 3600).toFixed(3);

/** A bucket's start as a person reads it: `2026-11-02 13:00` for hours, the day for days and weeks, the month. */
function bucketText(iso: string, bucket: Bucket): string {
  if (bucket === 'hour') return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
  return bucket === 'month' ? iso.slice(0, 7) : iso.slice(0, 10);
}
