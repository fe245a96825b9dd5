/**
 * What the Endpoint page's charts draw, computed from the history's columns (pure, tested): for each chart its
 * series (label, colour, axis, values) over one time axis in seconds, and a line that says the latest values in
 * words (the chart's caption, and its text for screen readers).
 */
import type { WireEndpointHistory } from '../../src/client/index.js';

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
  id: 'requests' | 'latency' | 'queue' | 'workers' | 'cold-starts';
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
  /** The window the history keeps, in seconds (null: unknown): the time axis always spans it (`timeRange`). */
  spanSeconds: number | null;
  charts: ChartSpec[];
  /** Requests in the whole history: the e2e test watches it grow. */
  requests: number;
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
  coldMs: '#bc4c00',
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
 * The time axis's range for the sample times `x` (seconds): the window the history keeps (`spanSeconds`, its
 * interval x its capacity) ending at the last sample, so that one sample, or a few, sit at the right of the hour
 * shown. uPlot's own range pads a single sample by 1,000 days each way (an axis from 2027 to 2029). Undefined
 * without a span or a sample: uPlot's range then.
 */
export function timeRange(x: ArrayLike<number>, spanSeconds: number | null): [number, number] | undefined {
  const last = x[x.length - 1];
  if (last === undefined || spanSeconds === null || spanSeconds <= 0) return undefined;
  return [last - spanSeconds, last];
}

/** `10 s`, `1 min`. */
export function intervalText(seconds: number): string {
  return seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`;
}

export function chartsOf(history: WireEndpointHistory): Charts {
  const x = history.at.map((ms) => ms / 1000);
  const every = intervalText(history.intervalSeconds ?? 10);
  const r = history.requests;
  const requests = sum(r.ok) + sum(r.clientErrors) + sum(r.serverErrors);
  const states = Object.entries(history.workers).filter(([, values]) => values.some((v) => v > 0));
  const coldCount = sum(history.coldStarts.count);
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
      title: 'Cold starts and their duration',
      y: 'wakes',
      y2: 'duration (s)',
      series: [
        { label: 'wakes', color: COLORS.cold, scale: 'y', kind: 'bars', values: history.coldStarts.count },
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
  const spanSeconds = history.intervalSeconds ? history.intervalSeconds * history.capacity : null;
  return { x, spanSeconds, charts, requests };
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
