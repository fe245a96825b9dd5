/**
 * What the Endpoint page's charts draw, computed from the history's columns (pure, tested): for each chart its
 * series (label, colour, axis, values) over one time axis in seconds, and a line that says the latest values in
 * words (the chart's caption, and its text for screen readers). An endpoint that had jobs in the history gets three
 * more: its jobs queued and in progress, finished by outcome, and their delay and execution times.
 */
import type { WireEndpointHistory, WireJobsHistory } from '../../src/client/index.js';

export interface ChartSeries {
  label: string;
  color: string;
  /** `y`: the left axis; `y2`: the right one. */
  scale: 'y' | 'y2';
  /** Drawn as bars (one count per interval), steps (several counts per interval) or a line (levels). */
  kind: 'bars' | 'steps' | 'line';
  values: (number | null)[];
}

export interface ChartSpec {
  /** Stable id: the DOM's `data-chart`, and the key that keeps the uPlot instance. */
  id: 'requests' | 'latency' | 'queue' | 'workers' | 'cold-starts' | 'jobs' | 'jobs-finished' | 'job-times';
  title: string;
  /** The axes' units. */
  y: string;
  y2?: string;
  series: ChartSeries[];
  /** The latest values in words. */
  summary: string;
}

export interface Charts {
  /** Sample times, in seconds since the epoch (uPlot's x). */
  x: number[];
  charts: ChartSpec[];
  /** Requests in the whole history: the e2e test watches it grow. */
  requests: number;
  /** Jobs finished in the whole history. */
  jobs: number;
}

const COLORS = {
  ok: '#1a7f37',
  clientErrors: '#bf8700',
  serverErrors: '#cf222e',
  p50: '#0a58ca',
  p99: '#8250df',
  depth: '#0a58ca',
  wait: '#bc4c00',
  desired: '#1b1f24',
  cold: '#0a58ca',
  thaw: '#54aeff',
  restore: '#8250df',
  coldMs: '#bc4c00',
  inQueue: '#0a58ca',
  inProgress: '#1a7f37',
  completed: '#1a7f37',
  failed: '#cf222e',
  cancelled: '#57606a',
  timedOut: '#bc4c00',
  retried: '#8250df',
  delayP50: '#0a58ca',
  delayP95: '#54aeff',
  executionP50: '#1a7f37',
  executionP95: '#bf8700',
};

/** A colour per worker state, from waiting (light) to serving (green), gone ones grey or red. */
const STATE_COLORS: Record<string, string> = {
  pending: '#8c959f',
  pulling: '#6e7781',
  starting: '#bf8700',
  running: '#1a7f37',
  unhealthy: '#bc4c00',
  // Idle tiers: resting, woken in milliseconds (frozen) or a few seconds (suspended).
  frozen: '#54aeff',
  suspended: '#8250df',
  draining: '#0a58ca',
  stopped: '#57606a',
  failed: '#cf222e',
};

/** `12.5 ms`, `1.8 s`; `-` for none. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  if (ms >= 1000) return `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s`;
  return ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

const last = <T>(values: T[]): T | undefined => values[values.length - 1];
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/**
 * The time axis's range for the sample times `x` (seconds): the range shown (`spanSeconds`: the one picked, else
 * the smallest that holds the samples, chart-range.ts) ending at the last sample, so that one sample, or a few,
 * sit at the right of it. uPlot's own range pads a single sample by 1,000 days each way (an axis from 2027 to 2029). Undefined
 * without a span or a sample: uPlot's range then.
 */
export function timeRange(x: ArrayLike<number>, spanSeconds: number | null): [number, number] | undefined {
  const last = x[x.length - 1];
  if (last === undefined || spanSeconds === null || spanSeconds <= 0) return undefined;
  return [last - spanSeconds, last];
}

