/**
 * Gateway benchmark (issue: traffic). Everything in one run, on 127.0.0.1 only, bounded in time and count:
 *
 * 1. One test worker (test/fixtures/worker/worker.mjs with this node, `GET /work?ms=0` answers at once) is the
 *    upstream of all three paths: direct, through the gateway, through nginx.
 * 2. The gateway runs in a CHILD process (this file, forked with CORRAL_BENCH_GATEWAY_ROLE=gateway), wired as
 *    `corral serve` wires it (WorkerPools, GatewayMetrics, serve's default settings, the compiled dist/ modules that
 *    `corral serve` runs; the suite runs `npm run build` first) but with a static RoutingView stub: one endpoint (appName `bench`, maxConcurrent 64) and that one worker routable. A child process, not
 *    in-process, because the gateway is one event loop and so is this orchestrating process: in-process, the
 *    bench's own work (timers, parsing wrk's output, and for the latency figure the load generator) would run on
 *    the gateway's thread and be charged to it and not to nginx, which has its own processes. As a child it is
 *    scheduled by the kernel like nginx's worker; on a 2-core machine all processes still share the cores.
 *    nginx (Debian's nginx-light, installed with apt-get when missing, as is wrk) runs with a minimal config
 *    proxying to the same worker with upstream keep-alive (keepalive 32, proxy_http_version 1.1,
 *    `Connection ""`), `worker_processes 1` (one event loop, as the gateway) for the target ratio, and also
 *    `worker_processes auto` for information. Both set X-Forwarded-For/Proto/Host as the gateway does, log no
 *    request, and have no per-connection request limit (nginx's default of 1,000 is raised, Node has none).
 * 3. Throughput: `wrk -t2 -c32` against direct, gateway (Host: bench.localhost) and nginx, 5 interleaved rounds of
 *    2 s each (10 s per path) after a 1 s warm-up per path; req/s, ratios, and the CPU each process used per
 *    request. Short interleaved rounds, because the machine may be shared: a burst of other work then falls on
 *    every path alike rather than on one. A reference path, for reading the result only: a bare node:http +
 *    undici proxy (role `bare`, the floor of the gateway's design), in its own child process too.
 * 4. Added latency at a fixed 500 req/s: an open-loop client in a separate process (this file again, role
 *    loadgen: a request every 2 ms whatever the answers, over keep-alive connections), the paths taking turns in
 *    10 slices of 1 s each (5,000 requests per path) after a 1 s warm-up each; p50/p99 by sorting (nearest
 *    rank); the gateway's minus direct's (nginx and the reference proxy are measured alike, for information).
 * 5. Wake from zero: the real Controller + Gateway in this process, wired as `corral serve` does, with the
 *    `local` runtime running the test worker (image.command = this node + worker.mjs) and a SQLite store; an
 *    endpoint with minWorkers 0. The local runtime rather than Docker: what is measured is the gateway's and the
 *    controller's part (queue -> signal -> pass -> start -> probe -> route), and the local runtime adds the least
 *    around it (the Docker engine's own create/start time is the controller suite's figure). First response
 *    minus the worker's own start-to-ready time (spawned here, /health polled every 10 ms until 200), 5 runs
 *    interleaved with 5 baselines (after one unmeasured run of each); the overhead is the larger of the
 *    difference of the medians and the median of the paired differences.
 * 6. Scale-up decision: same stack, an endpoint with one running worker of maxConcurrent 1 and policy `queue`
 *    1 s; one long request takes the slot, a second one queues; the time from the threshold (the queued
 *    request's enqueue + 1 s) to the autoscaler's decision, as corral_autoscaler_decision_delay_seconds records
 *    it (read back from the Registry), and to the controller creating the new worker. 5 runs, median.
 *
 * With CORRAL_BENCH_GATEWAY_CPU_PROF=<dir>, the gateway child runs under `node --cpu-prof` and the suite prints
 * where its sampled time went (the profiler slows the gateway down: that run's figures are not the gateway's).
 *
 * Every process and worker started here is stopped at the end, also on failure.
 */
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Agent, createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { type Dispatcher, Pool } from 'undici';
import type { ScalingDecision } from '../src/autoscaler/autoscaler.js';
import { type Config, loadConfig } from '../src/config/config.js';
import type { Controller, RoutingView } from '../src/controller/controller.js';
import type { Endpoint, ScalingPolicy, WorkerSettings } from '../src/domain/endpoint.js';
import type { Gateway } from '../src/gateway/gateway.js';
import { GatewayMetrics } from '../src/gateway/metrics.js';
import { createLogger } from '../src/logger.js';
import { buildTraffic } from '../src/main.js';
import { LocalRuntime } from '../src/runtime/local/local-runtime.js';
import { LABELS } from '../src/runtime/types.js';
import { systemClock } from '../src/service/clock.js';
import { connectSqlite } from '../src/store/sqlite/connect.js';
import { Store } from '../src/store/store.js';
import { deleteEndpoint, sampleEndpoint } from '../test/support/fixtures.js';
import { WORKER_SCRIPT } from '../test/support/test-image.js';
import { formatMs, loadAverage, summarize, table } from './support.js';
import { buildDist, ensureTools, parseWrk, runWrk as runWrkProcess, type Tools } from './tools.js';

// ---- settings ----

const WRK_THREADS = 2;
const WRK_CONNECTIONS = 32;
/** Per path: 5 rounds of 2 s (10 s), the paths taking turns. */
const WRK_ROUNDS = 5;
const WRK_ROUND_S = 2;
const WRK_WARMUP_S = 1;

const LATENCY_RATE = 500;
/** Per path: 10 slices of 1 s (10 s, 5,000 requests), the paths taking turns. */
const LATENCY_SLICES = 10;
const LATENCY_SLICE_MS = 1_000;
const LATENCY_WARMUP_MS = 1_000;

const WAKE_RUNS = 5;
const SCALE_RUNS = 5;
/** The worker's own start-to-ready: /health polled this often. */
const BASELINE_POLL_MS = 10;
/** `queue` policy of the scale-up endpoint, in seconds. */
const SCALE_POLICY_S = 1;
/** The request that holds the only slot while the next one queues. */
const SCALE_HOLD_MS = 2_500;
/** The local runtime's grace period when removing workers. */
const REMOVE_GRACE_S = 1;
/** Any single wait (a worker up, a worker removed, an answer) gives up after this long. */
const STEP_MAX_MS = 20_000;

const TARGET = {
  throughputRatio: 0.6,
  addedP50Ms: 0.5,
  addedP99Ms: 3,
  wakeOverheadMs: 100,
  decisionMs: 250,
} as const;

