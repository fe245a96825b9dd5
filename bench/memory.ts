/**
 * Memory benchmark (DESIGN section 5): the resident memory of a real `corral serve` process (the compiled dist/,
 * SQLite, the `local` runtime running the test worker), sampled from /proc/<pid>/status, in three phases:
 *
 * 1. Idle: 10 s after start with no endpoint, then 10 s after one endpoint's worker (minNum 1) is serving; the
 *    median of 5 samples 1 s apart each time. Target: RSS under 150 MiB.
 * 2. Under the gateway benchmark's load: `wrk -t2 -c32` for 30 s through the gateway at that endpoint
 *    (`GET /work?ms=0`, the gateway bench's request), RSS sampled every 250 ms; the peak, and VmHWM (the kernel's
 *    own high-water mark) after it. Target: under 300 MiB.
 * 3. Soak: `CORRAL_BENCH_SOAK_S` seconds (default 600, the target's 10 minutes) of the same wrk load in 60 s
 *    runs, while every 15 s an endpoint is created with minNum 0, woken by a first request, sent 9 more and
 *    deleted (the per-endpoint paths: routing, dispatcher, metrics series, worker start and removal). RSS and the
 *    process's own heap used (`nodejs_heap_size_used_bytes` from /metrics) every 5 s. The first fifth of the soak
 *    (at most 2 minutes) is warm-up and not counted. Target: no growth, read three ways. The least-squares slope
 *    of RSS, and of heap used, over the rest: under 1 MiB per minute (at this load, well under a byte per
 *    request; the figure per request is printed). Heap used is sampled whenever the scrape comes, between
 *    collections, so its slope is noisy; the third reading is not: the heap in use right after a full collection
 *    (forced through the inspector, serve runs with `--inspect=127.0.0.1:0`), between wrk runs after the first
 *    one and at the end, without V8's compiled code (which grows as code gets optimised, and stops). Its
 *    growth must stay under 1 MiB, where a leak of one byte per request would add several. (Heap snapshots would
 *    say the same but raise RSS by about 120 MiB for good, spoiling the RSS figures.)
 *
 * The workers are other processes and not counted: what is measured is Corral's own memory.
 *
 * Issue 14's bound (the dashboard's static files and history add at most 30 MB to idle RSS) is read from the idle
 * phase of runs without them: `CORRAL_BENCH_MEMORY_WITHOUT=dashboard,history` (either or both) serves without
 * dist/web (moved aside for the run) and with `history: { samples: 0 }`; `CORRAL_BENCH_MEMORY_IDLE_ONLY=1` stops
 * after the idle phase. Each run also measures, in the bench's own process, the history at its bound: 500
 * endpoints with full rings (bench/history-memory.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CorralClient } from '../src/client/index.js';
import { type ServeProcess, startServe } from '../test/support/process.js';
import { WORKER_SCRIPT } from '../test/support/test-image.js';
import { measureHistoryAtBound } from './history-memory.js';
import {
  inspectorUrlOf,
  type LiveHeap,
  liveHeap,
  MIB,
  median,
  medianRss,
  memoryOf,
  slopePerMinute,
  startSampling,
} from './memory-readings.js';
import { formatMs, loadAverage, table } from './support.js';
import { buildDist, ensureTools, parseWrk, runWrk, type WrkFigures } from './tools.js';

const TARGET = { idleMiB: 150, loadMiB: 300, slopeMiBPerMin: 1, liveHeapGrowthMiB: 1 };
const WRK = { threads: 2, connections: 32 };
const WORK_PATH = '/work?ms=0';
const IDLE_SETTLE_MS = 10_000;
const IDLE_SAMPLES = 5;
const LOAD_S = 30;
const LOAD_SAMPLE_MS = 250;
const SOAK_S = Number(process.env.CORRAL_BENCH_SOAK_S ?? 600);
const SOAK_WRK_S = 60;
const SOAK_SAMPLE_MS = 5_000;
const CHURN_EVERY_MS = 15_000;
const CHURN_REQUESTS = 10;
const WITHOUT = new Set((process.env.CORRAL_BENCH_MEMORY_WITHOUT ?? '').split(',').filter((w) => w !== ''));
const IDLE_ONLY = process.env.CORRAL_BENCH_MEMORY_IDLE_ONLY === '1';
const DASHBOARD_DIR = new URL('../dist/web', import.meta.url).pathname;
const DASHBOARD_ASIDE = `${DASHBOARD_DIR}.bench-aside`;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The operator key `corral serve` runs with in this bench: the API, /metrics (an admin key) and the endpoints'
 * URLs (the gateway needs a key) all take it.
 */
