/**
 * What the endpoint pages show, computed from the wire shapes (pure, tested): worker counts, the state line, the
 * GPU line, where the endpoint is called with a ready request, filtering and sorting, ages, the traffic's window.
 */
import {
  calledByJobs,
  runsyncCurl,
  type WireEndpoint,
  type WireEndpointMetrics,
  type WireRecentTraffic,
  type WireWorker,
} from '../../src/client/index.js';

export interface WorkerCounts {
  /** Running and healthy: they take requests. */
  ready: number;
  /** Workers the endpoint has now, in any state but stopped or failed. */
  present: number;
  max: number;
}

const GONE = new Set(['stopped', 'failed']);

export function workerCounts(endpoint: Pick<WireEndpoint, 'workers' | 'workerConfig'>): WorkerCounts {
  const live = endpoint.workers.filter((w: WireWorker) => !GONE.has(w.state.state));
  return {
    ready: live.filter((w) => w.state.state === 'running' && w.healthy).length,
    present: live.length,
    max: endpoint.workerConfig.maxNum,
  };
}

/** `serving`, or `failed (CRASH_LOOP): message`. */
export function stateLine(state: { state: string; error: string; message: string }): string {
  const head = state.error === '' ? state.state : `${state.state} (${state.error})`;
  return state.message === '' ? head : `${head}: ${state.message}`;
}

/** `2 x h100-80g`, `1 x any product`. */
export function gpuLine(endpoint: Pick<WireEndpoint, 'products' | 'workerConfig'>): string {
  const products = endpoint.products.map((p) => p.id).join(' or ');
  return `${endpoint.workerConfig.gpuNum} x ${products === '' ? 'any product' : products}`;
}

/** A curl command that calls the endpoint's URL, with the key only where the endpoint needs one. */
export function curlFor(endpoint: Pick<WireEndpoint, 'url' | 'public'>): string {
  const auth = endpoint.public ? '' : ' -H "Authorization: Bearer $CORRAL_API_KEY"';
  return `curl -sS${auth} ${endpoint.url.replace(/\/$/, '')}/`;
}

/** One address the endpoint page shows: what it is, the method it takes, the URL; the curl goes with `withCurl`. */
export interface CallLine {
  label: string;
  method?: 'GET' | 'POST';
  url: string;
  withCurl: boolean;
}

/**
 * Where the endpoint is called, and the curl to copy: an http endpoint's URL; a queue endpoint's jobs API, `/run`
 * and `/runsync` first as RunPod's console shows them (its own URL serves nothing: its workers pull jobs), the curl
 * a `runsync` that posts `{"input": {}}`.
 */
export function callLines(endpoint: Pick<WireEndpoint, 'url' | 'public' | 'type' | 'jobUrls'>): {
  lines: CallLine[];
  curl: string;
} {
  if (!calledByJobs(endpoint))
    return { lines: [{ label: 'URL', url: endpoint.url, withCurl: true }], curl: curlFor(endpoint) };
  const jobs = endpoint.jobUrls;
  return {
    lines: [
      { label: 'Run', method: 'POST', url: jobs.run, withCurl: false },
      { label: 'Run sync', method: 'POST', url: jobs.runsync, withCurl: true },
      { label: 'Status', method: 'GET', url: jobs.status, withCurl: false },
      { label: 'Health', method: 'GET', url: jobs.health, withCurl: false },
    ],
    curl: runsyncCurl(jobs.runsync),
  };
}

export type SortKey = 'newest' | 'name' | 'state' | 'ready';

/** The endpoints whose name, appName, id or state contains `filter` (any case), in the order `sort` says. */
export function filterAndSort<
  E extends Pick<WireEndpoint, 'id' | 'name' | 'appName' | 'state' | 'workers' | 'workerConfig'>,
>(endpoints: E[], filter: string, sort: SortKey): E[] {
  const needle = filter.trim().toLowerCase();
  const kept = endpoints.filter(
    (e) =>
      needle === '' ||
      [e.name, e.appName, e.id, e.state.state, e.state.error].some((text) =>
        text.toLowerCase().includes(needle),
      ),
  );
  // The API lists newest first: a stable sort keeps that order among equals.
  const compare: Record<SortKey, (a: E, b: E) => number> = {
    newest: () => 0,
    name: (a, b) => (a.name || a.appName).localeCompare(b.name || b.appName),
    state: (a, b) => a.state.state.localeCompare(b.state.state),
    ready: (a, b) => workerCounts(b).ready - workerCounts(a).ready,
  };
  return [...kept].sort(compare[sort]);
}

/** `45 s`, `12 min`, `3 h`, `2 d` from two epoch-millisecond times. */
export function age(fromMs: number, nowMs: number): string {
  const seconds = Math.max(0, Math.round((nowMs - fromMs) / 1000));
  if (seconds < 90) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  if (hours < 36) return `${hours} h`;
  return `${Math.round(hours / 24)} d`;
}

/** A latency or a wait in ms for people: `-` before any request. */
export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-';
  return value < 10 ? `${value.toFixed(1)} ms` : `${Math.round(value)} ms`;
}

/** `ready / desired / max` (`-` for a desired count the server has not decided). */
export function workersLine(counts: WorkerCounts, desired: number | null | undefined): string {
  return `${counts.ready} / ${desired ?? '-'} / ${counts.max}`;
}

/** The Endpoints list's traffic of the last minutes: requests per minute, and `p50 / p99`; `-` where unknown. */
export function recentLine(recent: WireRecentTraffic | null | undefined): { rate: string; latency: string } {
  if (!recent) return { rate: '-', latency: '-' };
  const rate = recent.requestsPerMinute;
  return {
    rate: rate === 0 ? '0' : rate < 10 ? rate.toFixed(1) : String(Math.round(rate)),
    latency:
      recent.latencyMs.p50 === null ? '-' : `${ms(recent.latencyMs.p50)} / ${ms(recent.latencyMs.p99)}`,
  };
}

/**
 * What the Traffic section's totals cover: `since <when>`; with several replicas, the replica they are of (the
 * queue, in flight and the charts are every replica's). Empty without a window.
 */
export function trafficWindowLine(
  window: WireEndpointMetrics['window'] | undefined,
  when: (iso: string) => string = (iso) => new Date(iso).toLocaleString(),
): string {
  if (!window) return '';
  const since = `since ${when(window.since)}`;
  return window.replica
    ? `through replica ${window.replica} ${since}; queue, in flight and charts: every replica`
    : since;
}
