/** Human-readable renderings of endpoints and their events: what `corral endpoints` prints without --json. */
import {
  calledByJobs,
  runsyncCurl,
  type WireDistribution,
  type WireEndpoint,
  type WireEndpointMetrics,
  type WireEvent,
  type WireState,
  type WireUsageTotals,
  type WireWakes,
} from '../client/index.js';
import { formatKeyValues, formatTable } from './table.js';
import { healthText } from './worker-health.js';

export function formatEndpointList(endpoints: readonly WireEndpoint[], total: number): string {
  if (endpoints.length === 0)
    return total > 0 ? `No endpoints on this page (${total} in total).\n` : 'No endpoints.\n';
  const rows = endpoints.map((e) => [
    e.id,
    e.name,
    e.type,
    stateText(e.state),
    workersText(e),
    `${e.workerConfig.minNum}-${e.workerConfig.maxNum}`,
    e.image.image,
    // Where it is called: a queue endpoint's own URL serves nothing.
    calledByJobs(e) ? e.jobUrls.runsync : e.url,
  ]);
  const table = formatTable(['ID', 'NAME', 'TYPE', 'STATE', 'READY', 'SCALE', 'IMAGE', 'URL'], rows);
  return total > endpoints.length ? `${table}Showing ${endpoints.length} of ${total} endpoints.\n` : table;
}

/**
 * The endpoint's path-form URL (docs/gateway.md), for clients that cannot resolve `*.localhost`: shown when the
 * host form is under `localhost`, as the gateway's port on the host the API answers at (its `log` link's host).
 */
export function pathFormUrl(e: WireEndpoint): string | undefined {
  let url: URL;
  let api: URL;
  try {
    url = new URL(e.url);
    api = new URL(e.log);
  } catch {
    return undefined;
  }
  if (!url.hostname.endsWith('.localhost')) return undefined;
  return `${url.protocol}//${api.hostname}${url.port === '' ? '' : `:${url.port}`}/e/${e.appName}/`;
}

/**
 * A request to paste into a shell: curl on the endpoint's URL (or `at`, its path form) with the key the CLI uses,
 * which the gateway needs unless the endpoint is public (docs/gateway.md, Keys).
 */
export function exampleRequest(e: WireEndpoint, at: string = e.url): string {
  const url = at.endsWith('/') ? at : `${at}/`;
  return e.public ? `curl ${url}` : `curl -H "Authorization: Bearer $CORRAL_API_KEY" ${url}`;
}

function pathForm(e: WireEndpoint): [string, string][] {
  const url = pathFormUrl(e);
  return url === undefined ? [] : [['Path URL', url]];
}

/**
 * Where and how the endpoint is called: a queue endpoint at its jobs API (`/run`, `/runsync` first, as RunPod's
 * console shows them) with a curl of `runsync`; an http endpoint at its URL.
 */
function callPairs(e: WireEndpoint): [string, string][] {
  if (!calledByJobs(e)) return [['URL', e.url], ...pathForm(e), ['Call', exampleRequest(e)]];
  const jobs = e.jobUrls;
  return [
    ['Run', `POST ${jobs.run}`],
    ['Run sync', `POST ${jobs.runsync}`],
    ['Status', `GET ${jobs.status}`],
    ['Health', `GET ${jobs.health}`],
    ['Call', runsyncCurl(jobs.runsync)],
  ];
}