const APP_NAME = 'bench';
/** The reference row: a bare node:http + undici proxy (see bareProxyChild). */
const BARE_PATH = 'node:http+undici (ref)';
const WORK_PATH = '/work?ms=0';
const ROLE_ENV = 'CORRAL_BENCH_GATEWAY_ROLE';
const UPSTREAM_ENV = 'CORRAL_BENCH_UPSTREAM_PORT';
const LOADGEN_ENV = 'CORRAL_BENCH_LOADGEN';
/** Set to a directory to write a V8 CPU profile of the gateway child (node --cpu-prof) there. */
const PROFILE_ENV = 'CORRAL_BENCH_GATEWAY_CPU_PROF';
/** USER_HZ: clock ticks per second in /proc/<pid>/stat (100 on every common Linux). */
const CLOCK_TICKS = 100;

const THIS_FILE = fileURLToPath(import.meta.url);
const REPO_ROOT = dirname(dirname(THIS_FILE));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `corral serve`'s settings with no flag, env or file: the gateway's defaults. */
function serveDefaults(): Config {
  return loadConfig({ flags: {}, env: {}, readFile: () => '' });
}

/** The same endpoint in the gateway child (routing stub) and in the report. */
function benchEndpoint(): Endpoint {
  const endpoint = sampleEndpoint({
    ownerId: 'bench',
    patch: {
      appName: APP_NAME,
      workers: { minWorkers: 1, maxWorkers: 1, maxConcurrent: 64, gpusPerWorker: 0 },
    },
  });
  return { ...endpoint, status: { state: 'serving', error: '', message: '' } };
}

// ---- processes ----