const BENCH_KEY = `sk_bench_${randomBytes(16).toString('hex')}`;
const AUTHORIZATION = { authorization: `Bearer ${BENCH_KEY}` };

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/** One request through the gateway to `appName`; resolves with the status (0 when no answer came). */
function viaGateway(gatewayPort: number, appName: string, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: gatewayPort,
        path,
        agent,
        headers: { host: `${appName}.localhost`, ...AUTHORIZATION },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.setTimeout(60_000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** An endpoint whose worker is the test worker, run by the local runtime with this node. */
function workerEndpoint(appName: string, workerConfig: Record<string, unknown>) {
  const quote = (s: string) => `'${s.replaceAll("'", `'"'"'`)}'`;
  return {
    name: appName,
    appName,
    image: {
      image: 'corral-test-worker:local',
      command: `${quote(process.execPath)} ${quote(WORKER_SCRIPT)}`,
    },
    ports: [{ port: 8000 }],
    envs: [{ key: 'HOST', value: '127.0.0.1' }],
    healthy: { path: '/health' },
    policy: { type: 'queue', value: 1 },
    workerConfig: { gpuNum: 1, maxConcurrent: 64, freeTimeout: 5, ...workerConfig },
  };
}

async function waitServing(gatewayPort: number, appName: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await viaGateway(gatewayPort, appName, '/health')) === 200) return;
    await sleep(100);
  }
  throw new Error(`${appName} did not serve through the gateway in ${timeoutMs} ms`);
}

