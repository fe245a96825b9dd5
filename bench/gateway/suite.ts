/**
 * Gateway benchmark (issue: traffic), `npm run bench -- gateway`. Everything in one run, on 127.0.0.1 only,
 * bounded in time and count:
 *
 * 1. One test worker (test/fixtures/worker/worker.mjs with this node, `GET /work?ms=0` answers at once) is the
 *    upstream of all three paths: direct, through the gateway, through nginx (proxy-figures.ts).
 * 2. The gateway runs in a CHILD process (child.ts forked with CORRAL_BENCH_GATEWAY_ROLE=gateway:
 *    gateway-child.ts), wired as `corral serve` wires it (WorkerPools, GatewayMetrics, serve's default settings,
 *    the compiled dist/ modules that `corral serve` runs; the suite runs `npm run build` first) but with a static
 *    RoutingView stub: one endpoint (appName `bench`, maxConcurrent 64) and that one worker routable. A child
 *    process, not in-process, because the gateway is one event loop and so is this orchestrating process:
 *    in-process, the bench's own work (timers, parsing wrk's output, and for the latency figure the load
 *    generator) would run on the gateway's thread and be charged to it and not to nginx, which has its own
 *    processes. As a child it is scheduled by the kernel like nginx's worker; on a 2-core machine all processes
 *    still share the cores. nginx (Debian's nginx-light, installed with apt-get when missing, as is wrk: see
 *    ../tools.ts) runs with a minimal config (nginx.ts) proxying to the same worker with upstream keep-alive
 *    (keepalive 32, proxy_http_version 1.1, `Connection ""`), `worker_processes 1` (one event loop, as the
 *    gateway) for the target ratio, and also `worker_processes auto` for information. Both set
 *    X-Forwarded-For/Proto/Host as the gateway does, log no request, and have no per-connection request limit
 *    (nginx's default of 1,000 is raised, Node has none).
 * 3. Throughput (throughput.ts): `wrk -t2 -c32` against direct, gateway (Host: bench.localhost) and nginx, 5
 *    interleaved rounds of 2 s each (10 s per path) after a 1 s warm-up per path; req/s, ratios, and the CPU each
 *    process used per request. A reference path, for reading the result only: a bare node:http + undici proxy
 *    (role `bare`, bare-proxy-child.ts, the floor of the gateway's design), in its own child process too.
 * 4. Added latency at a fixed 500 req/s (latency.ts): an open-loop client in a separate process (loadgen.ts,
 *    role `loadgen`: a request every 2 ms whatever the answers, over keep-alive connections), the paths taking
 *    turns in 10 slices of 1 s each (5,000 requests per path) after a 1 s warm-up each; p50/p99 by sorting
 *    (nearest rank); the gateway's minus direct's (nginx and the reference proxy are measured alike, for
 *    information).
 * 5. Wake from zero (wake.ts): the real Controller + Gateway in this process, wired as `corral serve` does
 *    (stack.ts), with the `local` runtime running the test worker (image.command = this node + worker.mjs) and a
 *    SQLite store; an endpoint with minWorkers 0. The local runtime rather than Docker: what is measured is the
 *    gateway's and the controller's part (queue -> signal -> pass -> start -> probe -> route), and the local
 *    runtime adds the least around it (the Docker engine's own create/start time is the controller suite's
 *    figure). First response minus the worker's own start-to-ready (spawned here, /health polled every 10 ms
 *    until 200), 5 runs interleaved with 5 baselines (after one unmeasured run of each); the overhead is the
 *    larger of the difference of the medians and the median of the paired differences.
 * 6. Scale-up decision (scale.ts): same stack, an endpoint with one running worker of maxConcurrent 1 and policy
 *    `queue` 1 s; one long request takes the slot, a second one queues; the time from the threshold (the queued
 *    request's enqueue + 1 s) to the autoscaler's decision, as corral_autoscaler_decision_delay_seconds records
 *    it (read back from the Registry), and to the controller creating the new worker. 5 runs, median.
 *
 * With CORRAL_BENCH_GATEWAY_CPU_PROF=<dir>, the gateway child runs under `node --cpu-prof` and the suite prints
 * where its sampled time went (profile.ts; the profiler slows the gateway down: that run's figures are not the
 * gateway's).
 *
 * Every process and worker started here is stopped at the end, also on failure (processes.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAverage, table } from '../support.js';
import { buildDist, ensureTools } from '../tools.js';
import { controlPlaneFigures } from './control-plane.js';
import { killAllSync } from './processes.js';
import { summarizeProfile } from './profile.js';
import { proxyFigures } from './proxy-figures.js';
import { PROFILE_ENV } from './settings.js';

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