/** Every child this run started, so that all of them are stopped at the end (and on exit, as a last resort). */
const children = new Set<ChildProcess>();

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function killAllSync(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** Stops a child: `signal`, then SIGKILL after `graceMs`. */
async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 3_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function httpGet(
  port: number,
  path: string,
  options: { host?: string; agent?: Agent | false; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (options.host !== undefined) headers.host = options.host;
    const req = request(
      { host: '127.0.0.1', port, path, method: 'GET', headers, agent: options.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? STEP_MAX_MS, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Polls `check` every `intervalMs` until it returns a value, for at most `maxMs`. */
async function waitFor<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  options: { intervalMs?: number; maxMs?: number } = {},
): Promise<T> {
  const deadline = performance.now() + (options.maxMs ?? STEP_MAX_MS);
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(options.intervalMs ?? 5);
  }
}

/** ms from `start` (performance.now()) until GET /health answers 200, polled every `intervalMs`. */
async function pollHealthy(port: number, start: number, intervalMs: number, child?: ChildProcess) {
  const agent = new Agent({ keepAlive: false });
  try {
    for (;;) {
      if (child && (child.exitCode !== null || child.signalCode !== null)) {
        throw new Error(`the worker exited (${child.exitCode ?? child.signalCode}) before it was healthy`);
      }
      const ok = await httpGet(port, '/health', { agent, timeoutMs: 1_000 }).then(
        (a) => a.status === 200,
        () => false,
      );
      if (ok) return performance.now() - start;
      if (performance.now() - start > STEP_MAX_MS) throw new Error(`no healthy answer on port ${port}`);
      await sleep(intervalMs);
    }
  } finally {
    agent.destroy();
  }
}

/** The environment children get: ours minus this file's roles. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env[ROLE_ENV];
  delete env[UPSTREAM_ENV];
  delete env[LOADGEN_ENV];
  return { ...env, ...extra };
}

/** The test worker with this node, on 127.0.0.1:<port>, its log thrown away. */
function spawnWorker(port: number): ChildProcess {
  return track(
    spawn(process.execPath, [WORKER_SCRIPT], {
      env: childEnv({ PORT: String(port), HOST: '127.0.0.1', GRACE_MS: '1000' }),
      stdio: 'ignore',
    }),
  );
}

/** CPU time (user + system) a process has used, in ms; undefined once it is gone. */
function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** The processes whose parent is `ppid` (nginx's workers). */
function childPids(ppid: number | undefined): number[] {
  if (ppid === undefined) return [];
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

function totalCpuMs(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0);
}

// ---- tools ----

// ---- the gateway child ----

interface GatewayProcess {
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** The gateway (role `gateway`) or the bare reference proxy (role `bare`) in a child process. */
async function startProxyChild(role: 'gateway' | 'bare', upstreamPort: number): Promise<GatewayProcess> {
  const profileDir = process.env[PROFILE_ENV];
  const execArgv = ['--import', 'tsx'];
  if (profileDir && role === 'gateway') execArgv.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
  const child = track(
    fork(THIS_FILE, [], {
      cwd: REPO_ROOT,
      execArgv,
      env: childEnv({ [ROLE_ENV]: role, [UPSTREAM_ENV]: String(upstreamPort) }),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${role} child did not start in 30 s`)), 30_000);
    child.once('exit', (code) => reject(new Error(`the ${role} child exited with ${code}`)));
    child.on('message', (message: { type?: string; port?: number }) => {
      if (message.type === 'ready' && typeof message.port === 'number') {
        clearTimeout(timer);
        resolve(message.port);
      }
    });
  });
  return {
    port,
    child,
    async stop() {
      if (child.connected) child.send({ type: 'stop' });
      // A normal exit lets --cpu-prof write its profile.
      await stopChild(child, 'SIGCONT', 5_000);
    },
  };
}

/**
 * The gateway's modules as `corral serve` runs them: compiled by `npm run build` into dist/ (the suite builds it
 * first). Not through tsx: tsx compiles with esbuild's keepNames, which wraps every function the gateway makes per
 * request in a `__name(...)` call that the shipped code does not pay.
 */
async function compiledGatewayModules() {
  const dist = (file: string) => pathToFileURL(join(REPO_ROOT, 'dist', 'gateway', file)).href;
  const [gateway, pools, metrics, server] = await Promise.all([
    import(dist('gateway.js')) as Promise<typeof import('../src/gateway/gateway.js')>,
    import(dist('pools.js')) as Promise<typeof import('../src/gateway/pools.js')>,
    import(dist('metrics.js')) as Promise<typeof import('../src/gateway/metrics.js')>,
    import(dist('server.js')) as Promise<typeof import('../src/gateway/server.js')>,
  ]);
  return {
    Gateway: gateway.Gateway,
    WorkerPools: pools.WorkerPools,
    GatewayMetrics: metrics.GatewayMetrics,
    createGatewayServer: server.createGatewayServer,
  };
}

/** Runs in the child: the gateway as `corral serve` wires it, routing to the one worker through a static view. */
async function gatewayChild(): Promise<void> {
  const upstreamPort = Number(process.env[UPSTREAM_ENV]);
  const config = serveDefaults();
  const endpoint = benchEndpoint();
  const workers = [{ id: 'bench-worker', address: { host: '127.0.0.1', port: upstreamPort } }];
  const routing: RoutingView = {
    endpointByAppName: (appName) => (appName === APP_NAME ? endpoint : undefined),
    endpointById: (endpointId) => (endpointId === endpoint.id ? endpoint : undefined),
    routableWorkers: (endpointId) => (endpointId === endpoint.id ? workers : []),
    onChange: () => () => {},
  };
  const compiled = await compiledGatewayModules();
  const registry = new Registry();
  let gateway: Gateway | undefined;
  const metrics = new compiled.GatewayMetrics({ registry, load: () => gateway?.stats() ?? [] });
  const pools = new compiled.WorkerPools({ keepAliveTimeoutMs: config.gateway.workerKeepAliveMs });
  gateway = new compiled.Gateway({
    routing,
    pools,
    metrics,
    domain: config.domain,
    clock: systemClock,
    logger: devNullLogger(),
    bodyLimitBytes: config.gateway.bodyLimitBytes,
    maxQueueLength: config.gateway.maxQueueLength,
    queueTimeoutMs: config.gateway.queueTimeoutSeconds * 1000,
    reconcileNow: () => {},
    findEndpoint: async (appName) => (appName === APP_NAME ? endpoint : undefined),
  });
  const started = gateway;
  const server = compiled.createGatewayServer(gateway, {
    maxRequestTimeoutSeconds: config.limits.requestTimeoutSeconds.max,
    queueTimeoutSeconds: config.gateway.queueTimeoutSeconds,
  });
  const port = await listenLoopback(server);
  const stop = async () => {
    started.close();
    server.close();
    server.closeAllConnections();
    await pools.close(1_000);
    process.exit(0);
  };
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'stop') void stop();
  });
  process.on('disconnect', () => void stop());
  process.send?.({ type: 'ready', port });
}

/**
 * Runs in the child: the floor of the gateway's design, for reference only. A node:http server handing each
 * request to an undici Pool (the same settings as WorkerPools) through `dispatch`, dropping only Connection and
 * Keep-Alive: no routing, slots, queue, timeout, abort signal, header rules or metrics.
 */
async function bareProxyChild(): Promise<void> {
  const upstreamPort = Number(process.env[UPSTREAM_ENV]);
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, {
    connections: 64,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const hopByHop = (name: string) => {
    const lower = name.toLowerCase();
    return lower === 'connection' || lower === 'keep-alive';
  };
  const server = createServer((req, res) => {
    const headers: string[] = [];
    const raw = req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i] as string;
      if (!hopByHop(name)) headers.push(name, raw[i + 1] as string);
    }
    pool.dispatch(
      { path: req.url ?? '/', method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers, body: null },
      {
        onRequestStart() {},
        onResponseStart(_controller, statusCode, parsed, statusMessage) {
          const out: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(parsed)) {
            if (value !== undefined && !hopByHop(name)) out[name] = value;
          }
          res.writeHead(statusCode, statusMessage || undefined, out);
        },
        onResponseData(_controller, chunk) {
          res.write(chunk);
        },
        onResponseEnd() {
          res.end();
        },
        onResponseError() {
          if (!res.headersSent) res.writeHead(502);
          res.end();
        },
      },
    );
  });
  const port = await listenLoopback(server);
  const stop = async () => {
    server.close();
    server.closeAllConnections();
    await pool.close();
    process.exit(0);
  };
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'stop') void stop();
  });
  process.on('disconnect', () => void stop());
  process.send?.({ type: 'ready', port });
}

function listenLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

/** Logs as `corral serve` writes them (info level, same redaction), into /dev/null. */
function devNullLogger(): Logger {
  return createLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: false }) });
}

// ---- nginx ----

interface NginxProcess {
  port: number;
  child: ChildProcess;
  /** Master and workers. */
  pids(): number[];
  stop(): Promise<void>;
}

async function startNginx(
  binary: string,
  upstreamPort: number,
  workerProcesses: string,
  dir: string,
): Promise<NginxProcess> {
  const port = await freePort();
  const prefix = join(dir, `nginx-${workerProcesses}`);
  mkdirSync(join(prefix, 'tmp'), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `# Written by bench/gateway.ts: nginx proxying the bench worker with upstream keep-alive.
worker_processes ${workerProcesses};
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path ${prefix}/tmp/body;
  proxy_temp_path ${prefix}/tmp/proxy;
  fastcgi_temp_path ${prefix}/tmp/fastcgi;
  uwsgi_temp_path ${prefix}/tmp/uwsgi;
  scgi_temp_path ${prefix}/tmp/scgi;
  upstream corral_bench_worker {
    server 127.0.0.1:${upstreamPort};
    keepalive 32;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://corral_bench_worker;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
    }
  }
}
`,
  );
  const child = track(
    spawn(binary, ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  try {
    await waitFor(
      `nginx (worker_processes ${workerProcesses}) to proxy`,
      async () => {
        if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}: ${stderr}`);
        const ok = await httpGet(port, '/health', { timeoutMs: 1_000 }).then(
          (a) => a.status === 200,
          () => false,
        );
        return ok ? true : undefined;
      },
      { intervalMs: 20, maxMs: 10_000 },
    );
  } catch (error) {
    const log = existsSync(join(prefix, 'error.log')) ? readFileSync(join(prefix, 'error.log'), 'utf8') : '';
    await stopChild(child, 'SIGQUIT');
    throw new Error(`${(error as Error).message}\n${stderr}${log}`);
  }
  return {
    port,
    child,
    pids: () => (child.pid === undefined ? [] : [child.pid, ...childPids(child.pid)]),
    stop: () => stopChild(child, 'SIGQUIT'),
  };
}

// ---- 3. throughput (wrk) ----

interface Path {
  name: string;
  port: number;
  host?: string;
  /** The proxy's processes (none for direct). */
  proxyPids: () => number[];
}

interface WrkResult {
  requests: number;
  seconds: number;
  non2xx: number;
  socketErrors: number;
  p50Ms: number;
  p99Ms: number;
  proxyCpuMs: number;
  workerCpuMs: number;
}

function runWrk(wrk: string, path: Path, seconds: number): Promise<string> {
  return runWrkProcess(wrk, {
    threads: WRK_THREADS,
    connections: WRK_CONNECTIONS,
    seconds,
    url: `http://127.0.0.1:${path.port}${WORK_PATH}`,
    ...(path.host ? { host: path.host } : {}),
    onSpawn: track,
  });
}

async function measureThroughput(wrk: string, paths: Path[], workerPid: number | undefined) {
  const results = new Map<string, WrkResult[]>(paths.map((p) => [p.name, []]));
  for (const path of paths) await runWrk(wrk, path, WRK_WARMUP_S);
  for (let round = 0; round < WRK_ROUNDS; round++) {
    for (const path of paths) {
      const proxyPids = path.proxyPids();
      const proxyBefore = totalCpuMs(proxyPids);
      const workerBefore = cpuMs(workerPid) ?? 0;
      const parsed = parseWrk(await runWrk(wrk, path, WRK_ROUND_S));
      results.get(path.name)?.push({
        ...parsed,
        proxyCpuMs: totalCpuMs(proxyPids) - proxyBefore,
        workerCpuMs: (cpuMs(workerPid) ?? 0) - workerBefore,
      });
    }
  }
  return results;
}

interface ThroughputRow {
  name: string;
  rps: number;
  requests: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  proxyCpuUsPerReq: number;
  workerCpuUsPerReq: number;
  /** The proxy's CPU use over the measured rounds, in % of one core (100: its event loop never idled). */
  proxyCpuPercent: number;
}

function throughputRow(name: string, runs: WrkResult[]): ThroughputRow {
  const requests = runs.reduce((s, r) => s + r.requests, 0);
  const seconds = runs.reduce((s, r) => s + r.seconds, 0);
  const mean = (f: (r: WrkResult) => number) => runs.reduce((s, r) => s + f(r), 0) / runs.length;
  return {
    name,
    rps: requests / seconds,
    requests,
    errors: runs.reduce((s, r) => s + r.non2xx + r.socketErrors, 0),
    p50Ms: mean((r) => r.p50Ms),
    p99Ms: mean((r) => r.p99Ms),
    proxyCpuUsPerReq: (runs.reduce((s, r) => s + r.proxyCpuMs, 0) * 1000) / requests,
    workerCpuUsPerReq: (runs.reduce((s, r) => s + r.workerCpuMs, 0) * 1000) / requests,
    proxyCpuPercent: (runs.reduce((s, r) => s + r.proxyCpuMs, 0) / (seconds * 1000)) * 100,
  };
}

// ---- 4. latency at a fixed rate (open loop, separate process) ----

interface LoadgenTarget {
  name: string;
  port: number;
  host?: string;
}

interface LoadgenParams {
  targets: LoadgenTarget[];
  path: string;
  rate: number;
  warmupMs: number;
  sliceMs: number;
  slices: number;
}

interface LoadgenResult {
  /** From the moment each request was sent to the end of its answer. */
  serviceMs: number[];
  /** From the moment each request was due (corrects for a late send: coordinated omission). */
  fromDueMs: number[];
  errors: number;
  firstError?: string;
  /** The latest a request was sent after it was due. */
  maxSendLagMs: number;
}

/** One load generator process for every path, so that all paths share its warm-up and its noise. */
function runLoadgen(params: LoadgenParams): Promise<Record<string, LoadgenResult[]>> {
  return new Promise((resolve, reject) => {
    const child = track(
      fork(THIS_FILE, [], {
        cwd: REPO_ROOT,
        execArgv: ['--import', 'tsx'],
        env: childEnv({ [ROLE_ENV]: 'loadgen', [LOADGEN_ENV]: JSON.stringify(params) }),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    let result: Record<string, LoadgenResult[]> | undefined;
    const plannedMs = params.targets.length * (params.warmupMs + params.sliceMs * params.slices);
    const timer = setTimeout(() => child.kill('SIGKILL'), plannedMs + STEP_MAX_MS + 30_000);
    child.on('message', (message: { type?: string; result?: Record<string, LoadgenResult[]> }) => {
      if (message.type === 'result') result = message.result;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (result) resolve(result);
      else reject(new Error(`the load generator exited with ${code} and no result`));
    });
  });
}

/**
 * Runs in the child: an open-loop client, one request every 1000/rate ms whatever the answers. Each target is
 * warmed up, then the targets take turns in slices of `sliceMs` (direct, gateway, nginx, direct, ...), so that a
 * burst of other work on the machine falls on all of them alike.
 */
async function loadgenChild(): Promise<void> {
  const params = JSON.parse(process.env[LOADGEN_ENV] ?? '{}') as LoadgenParams;
  const agent = new Agent({ keepAlive: true, maxSockets: WRK_CONNECTIONS });
  const result: Record<string, LoadgenResult[]> = {};
  for (const target of params.targets) {
    await openLoop(target, params, params.warmupMs, agent);
    result[target.name] = [];
  }
  for (let slice = 0; slice < params.slices; slice++) {
    for (const target of params.targets) {
      result[target.name]?.push(await openLoop(target, params, params.sliceMs, agent));
    }
  }
  agent.destroy();
  process.send?.({ type: 'result', result }, () => process.disconnect());
}

function openLoop(
  target: LoadgenTarget,
  params: LoadgenParams,
  durationMs: number,
  agent: Agent,
): Promise<LoadgenResult> {
  const intervalMs = 1000 / params.rate;
  const total = Math.round((params.rate * durationMs) / 1000);
  const headers: Record<string, string> = target.host ? { host: target.host } : {};
  const result: LoadgenResult = { serviceMs: [], fromDueMs: [], errors: 0, maxSendLagMs: 0 };
  return new Promise((resolve) => {
    if (total === 0) {
      resolve(result);
      return;
    }
    let sent = 0;
    let finished = 0;
    const start = performance.now() + 5;
    const done = () => {
      finished += 1;
      if (finished === total) resolve(result);
    };
    const fail = (message: string) => {
      result.errors += 1;
      result.firstError ??= message;
      done();
    };
    const fire = (due: number) => {
      const sentAt = performance.now();
      result.maxSendLagMs = Math.max(result.maxSendLagMs, sentAt - due);
      let settled = false;
      const req = request(
        { host: '127.0.0.1', port: target.port, path: params.path, method: 'GET', headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (settled) return;
            settled = true;
            const end = performance.now();
            if (res.statusCode !== 200) {
              fail(`status ${res.statusCode}`);
              return;
            }
            result.serviceMs.push(end - sentAt);
            result.fromDueMs.push(end - due);
            done();
          });
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
      req.on('error', (error) => {
        if (settled) return;
        settled = true;
        fail(error.message);
      });
      req.end();
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * intervalMs <= now) {
        fire(start + sent * intervalMs);
        sent += 1;
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
    };
    setTimeout(tick, 5);
  });
}

interface LatencyRow {
  name: string;
  n: number;
  errors: number;
  firstError: string | undefined;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  dueP99: number;
  maxSendLagMs: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN;
}

function latencyRow(name: string, runs: LoadgenResult[]): LatencyRow {
  const service = runs.flatMap((r) => r.serviceMs).sort((a, b) => a - b);
  const due = runs.flatMap((r) => r.fromDueMs).sort((a, b) => a - b);
  const summary = summarize(service);
  return {
    name,
    n: summary.n,
    errors: runs.reduce((s, r) => s + r.errors, 0),
    firstError: runs.find((r) => r.firstError)?.firstError,
    p50: summary.p50,
    p99: summary.p99,
    p999: percentile(service, 0.999),
    max: summary.max,
    dueP99: percentile(due, 0.99),
    maxSendLagMs: Math.max(...runs.map((r) => r.maxSendLagMs)),
  };
}

async function measureLatency(paths: Path[]): Promise<Record<string, LoadgenResult[]>> {
  return runLoadgen({
    targets: paths.map((p) => ({ name: p.name, port: p.port, ...(p.host ? { host: p.host } : {}) })),
    path: WORK_PATH,
    rate: LATENCY_RATE,
    warmupMs: LATENCY_WARMUP_MS,
    sliceMs: LATENCY_SLICE_MS,
    slices: LATENCY_SLICES,
  });
}

// ---- 5 and 6. the control plane: wake from zero, scale-up decision ----

/** GatewayMetrics that also keeps each threshold crossing's decision, to report them one by one. */
class RecordingGatewayMetrics extends GatewayMetrics {
  readonly decisions: { endpointId: string; crossedAt: number; decidedAt: number; desired: number }[] = [];

  override observeScaleDecision(endpoint: string, decision: ScalingDecision, now: number): void {
    const crossed = decision.thresholdCrossedAt;
    if (
      crossed !== null &&
      crossed <= now &&
      !this.decisions.some((d) => d.endpointId === endpoint && d.crossedAt === crossed)
    ) {
      this.decisions.push({
        endpointId: endpoint,
        crossedAt: crossed,
        decidedAt: now,
        desired: decision.desired,
      });
    }
    super.observeScaleDecision(endpoint, decision, now);
  }
}

interface Stack {
  store: Store;
  runtime: LocalRuntime;
  controller: Controller;
  gateway: Gateway;
  metrics: RecordingGatewayMetrics;
  registry: Registry;
  port: number;
  config: Config;
  close(): Promise<void>;
}

/** Controller + gateway (src/main.ts `buildTraffic`, as `corral serve` builds them) + local runtime + SQLite. */
async function startStack(dir: string): Promise<Stack> {
  const config = serveDefaults();
  const store = new Store({ connection: connectSqlite(join(dir, 'corral.db')) });
  await store.migrate();
  const runtime = new LocalRuntime({ stateDir: join(dir, 'local'), graceSeconds: REMOVE_GRACE_S });
  const registry = new Registry();
  const traffic = buildTraffic({
    config,
    store,
    runtime,
    gpus: [],
    logger: devNullLogger(),
    registry,
    gatewayMetrics: (options) => new RecordingGatewayMetrics(options),
  });
  const { controller, gateway, gatewayMetrics: metrics } = traffic;
  const port = await listenLoopback(traffic.server);
  traffic.start();
  return {
    store,
    runtime,
    controller,
    gateway,
    metrics,
    registry,
    port,
    config,
    async close() {
      await traffic.close();
      const left = await runtime.list({ [LABELS.managed]: 'true' });
      await Promise.all(
        left.map((w) => runtime.remove(w.workerId, { graceSeconds: REMOVE_GRACE_S }).catch(() => undefined)),
      );
      await runtime.close();
      await store.close();
    },
  };
}

/** An endpoint whose worker is the test worker run by the local runtime with this node. */
function localEndpoint(appName: string, workers: Partial<WorkerSettings>, scaling?: Partial<ScalingPolicy>) {
  const quote = (s: string) => `'${s.replaceAll("'", `'"'"'`)}'`;
  return sampleEndpoint({
    ownerId: 'bench',
    at: Date.now(),
    patch: {
      appName,
      image: {
        ref: 'corral-test-worker:local',
        command: `${quote(process.execPath)} ${quote(WORKER_SCRIPT)}`,
      },
      port: 8000,
      env: [
        { key: 'HOST', value: '127.0.0.1' },
        { key: 'GRACE_MS', value: '1000' },
      ],
      workers: { gpusPerWorker: 0, ...workers },
      health: { path: '/health' },
      ...(scaling ? { scaling } : {}),
    },
  });
}

async function addEndpoint(stack: Stack, endpoint: Endpoint): Promise<void> {
  const at = Date.now();
  await stack.store.endpoints.create(
    { ...endpoint, createdAt: at, updatedAt: at },
    [{ at, type: 'created', message: 'endpoint created', data: { revision: 1 } }],
    { at, ownerId: endpoint.ownerId, actor: 'bench', action: 'endpoint.create', targetId: endpoint.id },
  );
  stack.controller.poke();
  await waitFor(`the controller to see ${endpoint.spec.appName}`, () =>
    stack.controller.endpointByAppName(endpoint.spec.appName) ? true : undefined,
  );
}

/** Deletes the endpoint (as the API does) and waits until its workers' processes are gone. */
async function removeEndpoint(stack: Stack, endpoint: Endpoint): Promise<void> {
  await deleteEndpoint(stack.store, endpoint);
  stack.controller.poke();
  await waitFor(
    `the workers of ${endpoint.spec.appName} to be removed`,
    async () => {
      const left = await stack.runtime.list({ [LABELS.endpoint]: endpoint.id });
      return left.length === 0 && stack.controller.workersOf(endpoint.id).length === 0 ? true : undefined;
    },
    { intervalMs: 20 },
  );
}

interface WakeRun {
  /** Request sent -> response ended (the figure). */
  firstResponseMs: number;
  /** Request sent -> the controller decided on a worker / the runtime started it / its probe passed. */
  decidedMs: number;
  startedMs: number;
  healthyMs: number;
  coldStartHeaderMs: number;
}

async function wakeRun(stack: Stack, appName: string): Promise<WakeRun> {
  const endpoint = localEndpoint(appName, { minWorkers: 0, maxWorkers: 1, maxConcurrent: 1 });
  await addEndpoint(stack, endpoint);
  try {
    // A random moment within the controller's interval, so that a pass under way is sampled fairly.
    await sleep(randomInt(stack.config.controller.reconcileIntervalMs));
    if (stack.controller.workersOf(endpoint.id).length > 0)
      throw new Error('a worker exists before the request');
    const sentAt = Date.now();
    const start = performance.now();
    const answer = await httpGet(stack.port, WORK_PATH, { host: `${appName}.${stack.config.domain}` });
    const firstResponseMs = performance.now() - start;
    if (answer.status !== 200) throw new Error(`the first request got ${answer.status}: ${answer.body}`);
    const worker = stack.controller.workersOf(endpoint.id)[0];
    return {
      firstResponseMs,
      decidedMs: (worker?.createdAt ?? Number.NaN) - sentAt,
      startedMs: (worker?.startedAt ?? Number.NaN) - sentAt,
      healthyMs: (worker?.readyAt ?? Number.NaN) - sentAt,
      coldStartHeaderMs: Number(answer.headers['x-corral-cold-start-ms'] ?? Number.NaN),
    };
  } finally {
    await removeEndpoint(stack, endpoint);
  }
}

/** The worker's own start-to-ready: spawn it as the local runtime does and poll /health every 10 ms. */
async function baselineRun(): Promise<number> {
  const port = await freePort();
  const start = performance.now();
  const child = spawnWorker(port);
  try {
    return await pollHealthy(port, start, BASELINE_POLL_MS, child);
  } finally {
    await stopChild(child, 'SIGKILL');
  }
}

interface ScaleRun {
  /** Threshold crossed -> the autoscaler's decision (corral_autoscaler_decision_delay_seconds). */
  decisionMs: number;
  /** Threshold crossed -> the controller created the new worker (its record). */
  createdMs: number;
  /** Threshold crossed -> the runtime had started its process. */
  startedMs: number;
  /** The queued request's wait, as X-Corral-Queue-Ms says. */
  queuedMs: number;
  desired: number;
  /** What corral_autoscaler_decision_delay_seconds holds for the endpoint, read before it is deleted (and forgotten). */
  registry: { count: number; sumMs: number };
}

async function scaleRun(stack: Stack, appName: string): Promise<ScaleRun> {
  const endpoint = localEndpoint(
    appName,
    { minWorkers: 1, maxWorkers: 2, maxConcurrent: 1, idleTimeoutSeconds: 60 },
    { type: 'queue', value: SCALE_POLICY_S },
  );
  await addEndpoint(stack, endpoint);
  const host = `${appName}.${stack.config.domain}`;
  const pending: Promise<unknown>[] = [];
  try {
    const first = await waitFor(
      `the first worker of ${appName}`,
      () => stack.controller.routableWorkers(endpoint.id)[0],
      { intervalMs: 10 },
    );
    const load = () => stack.gateway.stats().find((s) => s.endpointId === endpoint.id);
    const hold = httpGet(stack.port, `/work?ms=${SCALE_HOLD_MS}`, { host });
    pending.push(hold.catch(() => undefined));
    await waitFor(
      'the long request to take the slot',
      () => ((load()?.inFlight ?? 0) >= 1 ? true : undefined),
      {
        intervalMs: 2,
      },
    );
    const queued = httpGet(stack.port, WORK_PATH, { host });
    pending.push(queued.catch(() => undefined));
    const decision = await waitFor(
      'the scale-up decision',
      () => stack.metrics.decisions.find((d) => d.endpointId === endpoint.id),
      { intervalMs: 2, maxMs: SCALE_POLICY_S * 1000 + STEP_MAX_MS },
    );
    const added = await waitFor(
      'the new worker',
      () => stack.controller.workersOf(endpoint.id).find((w) => w.id !== first.id && w.startedAt !== null),
      { intervalMs: 2 },
    );
    const [held, served] = await Promise.all([hold, queued]);
    if (held.status !== 200 || served.status !== 200) {
      throw new Error(`answers ${held.status} and ${served.status}: ${held.body} ${served.body}`);
    }
    return {
      registry: await decisionHistogram(stack.registry, endpoint.id),
      decisionMs: decision.decidedAt - decision.crossedAt,
      createdMs: added.createdAt - decision.crossedAt,
      startedMs: (added.startedAt ?? Number.NaN) - decision.crossedAt,
      queuedMs: Number(served.headers['x-corral-queue-ms'] ?? Number.NaN),
      desired: decision.desired,
    };
  } finally {
    await Promise.all(pending);
    await removeEndpoint(stack, endpoint);
  }
}

/** One endpoint's corral_autoscaler_decision_delay_seconds as /metrics shows it: its count and sum. */
async function decisionHistogram(
  registry: Registry,
  endpointId: string,
): Promise<{ count: number; sumMs: number }> {
  const metric = registry.getSingleMetric('corral_autoscaler_decision_delay_seconds');
  const data = metric ? await metric.get() : undefined;
  let count = 0;
  let sum = 0;
  const values = (data?.values ?? []) as {
    value: number;
    metricName?: string;
    labels: { endpoint?: string };
  }[];
  for (const value of values) {
    if (value.labels.endpoint !== endpointId) continue;
    if (value.metricName?.endsWith('_count')) count += value.value;
    if (value.metricName?.endsWith('_sum')) sum += value.value;
  }
  return { count, sumMs: sum * 1000 };
}

// ---- the gateway's CPU profile (when CORRAL_BENCH_GATEWAY_CPU_PROF is set) ----

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Where the gateway child's sampled time went (self time by kind of code), from its newest .cpuprofile. */
function summarizeProfile(dir: string): void {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (1 is tsx's loader thread).
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) : [];
  const newest = files.sort().at(-1);
  if (!newest) {
    console.log(`\nno .cpuprofile in ${dir}`);
    return;
  }
  const profile = JSON.parse(readFileSync(join(dir, newest), 'utf8')) as CpuProfile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const kind = (frame: CpuProfile['nodes'][number]['callFrame']): string | undefined => {
    const { functionName: fn, url } = frame;
    if (fn === '(idle)') return undefined;
    if (['writev', 'writeLatin1String', 'writeUtf8String', 'writeBuffer'].includes(fn)) {
      return 'socket writes (syscalls, incl. loopback delivery)';
    }
    if (fn === '(garbage collector)') return 'garbage collector';
    if (url.includes('prom-client')) return 'metrics (prom-client)';
    if (url.includes('abort_controller') || url.includes('event_target'))
      return 'AbortController / EventTarget';
    if (url.includes('/src/gateway/')) return 'src/gateway (own code)';
    if (url.includes('undici') || url.startsWith('wasm://')) return 'undici (client, llhttp)';
    if (url.startsWith('node:_http') || url.startsWith('node:internal/http')) return 'node:http server';
    if (url.startsWith('node:') || url === '') return 'other node core and native';
    return 'other (tsx, startup)';
  };
  const byKind = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id);
    const us = profile.timeDeltas[i + 1] ?? 0;
    const k = frame && kind(frame);
    if (!frame || k === undefined) return;
    busy += us;
    byKind.set(k, (byKind.get(k) ?? 0) + us);
    const where = frame.url.replace(/^.*node_modules\//, '').replace(`file://${REPO_ROOT}/`, '');
    const name = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  });
  const share = (us: number) => `${((us / busy) * 100).toFixed(1)}%`;
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => [name, share(us)]);
  console.log(
    `\nGateway CPU profile ${join(dir, newest)}: ${(busy / 1e6).toFixed(1)} s of samples, idle excluded`,
  );
  console.log(table(['self time in', 'share'], top(byKind, 12)));
  console.log(table(['function (self time)', 'share'], top(byFunction, 15)));
}

// ---- the suite ----

function median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}

function fixed(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

function verdict(ok: boolean | undefined): string {
  return ok === undefined ? 'NOT MEASURED' : ok ? 'PASS' : 'MISS';
}

export async function runGatewayBench(): Promise<void> {
  console.log('\n== Gateway (issue: traffic) ==');
  console.log('command: npm run bench -- gateway');
  const nproc = (() => {
    try {
      return execFileSync('nproc', { encoding: 'utf8' }).trim();
    } catch {
      return '?';
    }
  })();
  const tools = ensureTools();
  buildDist();
  console.log(
    `nproc ${nproc}, node ${process.version}, ${tools.nginxVersion}, ${tools.wrkVersion}; load average ${loadAverage()}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-gw-'));
  const onExit = () => killAllSync();
  process.once('exit', onExit);
  const problems: string[] = [];
  const summary: string[][] = [];
  try {
    await proxyFigures(tools, dir, problems, summary);
    const profileDir = process.env[PROFILE_ENV];
    if (profileDir) summarizeProfile(profileDir);
    await controlPlaneFigures(dir, problems, summary);
  } finally {
    killAllSync();
    process.off('exit', onExit);
    rmSync(dir, { recursive: true, force: true });
  }
  console.log('\nTargets (DESIGN.md section 5)');
  console.log(table(['figure', 'measured', 'target', 'verdict'], summary));
  if (problems.length > 0) {
    console.log('\nproblems:');
    for (const problem of problems) console.log(`- ${problem}`);
  }
  console.log(`load average after: ${loadAverage()}`);
}

/** 1-4: the worker, the gateway child and nginx; throughput and latency. */
async function proxyFigures(tools: Tools, dir: string, problems: string[], summary: string[][]) {
  const workerPort = await freePort();
  const worker = spawnWorker(workerPort);
  let gateway: GatewayProcess | undefined;
  let bare: GatewayProcess | undefined;
  const nginxes: NginxProcess[] = [];
  try {
    await pollHealthy(workerPort, performance.now(), 10, worker);
    gateway = await startProxyChild('gateway', workerPort);
    const gatewayChildPid = gateway.child.pid;
    const paths: Path[] = [
      { name: 'direct', port: workerPort, proxyPids: () => [] },
      {
        name: 'gateway',
        port: gateway.port,
        host: `${APP_NAME}.localhost`,
        proxyPids: () => (gatewayChildPid === undefined ? [] : [gatewayChildPid]),
      },
    ];
    if (tools.nginx) {
      try {
        const one = await startNginx(tools.nginx, workerPort, '1', dir);
        nginxes.push(one);
        paths.push({ name: 'nginx', port: one.port, proxyPids: () => one.pids() });
        const auto = await startNginx(tools.nginx, workerPort, 'auto', dir);
        nginxes.push(auto);
        paths.push({ name: 'nginx (workers auto)', port: auto.port, proxyPids: () => auto.pids() });
      } catch (error) {
        problems.push(`nginx: ${(error as Error).message}`);
      }
    }
    bare = await startProxyChild('bare', workerPort);
    const barePid = bare.child.pid;
    paths.push({
      name: BARE_PATH,
      port: bare.port,
      proxyPids: () => (barePid === undefined ? [] : [barePid]),
    });
    const check = await httpGet(gateway.port, WORK_PATH, { host: `${APP_NAME}.localhost` });
    if (check.status !== 200) throw new Error(`the gateway answered ${check.status}: ${check.body}`);

    // 3. throughput
    console.log(
      `\nThroughput: wrk -t${WRK_THREADS} -c${WRK_CONNECTIONS} -d${WRK_ROUND_S}s --latency GET ${WORK_PATH}, ` +
        `${WRK_ROUNDS} interleaved rounds per path after a ${WRK_WARMUP_S} s warm-up`,
    );
    let rows: ThroughputRow[] = [];
    if (tools.wrk) {
      const runs = await measureThroughput(tools.wrk, paths, worker.pid);
      rows = paths.map((p) => throughputRow(p.name, runs.get(p.name) ?? []));
      const rps = (name: string) => rows.find((r) => r.name === name)?.rps ?? Number.NaN;
      console.log(
        table(
          [
            'path',
            'req/s',
            'gateway/this',
            'this/direct',
            'wrk p50 ms',
            'wrk p99 ms',
            'errors',
            'proxy CPU us/req',
            'proxy CPU % of a core',
            'worker CPU us/req',
          ],
          rows.map((r) => [
            r.name,
            r.rps.toFixed(0),
            r.name === 'gateway' ? '' : fixed(rps('gateway') / r.rps),
            r.name === 'direct' ? '' : fixed(r.rps / rps('direct')),
            formatMs(r.p50Ms),
            formatMs(r.p99Ms),
            String(r.errors),
            r.name === 'direct' ? '' : r.proxyCpuUsPerReq.toFixed(0),
            r.name === 'direct' ? '' : r.proxyCpuPercent.toFixed(0),
            r.workerCpuUsPerReq.toFixed(0),
          ]),
        ),
      );
      console.log(
        'CPU per request from /proc/<pid>/stat (10 ms ticks) over the measured rounds; nginx: master + workers',
      );
      for (const r of rows)
        if (r.errors > 0) problems.push(`${r.name}: ${r.errors} failed requests under wrk`);
      const ratio = rps('gateway') / rps('nginx');
      summary.push([
        'throughput gateway / nginx (worker_processes 1)',
        `${fixed(ratio)} (${rps('gateway').toFixed(0)} / ${rps('nginx').toFixed(0)} req/s)`,
        `>= ${TARGET.throughputRatio}`,
        verdict(Number.isFinite(ratio) ? ratio >= TARGET.throughputRatio : undefined),
      ]);
      summary.push([
        'throughput gateway / direct (information)',
        fixed(rps('gateway') / rps('direct')),
        '',
        '',
      ]);
      summary.push([
        'throughput node:http+undici (ref) / nginx (information)',
        fixed(rps(BARE_PATH) / rps('nginx')),
        '',
        '',
      ]);
    } else {
      console.log('SKIPPED: wrk is not installed');
      summary.push(['throughput gateway / nginx', '-', `>= ${TARGET.throughputRatio}`, verdict(undefined)]);
    }

    // 4. latency at 500 req/s
    const latencyPaths = paths.filter((p) => p.name !== 'nginx (workers auto)');
    console.log(
      `\nLatency at a fixed ${LATENCY_RATE} req/s (open loop, one separate process, keep-alive), ` +
        `${LATENCY_SLICES} interleaved slices of ${LATENCY_SLICE_MS / 1000} s per path after a ` +
        `${LATENCY_WARMUP_MS / 1000} s warm-up each; ms from send to the end of the answer`,
    );
    const latency = await measureLatency(latencyPaths);
    const lrows = latencyPaths.map((p) => latencyRow(p.name, latency[p.name] ?? []));
    const direct = lrows.find((r) => r.name === 'direct');
    console.log(
      table(
        [
          'path',
          'n',
          'errors',
          'p50',
          'p99',
          'p99.9',
          'max',
          'added p50',
          'added p99',
          'p99 from due',
          'max send lag',
        ],
        lrows.map((r) => [
          r.name,
          String(r.n),
          String(r.errors),
          formatMs(r.p50),
          formatMs(r.p99),
          formatMs(r.p999),
          formatMs(r.max),
          r.name === 'direct' || !direct ? '' : fixed(r.p50 - direct.p50, 3),
          r.name === 'direct' || !direct ? '' : fixed(r.p99 - direct.p99, 3),
          formatMs(r.dueP99),
          formatMs(r.maxSendLagMs),
        ]),
      ),
    );
    for (const r of lrows) {
      if (r.errors > 0) problems.push(`latency ${r.name}: ${r.errors} failed requests (${r.firstError})`);
    }
    const gw = lrows.find((r) => r.name === 'gateway');
    const addedP50 = gw && direct ? gw.p50 - direct.p50 : Number.NaN;
    const addedP99 = gw && direct ? gw.p99 - direct.p99 : Number.NaN;
    summary.push([
      'added latency p50 at 500 req/s',
      `${fixed(addedP50, 3)} ms (${formatMs(gw?.p50 ?? Number.NaN)} - ${formatMs(direct?.p50 ?? Number.NaN)})`,
      `< ${TARGET.addedP50Ms} ms`,
      verdict(Number.isFinite(addedP50) ? addedP50 < TARGET.addedP50Ms : undefined),
    ]);
    summary.push([
      'added latency p99 at 500 req/s',
      `${fixed(addedP99, 3)} ms (${formatMs(gw?.p99 ?? Number.NaN)} - ${formatMs(direct?.p99 ?? Number.NaN)})`,
      `< ${TARGET.addedP99Ms} ms`,
      verdict(Number.isFinite(addedP99) ? addedP99 < TARGET.addedP99Ms : undefined),
    ]);
  } finally {
    for (const nginx of nginxes) await nginx.stop();
    await bare?.stop();
    await gateway?.stop();
    await stopChild(worker, 'SIGTERM', 2_000);
  }
}

/** 5-6: the real controller and gateway with the local runtime. */
async function controlPlaneFigures(dir: string, problems: string[], summary: string[][]) {
  const run = randomBytes(3).toString('hex');
  const stack = await startStack(join(dir, 'stack'));
  const wakes: WakeRun[] = [];
  const baselines: number[] = [];
  const scales: ScaleRun[] = [];
  try {
    // One unmeasured round of each, so that no measured run pays for a cold page cache or unoptimised code.
    await baselineRun().catch((error: unknown) =>
      problems.push(`warm-up baseline: ${(error as Error).message}`),
    );
    await wakeRun(stack, `warm-${run}`).catch((error: unknown) =>
      problems.push(`warm-up wake: ${(error as Error).message}`),
    );
    for (let i = 0; i < WAKE_RUNS; i++) {
      try {
        baselines.push(await baselineRun());
      } catch (error) {
        problems.push(`baseline ${i + 1}: ${(error as Error).message}`);
      }
      try {
        wakes.push(await wakeRun(stack, `wake-${run}-${i}`));
      } catch (error) {
        problems.push(`wake ${i + 1}: ${(error as Error).message}`);
      }
    }
    for (let i = 0; i < SCALE_RUNS; i++) {
      try {
        scales.push(await scaleRun(stack, `scale-${run}-${i}`));
      } catch (error) {
        problems.push(`scale-up ${i + 1}: ${(error as Error).message}`);
      }
    }
  } finally {
    await stack.close();
  }

  console.log(
    '\nWake from zero: controller + gateway + local runtime (test worker with this node), minWorkers 0; ' +
      'ms from the request sent (new connection)',
  );
  console.log(
    table(
      [
        'run',
        'worker own start-to-ready',
        'first response',
        'overhead',
        'decided',
        'process started',
        'probe passed',
        'X-Corral-Cold-Start-Ms',
      ],
      wakes.map((w, i) => [
        String(i + 1),
        formatMs(baselines[i] ?? Number.NaN),
        formatMs(w.firstResponseMs),
        formatMs(w.firstResponseMs - (baselines[i] ?? Number.NaN)),
        String(w.decidedMs),
        String(w.startedMs),
        String(w.healthyMs),
        String(w.coldStartHeaderMs),
      ]),
    ),
  );
  const baselineMedian = median(baselines);
  const wakeMedian = median(wakes.map((w) => w.firstResponseMs));
  const differenceOfMedians = wakeMedian - baselineMedian;
  // Each wake run paired with the baseline measured just before it.
  const pairedMedian = median(wakes.map((w, i) => w.firstResponseMs - (baselines[i] ?? Number.NaN)));
  const overhead = Math.max(differenceOfMedians, pairedMedian);
  console.log(
    `median: worker own start-to-ready ${formatMs(baselineMedian)} ms (/health polled every ${BASELINE_POLL_MS} ms), ` +
      `first response ${formatMs(wakeMedian)} ms; overhead: difference of the medians ${formatMs(differenceOfMedians)} ms, ` +
      `median of the paired differences ${formatMs(pairedMedian)} ms (the verdict takes the larger); ` +
      'the controller probes a starting worker every 50 ms, as serve sets it',
  );
  summary.push([
    'wake from zero: first response - worker start-to-ready (median of 5)',
    `${formatMs(overhead)} ms (medians ${formatMs(wakeMedian)} - ${formatMs(baselineMedian)}; paired ${formatMs(pairedMedian)})`,
    `< ${TARGET.wakeOverheadMs} ms`,
    verdict(Number.isFinite(overhead) ? overhead < TARGET.wakeOverheadMs : undefined),
  ]);

  // Each run's series, read before its endpoint was deleted: a deleted endpoint's series are dropped.
  const histogram = {
    count: scales.reduce((n, s) => n + s.registry.count, 0),
    sumMs: scales.reduce((n, s) => n + s.registry.sumMs, 0),
  };
  console.log(
    `\nScale-up decision: policy queue ${SCALE_POLICY_S} s, one worker of maxConcurrent 1 held by a ` +
      `${SCALE_HOLD_MS} ms request, one request queued; ms from the threshold (enqueue + ${SCALE_POLICY_S} s)`,
  );
  console.log(
    table(
      ['run', 'decision', 'worker created', 'worker process started', 'desired', 'queued request waited'],
      scales.map((s, i) => [
        String(i + 1),
        String(s.decisionMs),
        String(s.createdMs),
        String(s.startedMs),
        String(s.desired),
        String(s.queuedMs),
      ]),
    ),
  );
  const decisionMedian = median(scales.map((s) => s.decisionMs));
  console.log(
    `corral_autoscaler_decision_delay_seconds (Registry): count ${histogram.count}, ` +
      `mean ${formatMs(histogram.count > 0 ? histogram.sumMs / histogram.count : Number.NaN)} ms`,
  );
  summary.push([
    'scale-up decision after the queue threshold (median of 5)',
    `${formatMs(decisionMedian)} ms (worker created ${formatMs(median(scales.map((s) => s.createdMs)))} ms)`,
    `< ${TARGET.decisionMs} ms`,
    verdict(Number.isFinite(decisionMedian) ? decisionMedian < TARGET.decisionMs : undefined),
  ]);
}

// ---- child roles ----

const role = process.env[ROLE_ENV];
if (role === 'gateway') {
  gatewayChild().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
} else if (role === 'bare') {
  bareProxyChild().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
} else if (role === 'loadgen') {
  loadgenChild().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