/** Worker processes the local runtime still has (its state files), to stop what the bench leaves behind. */
function leftoverWorkerPids(dataDir: string): number[] {
  const dir = join(dataDir, 'local-runtime', 'workers');
  try {
    return readdirSync(dir).flatMap((file) => {
      try {
        const state = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { pid?: unknown };
        return typeof state.pid === 'number' ? [state.pid] : [];
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

interface Churn {
  cycles: number;
  requests: number;
  failed: number;
  wakeMs: number[];
}

/** Every CHURN_EVERY_MS until `until`: create an endpoint at zero, wake it, use it, delete it. */
async function churn(client: CorralClient, gatewayPort: number, until: number, result: Churn): Promise<void> {
  while (Date.now() + CHURN_EVERY_MS < until) {
    const cycleStart = Date.now();
    const appName = `churn-${result.cycles}`;
    const { id } = await client.createEndpoint(workerEndpoint(appName, { minNum: 0, maxNum: 1 }));
    for (let i = 0; i < CHURN_REQUESTS; i++) {
      const sent = Date.now();
      const status = await viaGateway(gatewayPort, appName, WORK_PATH);
      if (i === 0) result.wakeMs.push(Date.now() - sent);
      result.requests++;
      if (status !== 200) result.failed++;
    }
    await client.deleteEndpoint(id);
    result.cycles++;
    await sleep(Math.max(0, cycleStart + CHURN_EVERY_MS - Date.now()));
  }
}

function mib(value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '-';
}

function verdict(ok: boolean | undefined): string {
  return ok === undefined ? 'NOT MEASURED' : ok ? 'PASS' : 'MISS';
}

export async function runMemoryBench(): Promise<void> {
  console.log('\n== Memory of corral serve (DESIGN section 5) ==');
  console.log(`command: npm run bench -- memory   (soak: CORRAL_BENCH_SOAK_S=${SOAK_S})`);
  const tools = ensureTools();
  if (!tools.wrk) throw new Error('wrk is needed for the load phases (apt-get install -y wrk)');
  buildDist();
  console.log(`node ${process.version}, ${tools.wrkVersion}; load average ${loadAverage()}`);
  const bound = measureHistoryAtBound();
  console.log(
    `\nHistory at its bound (in the bench's process): ${bound.endpoints} endpoints x ${bound.samples} samples, ` +
      `stated ${mib(bound.statedBytes / MIB)} MiB; live (heap and buffers after a full collection) ` +
      `+${mib(bound.liveGrowthMiB)} MiB, ` +
      `RSS +${mib(bound.rssGrowthMiB)} MiB (of it V8's young generation grown by the burst of sampling: ` +
      `+${mib(bound.youngGrowthMiB)} MiB)`,
  );
  console.log(
    `serving ${WITHOUT.has('dashboard') ? 'without' : 'with'} the dashboard's files, ` +
      `${WITHOUT.has('history') ? 'without' : 'with'} the history${IDLE_ONLY ? '; idle phase only' : ''}`,
  );
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-memory-'));
  if (WITHOUT.has('history')) writeFileSync(join(dataDir, 'corral.yaml'), 'history: { samples: 0 }\n');
  if (WITHOUT.has('dashboard') && existsSync(DASHBOARD_DIR)) renameSync(DASHBOARD_DIR, DASHBOARD_ASIDE);
  const key = BENCH_KEY;
  const wrkChildren = new Set<ChildProcess>();
  let server: ServeProcess | undefined;
  try {
    server = await startServe(
      // The local runtime refuses root unless told that its workers (host processes) may run as root.
      [
        '--runtime',
        'local',
        '--gpus',
        'h100-80g:8',
        ...(process.getuid?.() === 0 ? ['--local-allow-root'] : []),
        ...(WITHOUT.has('history') ? ['--config', join(dataDir, 'corral.yaml')] : []),
      ],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: key },
      { nodeArgs: ['--inspect=127.0.0.1:0'] },
    );
    const pid = server.child.pid;
    if (pid === undefined) throw new Error('corral serve has no pid');
    const gatewayPort = Number(new URL(server.gatewayUrl).port);
    const client = new CorralClient({ baseUrl: server.apiUrl, apiKey: key });
    const summary: string[][] = [];

    await sleep(IDLE_SETTLE_MS);
    const idleEmpty = await medianRss(pid, IDLE_SAMPLES);
    await client.createEndpoint(workerEndpoint('steady', { minNum: 1, maxNum: 1 }));
    await waitServing(gatewayPort, 'steady');
    await sleep(IDLE_SETTLE_MS);
    const idleServing = await medianRss(pid, IDLE_SAMPLES);
    const idleWorst = Math.max(idleEmpty, idleServing);
    console.log(
      `\nIdle: RSS ${mib(idleEmpty)} MiB with no endpoint, ${mib(idleServing)} MiB with one serving`,
    );
    summary.push([
      'idle RSS (no endpoint / one serving)',
      `${mib(idleEmpty)} / ${mib(idleServing)} MiB`,
      `< ${TARGET.idleMiB} MiB`,
      verdict(Number.isFinite(idleWorst) ? idleWorst < TARGET.idleMiB : undefined),
    ]);
    if (IDLE_ONLY) {
      console.log(table(['figure', 'measured', 'target', 'verdict'], summary));
      console.log(`load average at the end ${loadAverage()}`);
      return;
    }

    const wrkRun = (seconds: number) =>
      runWrk(tools.wrk as string, {
        ...WRK,
        seconds,
        url: `http://127.0.0.1:${gatewayPort}${WORK_PATH}`,
        host: 'steady.localhost',
        authorization: AUTHORIZATION.authorization,
        onSpawn: (child) => {
          wrkChildren.add(child);
          child.once('exit', () => wrkChildren.delete(child));
        },
      }).then(parseWrk);

    const loadSampling = startSampling(pid, LOAD_SAMPLE_MS);
    const load = await wrkRun(LOAD_S);
    loadSampling.stop();
    const loadPeak = Math.max(...loadSampling.samples.map((s) => s.rssMiB).filter(Number.isFinite));
    const hwm = memoryOf(pid)?.hwmMiB ?? Number.NaN;
    console.log(
      `\nUnder load: wrk -t${WRK.threads} -c${WRK.connections} -d${LOAD_S}s GET ${WORK_PATH} through the gateway: ` +
        `${Math.round(load.requests / load.seconds)} req/s, ${load.non2xx} non-2xx, ${load.socketErrors} socket errors; ` +
        `RSS peak ${mib(loadPeak)} MiB (${loadSampling.samples.length} samples), VmHWM ${mib(hwm)} MiB`,
    );
    const loadWorst = Math.max(loadPeak, hwm);
    summary.push([
      `RSS under wrk -c${WRK.connections} (peak sampled / VmHWM)`,
      `${mib(loadPeak)} / ${mib(hwm)} MiB`,
      `< ${TARGET.loadMiB} MiB`,
      verdict(Number.isFinite(loadWorst) ? loadWorst < TARGET.loadMiB : undefined),
    ]);

    const soak = await runSoak({
      pid,
      apiUrl: server.apiUrl,
      client,
      gatewayPort,
      wrkRun,
      inspectorUrl: inspectorUrlOf(server),
    });
    summary.push(...soak.summary);

    console.log('\nSummary (memory)');
    console.log(table(['figure', 'measured', 'target', 'verdict'], summary));
    console.log(`load average at the end ${loadAverage()}`);
  } finally {
    if (existsSync(DASHBOARD_ASIDE)) renameSync(DASHBOARD_ASIDE, DASHBOARD_DIR);
    for (const child of wrkChildren) child.kill('SIGKILL');
    agent.destroy();
    await server?.stop();
    for (const workerPid of leftoverWorkerPids(dataDir)) {
      try {
        process.kill(-workerPid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

interface SoakOptions {
  pid: number;
  apiUrl: string;
  client: CorralClient;
  gatewayPort: number;
  wrkRun: (seconds: number) => Promise<WrkFigures>;
  inspectorUrl: string;
}

async function runSoak(o: SoakOptions): Promise<{ summary: string[][] }> {
  const warmupMs = Math.min(120_000, (SOAK_S * 1000) / 5);
  console.log(
    `\nSoak: ${SOAK_S} s of wrk -c${WRK.connections} in ${SOAK_WRK_S} s runs, and every ${CHURN_EVERY_MS / 1000} s ` +
      `an endpoint created at zero, woken, sent ${CHURN_REQUESTS} requests and deleted; ` +
      `RSS and heap every ${SOAK_SAMPLE_MS / 1000} s, the first ${formatMs(warmupMs / 1000)} s not counted`,
  );
  const sampling = startSampling(o.pid, SOAK_SAMPLE_MS, { apiUrl: o.apiUrl, headers: AUTHORIZATION });
  const started = Date.now();
  const until = started + SOAK_S * 1000;
  const churned: Churn = { cycles: 0, requests: 0, failed: 0, wakeMs: [] };
  const churning = churn(o.client, o.gatewayPort, until, churned);
  const runs: WrkFigures[] = [];
  let warm: { heap: LiveHeap; requests: number; cycles: number } | undefined;
  while (Date.now() < until) {
    const seconds = Math.min(SOAK_WRK_S, Math.ceil((until - Date.now()) / 1000));
    if (seconds < 1) break;
    runs.push(await o.wrkRun(seconds));
    const last = sampling.samples.at(-1);
    console.log(
      `  ${formatMs((last?.atMs ?? 0) / 1000)} s: RSS ${mib(last?.rssMiB ?? Number.NaN)} MiB, ` +
        `heap used ${mib(last?.heapMiB ?? Number.NaN)} MiB`,
    );
    // After the first run, so that RSS has recovered from this collection before its counted samples begin.
    if (!warm && Date.now() < until) {
      const heap = await liveHeap(o.inspectorUrl, { apiUrl: o.apiUrl, headers: AUTHORIZATION });
      warm = { heap, requests: runs.reduce((sum, r) => sum + r.requests, 0), cycles: churned.cycles };
      console.log(
        `  heap after a full collection: ${mib(heap.usedMiB)} MiB (${mib(heap.codeMiB)} MiB of it code)`,
      );
    }
  }
  await churning;
  sampling.stop();
  const end = await liveHeap(o.inspectorUrl, { apiUrl: o.apiUrl, headers: AUTHORIZATION });

  const counted = sampling.samples.filter((s) => s.atMs >= warmupMs);
  const rssSlope = slopePerMinute(counted.map((s) => ({ atMs: s.atMs, value: s.rssMiB })));
  const heapSlope = slopePerMinute(counted.map((s) => ({ atMs: s.atMs, value: s.heapMiB })));
  const requests = runs.reduce((sum, r) => sum + r.requests, 0);
  const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  const perMinute = seconds > 0 ? (requests / seconds) * 60 : Number.NaN;
  const bytesPerRequest = (rssSlope * MIB) / perMinute;
  const firstMinute = median(counted.slice(0, 12).map((s) => s.rssMiB));
  const lastMinute = median(counted.slice(-12).map((s) => s.rssMiB));
  const maxRss = Math.max(...sampling.samples.map((s) => s.rssMiB).filter(Number.isFinite));
  console.log(
    `  wrk: ${requests} requests in ${formatMs(seconds)} s (${Math.round(requests / seconds)} req/s), ` +
      `${runs.reduce((sum, r) => sum + r.non2xx, 0)} non-2xx, ${runs.reduce((sum, r) => sum + r.socketErrors, 0)} socket errors`,
  );
  console.log(
    `  churn: ${churned.cycles} endpoints created, woken and deleted; ${churned.requests} requests, ` +
      `${churned.failed} failed; wake median ${formatMs(median(churned.wakeMs))} ms`,
  );
  console.log(
    `  RSS after warm-up ${mib(firstMinute)} MiB (median of its first minute), at the end ${mib(lastMinute)} MiB ` +
      `(median of the last minute), max ${mib(maxRss)} MiB; slope ${rssSlope.toFixed(2)} MiB/min ` +
      `(${bytesPerRequest.toFixed(3)} bytes per request); heap used slope ${heapSlope.toFixed(2)} MiB/min`,
  );
  const liveGrowth = warm ? end.usedMiB - end.codeMiB - (warm.heap.usedMiB - warm.heap.codeMiB) : Number.NaN;
  const laterRequests = warm ? requests - warm.requests : 0;
  const laterCycles = warm ? churned.cycles - warm.cycles : 0;
  console.log(
    `  heap after a full collection at the end: ${mib(end.usedMiB)} MiB (${mib(end.codeMiB)} MiB code); without code ` +
      `${liveGrowth >= 0 ? '+' : ''}${(liveGrowth * 1024).toFixed(0)} KiB since run 1, over ${laterRequests} ` +
      `requests and ${laterCycles} endpoints (${((liveGrowth * MIB) / Math.max(1, laterCycles)).toFixed(0)} bytes ` +
      'per endpoint if it were all theirs)',
  );
  const grew = (slope: number) => (Number.isFinite(slope) ? slope < TARGET.slopeMiBPerMin : undefined);
  const rssOk = grew(rssSlope);
  const heapOk = grew(heapSlope);
  return {
    summary: [
      [
        `soak ${SOAK_S} s: RSS slope after warm-up`,
        `${rssSlope.toFixed(2)} MiB/min (${mib(firstMinute)} -> ${mib(lastMinute)} MiB)`,
        `< ${TARGET.slopeMiBPerMin} MiB/min`,
        verdict(rssOk),
      ],
      [
        `soak ${SOAK_S} s: heap used slope after warm-up`,
        `${heapSlope.toFixed(2)} MiB/min`,
        `< ${TARGET.slopeMiBPerMin} MiB/min`,
        verdict(heapOk),
      ],
      [
        `soak ${SOAK_S} s: heap after full GC, without code, end - after run 1`,
        `${(liveGrowth * 1024).toFixed(0)} KiB`,
        `< ${TARGET.liveHeapGrowthMiB} MiB`,
        verdict(Number.isFinite(liveGrowth) ? liveGrowth < TARGET.liveHeapGrowthMiB : undefined),
      ],
      [
        'soak: failed requests (wrk non-2xx + socket errors, churn)',
        String(runs.reduce((sum, r) => sum + r.non2xx + r.socketErrors, 0) + churned.failed),
        '0',
        verdict(runs.every((r) => r.non2xx + r.socketErrors === 0) && churned.failed === 0),
      ],
    ],
  };
}
