/**
 * Abuse benchmark (issue 11, item 1), `npm run bench -- abuse`: does one owner's flood of creates slow another
 * owner's API down?
 *
 * `corral serve` runs as a process, from the compiled dist/ (built first), as an operator starts it: SQLite in a
 * temp data directory, the fake runtime, 8 simulated GPUs (so the controller runs its passes over every endpoint,
 * A's included), default quotas and sizes; twice: with serve's default rate limit, and with it raised out of the
 * way (settings.ts says why).
 * Owner B's key seeds 20 ordinary endpoints; then B lists them (`GET endpoints`, one request in flight, keep-alive,
 * from this process) under three conditions, one after another:
 *
 * 1. idle: nothing else runs (the baseline of the ratio);
 * 2. A floods oversized creates: the issue's body of 20,000 envs (about 0.9 MB), sent again and again on 4
 *    connections from a child process (flooder.ts), each written whole before its answer is read;
 * 3. A floods maximal valid creates: 100 envs filling the body to just under the 64 KiB create limit, the same way;
 *    they are created until A's endpoint quota (100) is reached and refused with 403 QUOTA_EXCEEDED after.
 *
 * For each: B's list p50/p99/max and the p99's ratio to idle (target: within 3x), what A's requests got (by status)
 * and how many per second, and the server's own event-loop delay (the max of node's monitor between two scrapes of
 * /metrics, which resets it), resident memory and CPU time, and the CPU time of A's process (on this machine it
 * takes its share of the same cores). Bounded: at most 6 s idle and 10 s per flood, per configuration (under 60 s
 * of measuring in all, after the build and two start-ups). Every process started here is stopped at the end, also on failure.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { systemClock } from '../../src/ports/clock.js';
import { ApiKeyService } from '../../src/service/api-key-service.js';
import { openStore } from '../../src/store/open.js';
import { type ServeProcess, startServe } from '../../test/support/process.js';
import { cpuMs } from '../gateway/processes.js';
import { summarizeProfile } from '../gateway/profile.js';
import {
  Figure,
  formatMs,
  formatRatio,
  LoopbackClient,
  loadAverage,
  type Summary,
  summarize,
  table,
} from '../support.js';
import { buildDist } from '../tools.js';
import { ordinaryBody } from './bodies.js';
import type { FloodReport } from './flooder.js';
import {
  B_ENDPOINTS,
  B_INTERVAL_MS,
  CONFIGURATIONS,
  FLOOD_BOUNDS,
  FLOOD_CONNECTIONS,
  IDLE_BOUNDS,
  P99_RATIO_TARGET,
  REPO_ROOT,
  SIMULATED_GPUS,
} from './settings.js';

const PREFIX = '/gpu-instance/openapi/v1';
/** The scrape token of /metrics (which needs one or an admin key), for the server's loop delay and RSS. */
const METRICS_TOKEN = 'bench-abuse-metrics-token-0123456789';
const CHILD_FILE = fileURLToPath(new URL('./child.ts', import.meta.url));

interface Condition {
  label: string;
  list: Summary;
  failures: number;
  /** How long B's requests of the condition took in all, waits included. */
  seconds: number;
  flood?: FloodReport & { bodyBytes: number };
  loopDelayMaxMs: number;
  rssMiB: number;
  /** CPU time the server used during the condition, per second of it. */
  serverCpuPerSecondMs: number;
  /** CPU time A's flooding process used, per second of the flood (it shares the machine's cores). */
  flooderCpuPerSecondMs?: number;
}

/** With a directory here, the server runs under `node --cpu-prof` and the suite prints where its time went. */
const PROFILE_ENV = 'CORRAL_BENCH_ABUSE_CPU_PROF';

export async function runAbuseBench(): Promise<void> {
  console.log('\n== Abuse: one owner floods creates, another lists (issue 11) ==');
  console.log('command: npm run bench -- abuse');
  buildDist();
  for (const configuration of CONFIGURATIONS) {
    console.log(`\n-- ${configuration.name} --`);
    console.log(
      `B lists at most every ${B_INTERVAL_MS} ms; idle up to ${IDLE_BOUNDS.maxMs / 1000} s, each flood ${FLOOD_BOUNDS.maxMs / 1000} s`,
    );
    await runConfiguration(configuration.text);
  }
}

