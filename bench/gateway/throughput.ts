/**
 * Throughput (figure 3): `wrk` against every path in short interleaved rounds after a warm-up each; req/s, the
 * ratios and the CPU each process used per request. Short interleaved rounds, because the machine may be shared:
 * a burst of other work then falls on every path alike rather than on one.
 */
import { formatMs, table } from '../support.js';
import { parseWrk, runWrk as runWrkProcess, type WrkFigures } from '../tools.js';
import type { Path } from './paths.js';
import { cpuMs, totalCpuMs, track } from './processes.js';
import { fixed, verdict } from './report.js';
import {
  BARE_PATH,
  BENCH_AUTHORIZATION,
  TARGET,
  WORK_PATH,
  WRK_CONNECTIONS,
  WRK_ROUND_S,
  WRK_ROUNDS,
  WRK_THREADS,
  WRK_WARMUP_S,
} from './settings.js';

/** One wrk run's figures, with the CPU the proxy and the worker used during it. */
interface WrkResult extends WrkFigures {
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
    authorization: BENCH_AUTHORIZATION,
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

/** Measures and prints the throughput table; `wrk` undefined: says it is skipped. */
export async function throughputFigures(
  wrk: string | undefined,
  paths: Path[],
  workerPid: number | undefined,
  problems: string[],
  summary: string[][],
): Promise<void> {
  console.log(
    `\nThroughput: wrk -t${WRK_THREADS} -c${WRK_CONNECTIONS} -d${WRK_ROUND_S}s --latency GET ${WORK_PATH}, ` +
      `${WRK_ROUNDS} interleaved rounds per path after a ${WRK_WARMUP_S} s warm-up`,
  );
  if (!wrk) {
    console.log('SKIPPED: wrk is not installed');
    summary.push(['throughput gateway / nginx', '-', `>= ${TARGET.throughputRatio}`, verdict(undefined)]);
    return;
  }
  const runs = await measureThroughput(wrk, paths, workerPid);
  const rows = paths.map((p) => throughputRow(p.name, runs.get(p.name) ?? []));
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
  for (const r of rows) if (r.errors > 0) problems.push(`${r.name}: ${r.errors} failed requests under wrk`);
  const ratio = rps('gateway') / rps('nginx');
  summary.push([
    'throughput gateway / nginx (worker_processes 1)',
    `${fixed(ratio)} (${rps('gateway').toFixed(0)} / ${rps('nginx').toFixed(0)} req/s)`,
    `>= ${TARGET.throughputRatio}`,
    verdict(Number.isFinite(ratio) ? ratio >= TARGET.throughputRatio : undefined),
  ]);
  summary.push(['throughput gateway / direct (information)', fixed(rps('gateway') / rps('direct')), '', '']);
  summary.push([
    'throughput node:http+undici (ref) / nginx (information)',
    fixed(rps(BARE_PATH) / rps('nginx')),
    '',
    '',
  ]);
}