/** `10 s`, `1 min`, `1 h`. */
export function intervalText(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  return seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`;
}

export function chartsOf(history: WireEndpointHistory): Charts {
  const x = history.at.map((ms) => ms / 1000);
  const every = intervalText(history.intervalSeconds ?? 10);
  const r = history.requests;
  const requests = sum(r.ok) + sum(r.clientErrors) + sum(r.serverErrors);
  const states = Object.entries(history.workers).filter(([, values]) => values.some((v) => v > 0));
  const coldCount = sum(history.coldStarts.count);
  // By tier (docs/workers.md, Idle tiers); a server before the tiers sends none: every wake was a cold start.
  const thaws = history.coldStarts.thaws ?? history.coldStarts.count.map(() => 0);
  const restores = history.coldStarts.restores ?? history.coldStarts.count.map(() => 0);
  const cold = history.coldStarts.count.map((n, i) => n - (thaws[i] ?? 0) - (restores[i] ?? 0));
  const coldMeans = history.coldStarts.meanMs.filter((v): v is number => v !== null);
  const charts: ChartSpec[] = [
    {
      id: 'requests',
      title: `Requests per ${every}, by status`,
      y: 'requests',
      series: [
        { label: '< 400', color: COLORS.ok, scale: 'y', kind: 'steps', values: r.ok },
        { label: '4xx', color: COLORS.clientErrors, scale: 'y', kind: 'steps', values: r.clientErrors },
        { label: '5xx', color: COLORS.serverErrors, scale: 'y', kind: 'steps', values: r.serverErrors },
      ],
      summary: `${requests} requests in the chart; the last ${every}: ${last(r.ok) ?? 0} below 400, ${
        last(r.clientErrors) ?? 0
      } 4xx, ${last(r.serverErrors) ?? 0} 5xx`,
    },
    {
      id: 'latency',
      title: 'Latency p50 / p99',
      y: 'ms',
      series: [
        { label: 'p50', color: COLORS.p50, scale: 'y', kind: 'line', values: history.latencyMs.p50 },
        { label: 'p99', color: COLORS.p99, scale: 'y', kind: 'line', values: history.latencyMs.p99 },
      ],
      summary: latestLatency(history),
    },
    {
      id: 'queue',
      title: 'Queue depth and oldest wait',
      y: 'requests',
      y2: 'wait (s)',
      series: [
        { label: 'queued', color: COLORS.depth, scale: 'y', kind: 'line', values: history.queue.depth },
        {
          label: 'oldest wait (s)',
          color: COLORS.wait,
          scale: 'y2',
          kind: 'line',
          values: history.queue.oldestWaitMs.map((ms) => ms / 1000),
        },
      ],
      summary: `now ${last(history.queue.depth) ?? 0} queued, the oldest for ${duration(
        last(history.queue.oldestWaitMs) ?? 0,
      )}; at most ${Math.max(0, ...history.queue.depth)} in the chart`,
    },
    {
      id: 'workers',
      title: 'Workers by state',
      y: 'workers',
      series: [
        ...states.map(([state, values]) => ({
          label: state,
          color: STATE_COLORS[state] ?? '#57606a',
          scale: 'y' as const,
          kind: 'line' as const,
          values,
        })),
        {
          label: 'desired',
          color: COLORS.desired,
          scale: 'y',
          kind: 'line',
          values: history.desiredWorkers,
        },
      ],
      summary: latestWorkers(history, states),
    },
    {
      id: 'cold-starts',
      title: 'Wakes from zero by tier, and their duration',
      y: 'wakes',
      y2: 'duration (s)',
      series: [
        { label: 'cold starts', color: COLORS.cold, scale: 'y', kind: 'bars', values: cold },
        { label: 'thaws', color: COLORS.thaw, scale: 'y', kind: 'bars', values: thaws },
        { label: 'restores', color: COLORS.restore, scale: 'y', kind: 'bars', values: restores },
        {
          label: 'mean duration (s)',
          color: COLORS.coldMs,
          scale: 'y2',
          kind: 'line',
          values: history.coldStarts.meanMs.map((ms) => (ms === null ? null : ms / 1000)),
        },
      ],
      summary:
        coldCount === 0
          ? 'no wake from zero in the chart'
          : `${coldCount} ${coldCount === 1 ? 'wake' : 'wakes'} from zero in the chart, the last took ${duration(
              last(coldMeans),
            )}`,
    },
  ];
  const jobs = history.jobs;
  const finished = jobs
    ? sum(jobs.completed) + sum(jobs.failed) + sum(jobs.cancelled) + sum(jobs.timedOut)
    : 0;
  if (jobs && hadJobs(jobs)) charts.push(...jobCharts(jobs, every, finished));
  return { x, charts, requests, jobs: finished };
}

/** Whether the history shows any job (an endpoint that never had one gets no job charts). */
function hadJobs(jobs: WireJobsHistory): boolean {
  return [
    jobs.inQueue,
    jobs.inProgress,
    jobs.completed,
    jobs.failed,
    jobs.cancelled,
    jobs.timedOut,
    jobs.retried,
  ].some((values) => values.some((v) => v > 0));
}

/** The job charts (docs/jobs.md, Watching jobs): live counts, finished by outcome, and the times in seconds. */
function jobCharts(jobs: WireJobsHistory, every: string, finished: number): ChartSpec[] {
  const seconds = (values: (number | null)[]) => values.map((ms) => (ms === null ? null : ms / 1000));
  const notDone = sum(jobs.failed) + sum(jobs.cancelled) + sum(jobs.timedOut);
  return [
    {
      id: 'jobs',
      title: 'Jobs in the queue and in progress',
      y: 'jobs',
      series: [
        { label: 'in queue', color: COLORS.inQueue, scale: 'y', kind: 'line', values: jobs.inQueue },
        { label: 'in progress', color: COLORS.inProgress, scale: 'y', kind: 'line', values: jobs.inProgress },
      ],
      summary: `now ${last(jobs.inQueue) ?? 0} in the queue, ${last(jobs.inProgress) ?? 0} in progress; at most ${Math.max(
        0,
        ...jobs.inQueue,
      )} queued in the chart`,
    },
    {
      id: 'jobs-finished',
      title: `Jobs finished per ${every}, by outcome`,
      y: 'jobs',
      series: [
        { label: 'completed', color: COLORS.completed, scale: 'y', kind: 'steps', values: jobs.completed },
        { label: 'failed', color: COLORS.failed, scale: 'y', kind: 'steps', values: jobs.failed },
        { label: 'cancelled', color: COLORS.cancelled, scale: 'y', kind: 'steps', values: jobs.cancelled },
        { label: 'timed out', color: COLORS.timedOut, scale: 'y', kind: 'steps', values: jobs.timedOut },
        { label: 'retried', color: COLORS.retried, scale: 'y', kind: 'steps', values: jobs.retried },
      ],
      summary: `${finished} jobs finished in the chart, ${notDone} of them not completed; ${sum(
        jobs.retried,
      )} retried; the last ${every}: ${last(jobs.completed) ?? 0} completed, ${last(jobs.failed) ?? 0} failed`,
    },
    {
      id: 'job-times',
      title: 'Job delay and execution time p50 / p95',
      y: 's',
      series: [
        {
          label: 'delay p50',
          color: COLORS.delayP50,
          scale: 'y',
          kind: 'line',
          values: seconds(jobs.delayMs.p50),
        },
        {
          label: 'delay p95',
          color: COLORS.delayP95,
          scale: 'y',
          kind: 'line',
          values: seconds(jobs.delayMs.p95),
        },
        {
          label: 'execution p50',
          color: COLORS.executionP50,
          scale: 'y',
          kind: 'line',
          values: seconds(jobs.executionMs.p50),
        },
        {
          label: 'execution p95',
          color: COLORS.executionP95,
          scale: 'y',
          kind: 'line',
          values: seconds(jobs.executionMs.p95),
        },
      ],
      summary: latestJobTimes(jobs),
    },
  ];
}

function latestJobTimes(jobs: WireJobsHistory): string {
  const { delayMs, executionMs } = jobs;
  for (let i = delayMs.p50.length - 1; i >= 0; i--) {
    if (delayMs.p50[i] === null || delayMs.p50[i] === undefined) continue;
    const execution =
      executionMs.p50[i] === null || executionMs.p50[i] === undefined
        ? 'none ran'
        : `execution p50 ${duration(executionMs.p50[i])}, p95 ${duration(executionMs.p95[i])}`;
    return `latest delay p50 ${duration(delayMs.p50[i])}, p95 ${duration(delayMs.p95[i])}; ${execution}`;
  }
  return 'no finished job in the chart';
}

function latestLatency(history: WireEndpointHistory): string {
  const { p50, p99 } = history.latencyMs;
  for (let i = p50.length - 1; i >= 0; i--) {
    if (p50[i] !== null && p50[i] !== undefined)
      return `latest p50 ${duration(p50[i])}, p99 ${duration(p99[i])}`;
  }
  return 'no request in the chart';
}

function latestWorkers(history: WireEndpointHistory, states: [string, number[]][]): string {
  const now = states
    .map(([state, values]) => [state, last(values) ?? 0] as const)
    .filter(([, count]) => count > 0)
    .map(([state, count]) => `${count} ${state}`);
  const desired = last(history.desiredWorkers);
  return `now ${now.length === 0 ? 'none' : now.join(', ')}${
    desired === null || desired === undefined ? '' : `; ${desired} desired`
  }`;
}