async function runConfiguration(configText: string): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-abuse-'));
  const children = new Set<ChildProcess>();
  let server: ServeProcess | undefined;
  try {
    const [keyA, keyB] = await ownerKeys(dataDir);
    const configPath = join(dataDir, 'corral.yaml');
    writeFileSync(configPath, configText);
    const profileDir = process.env[PROFILE_ENV];
    server = await startServe(
      ['--runtime', 'fake', '--gpus', SIMULATED_GPUS, '--config', configPath],
      { CORRAL_DATA_DIR: dataDir, CORRAL_METRICS_TOKEN: METRICS_TOKEN },
      profileDir ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profileDir] } : {},
    );
    const serverPid = server.child.pid;
    const port = Number(new URL(server.apiUrl).port);
    const client = new LoopbackClient(port);
    for (let i = 0; i < B_ENDPOINTS; i++) {
      const created = await client.send('POST', `${PREFIX}/endpoint/create`, {
        body: ordinaryBody(),
        token: keyB,
      });
      if (created.status !== 200)
        throw new Error(`owner B's create answered ${created.status}: ${created.body}`);
    }
    const listOfB = () =>
      new Figure(
        'list',
        IDLE_BOUNDS,
        () => client.send('GET', `${PREFIX}/endpoints?pageSize=${B_ENDPOINTS}&pageNum=0`, { token: keyB }),
        (answer) => {
          if (answer.status !== 200) return `status ${answer.status}: ${answer.body.slice(0, 200)}`;
          const total = (JSON.parse(answer.body) as { total: number }).total;
          return total === B_ENDPOINTS ? undefined : `total ${total}, not ${B_ENDPOINTS}`;
        },
      );
    let cpuMark = { at: performance.now(), cpu: cpuMs(serverPid) ?? NaN };
    const serverFigures = async () => {
      const state = await serverState(client);
      const now = { at: performance.now(), cpu: cpuMs(serverPid) ?? NaN };
      const serverCpuPerSecondMs = ((now.cpu - cpuMark.cpu) / (now.at - cpuMark.at)) * 1000;
      cpuMark = now;
      return { ...state, serverCpuPerSecondMs };
    };
    // Warm-up, paced as measured (B's rate limit holds for it too): the first requests compile the routes' code.
    await measure(new Figure('warm-up', { count: 60, maxMs: 3_000 }, listOfB().send, () => undefined));
    console.log(`load average before: ${loadAverage()}`);

    const conditions: Condition[] = [];
    await serverFigures();
    const idle = await measure(new Figure('idle', IDLE_BOUNDS, listOfB().send, listOfB().check));
    conditions.push({ label: 'idle', ...idle, ...(await serverFigures()) });
    for (const kind of ['oversized', 'maximal'] as const) {
      const flooder = startFlooder(kind, port, keyA);
      children.add(flooder);
      const ready = await once<{ bodyBytes: number }>(flooder, (m) => 'ready' in m);
      await serverFigures();
      const flooderStart = { at: performance.now(), cpu: cpuMs(flooder.pid) ?? NaN };
      const flooded = await measure(new Figure(kind, FLOOD_BOUNDS, listOfB().send, listOfB().check));
      const state = await serverFigures();
      const flooderCpuPerSecondMs =
        (((cpuMs(flooder.pid) ?? NaN) - flooderStart.cpu) / (performance.now() - flooderStart.at)) * 1000;
      flooder.send('stop');
      const { report } = await once<{ report: FloodReport }>(flooder, (m) => 'report' in m);
      children.delete(flooder);
      const label =
        kind === 'oversized'
          ? `A floods oversized creates (${kib(ready.bodyBytes)})`
          : `A floods maximal valid creates (${kib(ready.bodyBytes)})`;
      conditions.push({
        label,
        ...flooded,
        ...state,
        flooderCpuPerSecondMs,
        flood: { ...report, bodyBytes: ready.bodyBytes },
      });
    }
    client.close();
    console.log(`load average after: ${loadAverage()}`);
    report(conditions);
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const profileDir = process.env[PROFILE_ENV];
  if (profileDir) summarizeProfile(profileDir);
}

/** One key for owner A and one for owner B, written to the store before the server opens it. */
async function ownerKeys(dataDir: string): Promise<[string, string]> {
  const store = await openStore({ dataDir });
  try {
    const keys = new ApiKeyService({ store, clock: systemClock });
    const a = await keys.create({ ownerId: 'owner-a', name: 'flood', admin: false });
    const b = await keys.create({ ownerId: 'owner-b', name: 'victim', admin: false });
    return [a.key, b.key];
  } finally {
    await store.close();
  }
}

/**
 * B's requests, one in flight, each sent B_INTERVAL_MS after the previous one was sent (or at once when that one
 * took longer), within the figure's count and time; the wait is not measured.
 */
