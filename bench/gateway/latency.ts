/**
 * Added latency at a fixed rate (figure 4): the open-loop load generator takes every path in turn; p50/p99 by
 * sorting (nearest rank), the gateway's minus direct's (nginx and the reference proxy are measured alike, for
 * information).
 */
import { formatMs, summarize, table } from '../support.js';
import { type LoadgenResult, runLoadgen } from './loadgen.js';
import type { Path } from './paths.js';
import { fixed, verdict } from './report.js';
import {
  LATENCY_RATE,
  LATENCY_SLICE_MS,
  LATENCY_SLICES,
  LATENCY_WARMUP_MS,
  TARGET,
  WORK_PATH,
} from './settings.js';

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

/** Measures and prints the latency table at LATENCY_RATE req/s. */
export async function latencyFigures(paths: Path[], problems: string[], summary: string[][]): Promise<void> {
  console.log(
    `\nLatency at a fixed ${LATENCY_RATE} req/s (open loop, one separate process, keep-alive), ` +
      `${LATENCY_SLICES} interleaved slices of ${LATENCY_SLICE_MS / 1000} s per path after a ` +
      `${LATENCY_WARMUP_MS / 1000} s warm-up each; ms from send to the end of the answer`,
  );
  const latency = await measureLatency(paths);
  const lrows = paths.map((p) => latencyRow(p.name, latency[p.name] ?? []));
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
}
