/**
 * Tenant-isolation benchmark (issue 29, its last "Done when" line), `npm run bench -- tenant-isolation`: does one
 * tenant trying items 3, 4 and 5 at once sink `corral serve` for another tenant?
 *
 * A real `corral serve` (stack.ts: dist/, built first; SQLite; the local runtime, its workers real host processes).
 * Tenant B calls `/healthz` and its own small endpoint through the gateway (tenant-b.ts), first with nothing else
 * running (the baseline, at most 300 of each within 15 s), then while tenant A, from a process of its own
 * (tenant-a.ts), runs an http job whose app answers 400 MiB of JSON, 60 low-priority `run`s of 9.5 MiB and a job
 * whose worker streams 400 chunks of 1 MiB, all at once, until A is done or ATTACK_MAX_MS (90 s) passes. The server's
 * RSS is sampled every 100 ms throughout (rss-sampler.ts). Printed: B's p50/p99/max of each call in each phase, the
 * server's largest RSS and VmHWM, what A's requests got, and each target (peak RSS under 500 MB, B's p99s under
 * 100 ms) with its attack/baseline ratio. It reports; only CORRAL_BENCH_ISOLATION_STRICT=1 makes a missed target exit
 * non-zero. Past CORRAL_BENCH_ISOLATION_RSS_CAP_MB (8000) the server is killed and the attack ends (a shared
 * machine). Everything started is stopped and removed at the end, also on failure. CORRAL_BENCH_ISOLATION_CPU_PROF=<dir>
 * runs the server under `node --cpu-prof` and prints where its time went (the profiler slows it).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServeProcess } from '../../test/support/process.js';
import { cpuMs } from '../gateway/processes.js';
import { summarizeProfile } from '../gateway/profile.js';
import { LoopbackClient, loadAverage } from '../support.js';
import { buildDist } from '../tools.js';
import { type RunningAttack, startAttack } from './attack-process.js';
import { printReport } from './report.js';
import { RssSampler } from './rss-sampler.js';
import {
  ANSWER_BYTES,
  ATTACK_MAX_MS,
  B_INTERVAL_MS,
  BASELINE_BOUNDS,
  HOARD_BODY_BYTES,
  HOARD_IN_FLIGHT,
  HOARD_JOBS,
  PROFILE_DIR,
  RSS_CAP_MIB,
  STREAM_CHUNK_BYTES,
  STREAM_CHUNKS,
  WARM_UP_REQUESTS,
} from './settings.js';
import { APPS, closeStack, databaseBytes, prepareTenants, startServer, workerLogLines } from './stack.js';
import { measureTenantB, type TenantB } from './tenant-b.js';

const MIB = 1024 * 1024;

export async function runTenantIsolationBench(): Promise<void> {
  console.log(
    '\n== Tenant isolation: tenant A tries issue 29 items 3-5 at once, tenant B calls /healthz and its endpoint ==',
  );
  console.log('command: npm run bench -- tenant-isolation');
  console.log(
    `A: one http job answered ${ANSWER_BYTES / MIB} MiB; ${HOARD_JOBS} low-priority runs of ${HOARD_BODY_BYTES / MIB} MiB, ` +
      `${HOARD_IN_FLIGHT} at once; one job streaming ${STREAM_CHUNKS} chunks of ${STREAM_CHUNK_BYTES / MIB} MiB; ` +
      `at most ${ATTACK_MAX_MS / 1000} s. B: one request at most every ${B_INTERVAL_MS} ms; baseline at most ` +
      `${BASELINE_BOUNDS.count} of each or ${BASELINE_BOUNDS.maxMs / 1000} s. Server RSS cap ${RSS_CAP_MIB} MiB.`,
  );
  buildDist();
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-isolation-'));
  let server: ServeProcess | undefined;
  let attack: RunningAttack | undefined;
  let sampler: RssSampler | undefined;
  const clients: LoopbackClient[] = [];
  try {
    const started = await startServer(dataDir, PROFILE_DIR);
    server = started.server;
    const pid = server.child.pid;
    if (pid === undefined) throw new Error('corral serve has no pid');
    const stack = await prepareTenants(server, started.operatorKey);
    const b: TenantB = {
      api: new LoopbackClient(stack.apiPort),
      gateway: new LoopbackClient(stack.gatewayPort),
      token: stack.keyB,
      app: APPS.b,
    };
    clients.push(b.api, b.gateway);
    await measureTenantB(b, { count: WARM_UP_REQUESTS / 2, maxMs: 10_000 });

    const killServer = () => {
      console.log(`the server's RSS passed ${RSS_CAP_MIB} MiB: killing it, the attack ends here`);
      attack?.stop();
      server?.child.kill('SIGKILL');
    };
    sampler = new RssSampler({ pid, capMiB: RSS_CAP_MIB, onCap: killServer });
    /** The server's CPU time per second since the last call. */
    let cpuMark = { at: performance.now(), ms: cpuMs(pid) ?? Number.NaN };
    const cpuPerSecond = () => {
      const now = { at: performance.now(), ms: cpuMs(pid) ?? Number.NaN };
      const perSecond = ((now.ms - cpuMark.ms) / (now.at - cpuMark.at)) * 1000;
      cpuMark = now;
      return perSecond;
    };
    const loadBefore = loadAverage();
    sampler.startPhase();
    cpuPerSecond();
    const baseline = await measureTenantB(b, BASELINE_BOUNDS);
    const baselineMemory = sampler.endPhase();
    const baselineCpuMsPerS = cpuPerSecond();

    sampler.startPhase();
    const attackStarted = performance.now();
    attack = startAttack({
      gatewayPort: stack.gatewayPort,
      token: stack.keyA,
      answerApp: APPS.answer,
      hoardApp: APPS.hoard,
      streamApp: APPS.stream,
    });
    let attackOver = false;
    const report = attack.report.finally(() => {
      attackOver = true;
    });
    const running = attack;
    let cutAtBound = false;
    const bound = setTimeout(() => {
      cutAtBound = true;
      running.stop();
    }, ATTACK_MAX_MS);
    const capped = sampler;
    const during = await measureTenantB(
      b,
      { count: Number.MAX_SAFE_INTEGER, maxMs: ATTACK_MAX_MS + 20_000 },
      () => attackOver || capped.capped,
    );
    const a = await report.catch((error: unknown) => error as Error);
    clearTimeout(bound);
    const attackSeconds = (performance.now() - attackStarted) / 1000;
    const attackMemory = sampler.endPhase();
    const attackCpuMsPerS = cpuPerSecond();
    sampler.stop();
    printReport({
      loadBefore,
      loadAfter: loadAverage(),
      baseline,
      during,
      baselineMemory,
      attackMemory,
      attackSeconds,
      baselineCpuMsPerS,
      attackCpuMsPerS,
      killedAtCap: sampler.capped,
      cutAtBound,
      tenantA: a,
      streamed: workerLogLines(dataDir, 'streamed'),
      answered: workerLogLines(dataDir, 'answered'),
      databaseBytes: databaseBytes(dataDir),
    });
  } finally {
    sampler?.stop();
    if (attack && attack.child.exitCode === null) attack.child.kill('SIGKILL');
    for (const client of clients) client.close();
    await closeStack(server, dataDir);
  }
  if (PROFILE_DIR) summarizeProfile(PROFILE_DIR);
}