export function formatEndpoint(e: WireEndpoint): string {
  const w = e.workerConfig;
  const h = e.healthy;
  const pairs: [string, string][] = [
    ['ID', e.id],
    ['Name', e.name],
    ['App name', e.appName],
    ['Type', e.type],
    ['State', stateText(e.state)],
    ...callPairs(e),
    ['Image', e.image.image],
    ['Command', e.image.command],
    ['Registry auth', e.image.authId],
    ['Port', e.ports.map((p) => String(p.port)).join(', ')],
    ['Workers', `${w.minNum}-${w.maxNum} (ready ${workersText(e)})`],
    ['GPUs per worker', String(w.gpuNum)],
    ['CUDA', w.cudaVersion],
    ['Idle timeout', `${w.freeTimeout}s`],
    ['Max concurrent', w.maxConcurrent],
    ['Request timeout', `${w.requestTimeout}s`],
    ['Idle tiers', idleTiersText(w)],
    ['Scaling policy', `${e.policy.type} ${e.policy.value}`],
    ['Products', e.products.map((p) => p.id).join(', ')],
    ['System disk', `${e.rootfsSize} GB`],
    ['Health check', `${h.path} (delay ${h.initialDelay}s, every ${h.period}s, timeout ${h.timeout}s)`],
  ];
  if (e.clusterID !== undefined && e.clusterID !== '') pairs.push(['Cluster', e.clusterID]);
  pairs.push(['Log', e.log]);
  const sections = [formatKeyValues(pairs)];
  if (e.envs.length > 0) {
    sections.push(
      `\nEnvironment:\n${indent(
        formatTable(
          ['KEY', 'VALUE'],
          e.envs.map((v) => [v.key, v.value]),
        ),
      )}`,
    );
  }
  if (e.volumeMounts.length > 0) {
    const rows = e.volumeMounts.map((v) => [v.type, v.id, v.size > 0 ? `${v.size} GB` : '', v.mountPath]);
    sections.push(`\nVolumes:\n${indent(formatTable(['TYPE', 'ID', 'SIZE', 'MOUNT'], rows))}`);
  }
  const workerRows = e.workers.map((wk) => [
    wk.id,
    stateText(wk.state),
    healthText(wk.state.state, wk.healthy),
    wk.state.message,
  ]);
  sections.push(
    workerRows.length === 0
      ? '\nWorkers: none\n'
      : `\nWorkers:\n${indent(formatTable(['ID', 'STATE', 'HEALTHY', 'MESSAGE'], workerRows))}`,
  );
  return sections.join('');
}

export function formatEvents(events: readonly WireEvent[]): string {
  if (events.length === 0) return 'No events.\n';
  return formatTable(
    ['TIME', 'TYPE', 'MESSAGE'],
    events.map((e) => [e.at, e.type, e.message]),
  );
}

function stateText(state: WireState): string {
  return state.error === '' ? state.state : `${state.state} (${state.error})`;
}

/**
 * Serving workers of those meant to serve; failed ones apart, so that 1/3 never hides two crashed workers, and idle
 * ones resting in a tier apart (they serve again once woken).
 */
function workersText(e: WireEndpoint): string {
  const count = (state: string) => e.workers.filter((w) => w.state.state === state).length;
  const apart = ['failed', 'frozen', 'suspended'].filter((s) => count(s) > 0).map((s) => `${count(s)} ${s}`);
  const live = e.workers.filter((w) => !['failed', 'stopped', 'frozen', 'suspended'].includes(w.state.state));
  const ready = live.filter((w) => w.healthy && w.state.state === 'running').length;
  return `${ready}/${live.length}${apart.length > 0 ? ` (${apart.join(', ')})` : ''}`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
}

/** `corral endpoints metrics`: workers by state, then the gateway's traffic figures where it reports them. */
export function formatEndpointMetrics(m: WireEndpointMetrics): string {
  const states = Object.entries(m.workers);
  const byState = states.map(([state, n]) => `${n} ${state}`).join(', ');
  const pairs: [string, string][] = [
    ['ID', m.id],
    ['Workers', states.length === 0 ? 'none' : `${m.readyWorkers ?? 0} ready (${byState})`],
  ];
  if (m.usage) {
    pairs.push(
      ['GPU time, last hour', usageText(m.usage.lastHour)],
      ['GPU time, last day', usageText(m.usage.lastDay)],
    );
  }
  if (m.requests === null) {
    pairs.push(['Traffic', 'unknown (no gateway runs in the server that answered)']);
    return formatKeyValues(pairs);
  }
  if (m.window) pairs.push(['Window', windowText(m.window)]);
  const statuses = Object.entries(m.requests.byStatus).map(([status, n]) => `${n} x ${status}`);
  pairs.push(
    ['Requests', statuses.length === 0 ? '0' : `${m.requests.total} (${statuses.join(', ')})`],
    ['Latency', distributionText(m.latencyMs)],
    ['Queue wait', distributionText(m.queueWaitMs)],
    ['Queued now', String(m.queueDepth ?? 0)],
    ['In flight', String(m.inFlight ?? 0)],
    ...wakePairs(m),
  );
  return formatKeyValues(pairs);
}

