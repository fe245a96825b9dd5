import type { Command } from 'commander';
import type { WireLimits } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { type Column, formatTable } from './table.js';

/** `corral limits`: the allowed ranges of endpoint parameters. */
export function makeLimitsCommand(deps: CliDeps): Command {
  return addClientOptions(
    newCommand('limits', deps).description('show the allowed ranges of endpoint parameters'),
  ).action((_opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const limits = await client.getLimits();
      output(limits, () => formatLimits(limits));
    }),
  );
}

/** [label, wire stem (min<stem>, max<stem>, free<stem>), unit] */
const ROWS: readonly (readonly [string, string, string])[] = [
  ['rootfsSize', 'RootfsSize', 'GB'],
  ['local volume size', 'LocalVolumeSize', 'GB'],
  ['workers (minNum/maxNum)', 'WorkerNum', ''],
  ['freeTimeout', 'FreeTimeout', 's'],
  ['maxConcurrent', 'ConcurrencyNum', ''],
  ['queue wait (policy queue)', 'QueueWaitTime', 's'],
  ['requests (policy concurrency)', 'RequestNum', ''],
  ['gpuNum', 'GPUNum', ''],
  ['requestTimeout', 'RequestTimeout', 's'],
];

export function formatLimits(limits: WireLimits): string {
  const record = limits as unknown as Record<string, unknown>;
  const cell = (key: string) => {
    const value = record[key];
    return typeof value === 'number' ? String(value) : '-';
  };
  const columns: Column[] = [
    { header: 'PARAMETER' },
    { header: 'MIN', align: 'right' },
    { header: 'MAX', align: 'right' },
    { header: 'FREE', align: 'right' },
    { header: 'UNIT' },
  ];
  const rows = ROWS.map(([label, stem, unit]) => [
    label,
    cell(`min${stem}`),
    cell(`max${stem}`),
    cell(`free${stem}`),
    unit,
  ]);
  const cuda = Array.isArray(limits.cudaVersionList) ? limits.cudaVersionList.join(', ') : '';
  return `${formatTable(columns, rows)}\nCUDA versions: ${cuda === '' ? '-' : cuda}\n`;
}
