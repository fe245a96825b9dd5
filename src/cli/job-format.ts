/** How `corral jobs` prints jobs: one job's status and output, a list with counts by status, times in ms or s. */
import { JOB_STATUSES, type WireJob, type WireJobList } from '../client/index.js';
import { formatKeyValues, formatTable } from './table.js';

/** `850 ms`, `12.3 s`; empty when unknown. */
export function formatMs(ms: number | undefined): string {
  if (ms === undefined) return '';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A job's output as printed on its own: a string as it is, anything else as indented JSON. */
export function formatOutput(output: unknown): string {
  const text = typeof output === 'string' ? output : JSON.stringify(output, null, 2);
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** A job's error in one line (the SDK sends a string or an object). */
export function formatJobError(error: unknown): string {
  return typeof error === 'string' ? error : JSON.stringify(error);
}

export function formatJob(job: WireJob): string {
  const pairs: [string, string][] = [
    ['ID', job.id],
    ['Status', job.status],
  ];
  if (job.delayTime !== undefined) pairs.push(['Delay', formatMs(job.delayTime)]);
  if (job.executionTime !== undefined) pairs.push(['Execution', formatMs(job.executionTime)]);
  if (job.workerId !== undefined) pairs.push(['Worker', job.workerId]);
  if (job.error !== undefined) pairs.push(['Error', formatJobError(job.error)]);
  const head = formatKeyValues(pairs);
  return job.output === undefined ? head : `${head}Output:\n${formatOutput(job.output)}`;
}

export function formatJobList(list: WireJobList): string {
  const counts = JOB_STATUSES.map((status) => `${status} ${list.counts[status] ?? 0}`).join('  ');
  if (list.jobs.length === 0) return `${counts}\nNo jobs.\n`;
  const table = formatTable(
    [
      'ID',
      'STATUS',
      { header: 'DELAY', align: 'right' },
      { header: 'EXECUTION', align: 'right' },
      'WORKER',
      'CREATED',
    ],
    list.jobs.map((j) => [
      j.id,
      j.status,
      formatMs(j.delayTime),
      formatMs(j.executionTime),
      j.workerId ?? '',
      j.createdAt ?? '',
    ]),
  );
  return `${counts}\n${table}`;
}