/** `1.500 GPU-h (4.50 EUR; active 1.000, idle 0.500)`: the states that held any time, largest first. */
function usageText(u: WireUsageTotals): string {
  const hours = (seconds: number) => (seconds / 3600).toFixed(3);
  const held = Object.entries(u.gpuSeconds)
    .filter(([, seconds]) => seconds > 0)
    .sort(([, a], [, b]) => b - a);
  const total = held.reduce((sum, [, seconds]) => sum + seconds, 0);
  const states = held.map(([state, seconds]) => `${state} ${hours(seconds)}`).join(', ');
  return `${hours(total)} GPU-h (${u.amount.toFixed(2)} ${u.currency}${states === '' ? '' : `; ${states}`})`;
}

/**
 * Cold starts, then thaws and restores where there were any, each with its own mean (docs/workers.md, Idle tiers).
 * A server before `thaws` counted every wake in `coldStarts`; its `wakes` has them apart.
 */
function wakePairs(m: WireEndpointMetrics): [string, string][] {
  const older = m.thaws === undefined && m.wakes ? m.wakes : undefined;
  const text = (w: WireWakes | null | undefined) =>
    !w || w.count === 0 ? '0' : `${w.count} (mean ${msText(w.meanMs)})`;
  const pairs: [string, string][] = [['Cold starts', text(older ? older.cold : m.coldStarts)]];
  const thaws = older ? older.thaw : m.thaws;
  const restores = older ? older.restore : m.restores;
  if (thaws && thaws.count > 0) pairs.push(['Thaws', text(thaws)]);
  if (restores && restores.count > 0) pairs.push(['Restores', text(restores)]);
  return pairs;
}

/** An ISO instant for people: `2026-11-25 10:00:00 UTC`. */
export function utcText(iso: string): string {
  return iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

/** The traffic's window: absolute and relative, and whose it is, so that two servers' figures are not confused. */
function windowText(window: { since: string; seconds: number; replica?: string | null }): string {
  const since = utcText(window.since);
  // With several replicas the totals are the answering replica's; the counts now are every replica's.
  const whose = window.replica
    ? `replica ${window.replica}'s gateway (queued and in flight now: every replica's)`
    : "this server's gateway";
  return `since ${since} (${durationText(window.seconds)}), ${whose}`;
}

function durationText(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 360) / 10} h`;
}

function distributionText(d: WireDistribution | null): string {
  if (d === null || d.mean === null) return 'no requests yet';
  return `p50 ${msText(d.p50)}, p99 ${msText(d.p99)}, mean ${msText(d.mean)}`;
}

function msText(ms: number | null): string {
  return ms === null ? 'unknown' : `${Math.round(ms * 10) / 10} ms`;
}

/** "frozen 600s, then suspended 3600s" or "off (stopped at the idle timeout)". */
function idleTiersText(w: WireEndpoint['workerConfig']): string {
  const frozen = w.keepFrozen ?? 0;
  const suspended = w.keepSuspended ?? 0;
  if (frozen === 0 && suspended === 0) return 'off (stopped at the idle timeout)';
  const parts = [`frozen ${frozen}s`];
  if (suspended > 0) parts.push(`suspended ${suspended}s`);
  return parts.join(', then ');
}