async function measure(figure: Figure): Promise<{ list: Summary; failures: number; seconds: number }> {
  const ms: number[] = [];
  /** When each request was sent, in seconds since the condition began: where in it the slowest ones fell. */
  const at: number[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  const started = performance.now();
  let sentAt = 0;
  while (ms.length < figure.bounds.count && performance.now() - started < figure.bounds.maxMs) {
    const wait = sentAt + B_INTERVAL_MS - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sentAt = performance.now();
    const answer = await figure.send();
    ms.push(performance.now() - sentAt);
    at.push((sentAt - started) / 1000);
    const problem = figure.check(answer);
    if (problem !== undefined) {
      failures += 1;
      firstFailure ??= problem;
    }
  }
  if (failures > 0) console.log(`  ${figure.label}: ${failures} failed, first: ${firstFailure}`);
  const slowest = ms
    .map((value, i) => ({ value, at: at[i] ?? NaN }))
    .sort((a, b) => b.value - a.value)
    .slice(0, 5);
  console.log(
    `  ${figure.label}: slowest ${slowest.map((s) => `${formatMs(s.value)} ms at ${s.at.toFixed(1)} s`).join(', ')}`,
  );
  return { list: summarize(ms), failures, seconds: (performance.now() - started) / 1000 };
}

function startFlooder(kind: 'oversized' | 'maximal', port: number, token: string): ChildProcess {
  return fork(CHILD_FILE, [], {
    cwd: REPO_ROOT,
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      CORRAL_BENCH_FLOOD_KIND: kind,
      CORRAL_BENCH_FLOOD_PORT: String(port),
      CORRAL_BENCH_FLOOD_TOKEN: token,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

function once<T>(child: ChildProcess, matches: (message: Record<string, unknown>) => boolean): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (typeof message === 'object' && message !== null && matches(message as Record<string, unknown>)) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(message as T);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`the flooding process exited with ${code}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** The server's event-loop delay since the last scrape (prom-client resets it on each) and its memory. */
async function serverState(client: LoopbackClient): Promise<{ loopDelayMaxMs: number; rssMiB: number }> {
  const { body } = await client.send('GET', '/metrics', { token: METRICS_TOKEN });
  const value = (name: string) => Number(new RegExp(`^${name} ([0-9.e+-]+)`, 'm').exec(body)?.[1] ?? NaN);
  return {
    loopDelayMaxMs: value('nodejs_eventloop_lag_max_seconds') * 1000,
    rssMiB: value('process_resident_memory_bytes') / 2 ** 20,
  };
}

function kib(bytes: number): string {
  return bytes >= 2 ** 20 ? `${(bytes / 2 ** 20).toFixed(2)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

function report(conditions: Condition[]): void {
  const idleP99 = conditions[0]?.list.p99 ?? NaN;
  console.log(
    `\nOwner B's list of its ${B_ENDPOINTS} endpoints (ms, one request in flight, at most one per ${B_INTERVAL_MS} ms), while owner A sends creates on ${FLOOD_CONNECTIONS} connections:`,
  );
  console.log(
    table(
      [
        'condition',
        'n',
        'in s',
        'p50',
        'p99',
        'max',
        'p99 / idle',
        'A requests (by status)',
        'A req/s',
        'server CPU ms/s',
        'A CPU ms/s',
        'loop delay max',
        'RSS MiB',
      ],
      conditions.map((c) => [
        c.label,
        String(c.list.n),
        c.seconds.toFixed(1),
        formatMs(c.list.p50),
        formatMs(c.list.p99),
        formatMs(c.list.max),
        formatRatio(c.list.p99 / idleP99),
        c.flood
          ? `${Object.entries(c.flood.byStatus)
              .map(([status, n]) => `${n}x${status}`)
              .join(' ')}${c.flood.errors > 0 ? ` ${c.flood.errors} errors` : ''}`
          : '-',
        c.flood ? (c.flood.sent / c.flood.seconds).toFixed(0) : '-',
        c.serverCpuPerSecondMs.toFixed(0),
        c.flooderCpuPerSecondMs === undefined ? '-' : c.flooderCpuPerSecondMs.toFixed(0),
        `${formatMs(c.loopDelayMaxMs)} ms`,
        c.rssMiB.toFixed(0),
      ]),
    ),
  );
  for (const c of conditions) {
    if (c.flood?.firstError) console.log(`  ${c.label}: first error: ${c.flood.firstError}`);
  }
  const worst = Math.max(...conditions.slice(1).map((c) => c.list.p99 / idleP99));
  console.log(
    `target: B's list p99 under a flood within ${P99_RATIO_TARGET}x of idle: worst ${formatRatio(worst)} (${
      worst <= P99_RATIO_TARGET ? 'met' : 'NOT met'
    })`,
  );
}
