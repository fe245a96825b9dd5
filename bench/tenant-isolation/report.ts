/**
 * The tenant-isolation suite's printout: tenant B's latencies in each phase, the server's memory, what tenant A's
 * requests got, and the targets of issue 29 with their attack/baseline ratios. With CORRAL_BENCH_ISOLATION_STRICT=1 a
 * missed target sets a non-zero exit code; otherwise the suite only reports.
 */
import { formatMs, formatRatio, table } from '../support.js';
import type { PhaseMemory } from './rss-sampler.js';
import { ATTACK_MAX_MS, STRICT, TARGET_P99_MS, TARGET_RSS_MB } from './settings.js';
import type { AttackReport, JobOutcome, Reads } from './tenant-a.js';
import { type CallFigures, describeSlowest, type PhaseFigures } from './tenant-b.js';

export interface SuiteFigures {
  loadBefore: string;
  loadAfter: string;
  baseline: PhaseFigures;
  during: PhaseFigures;
  baselineMemory: PhaseMemory;
  attackMemory: PhaseMemory;
  attackSeconds: number;
  /** The server's CPU time per second of each phase (2 cores: at most 2000). */
  baselineCpuMsPerS: number;
  attackCpuMsPerS: number;
  killedAtCap: boolean;
  /** The attack's time bound passed before tenant A was done. */
  cutAtBound: boolean;
  /** Tenant A's report, or why there is none. */
  tenantA: AttackReport | Error;
  /** The stream worker's and the answer app's progress lines (what they sent, in order). */
  streamed: Record<string, unknown>[];
  answered: Record<string, unknown>[];
  databaseBytes: number;
}

const MIB_IN_MB = 1.048576;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
const byStatus = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([status, n]) => `${n}x${status}`)
    .join(' ') || 'none';

export function printReport(f: SuiteFigures): void {
  console.log(`load average before: ${f.loadBefore}; after: ${f.loadAfter}`);
  const row = (phase: string, call: string, c: CallFigures, seconds: number) => [
    phase,
    call,
    String(c.summary.n),
    seconds.toFixed(1),
    String(c.failures),
    formatMs(c.summary.p50),
    formatMs(c.summary.p99),
    formatMs(c.summary.max),
  ];
  console.log('\nTenant B (ms; one request in flight, /healthz and a gateway call in turn):');
  console.log(
    table(
      ['phase', 'call', 'n', 'in s', 'failed', 'p50', 'p99', 'max'],
      [
        row('baseline', 'GET /healthz', f.baseline.healthz, f.baseline.seconds),
        row('baseline', 'gateway GET /e/b-small/work', f.baseline.gateway, f.baseline.seconds),
        row('attack', 'GET /healthz', f.during.healthz, f.during.seconds),
        row('attack', 'gateway GET /e/b-small/work', f.during.gateway, f.during.seconds),
      ],
    ),
  );
  for (const [label, c] of [
    ['attack /healthz', f.during.healthz],
    ['attack gateway', f.during.gateway],
  ] as const) {
    console.log(`  ${label}: slowest ${describeSlowest(c)}`);
    if (c.firstFailure) console.log(`  ${label}: first failure: ${c.firstFailure}`);
  }
  for (const c of [f.baseline.healthz, f.baseline.gateway])
    if (c.firstFailure) console.log(`  baseline: first failure: ${c.firstFailure}`);

  console.log(
    '\ncorral serve (its CPU time per second; VmRSS sampled every 100 ms; VmHWM, the peak since it started):',
  );
  const memoryRow = (phase: string, m: PhaseMemory, cpu: number) => [
    phase,
    cpu.toFixed(0),
    String(m.samples),
    m.maxRssMiB.toFixed(0),
    m.maxAtS.toFixed(1),
    m.hwmMiB.toFixed(0),
  ];
  console.log(
    table(
      ['phase', 'CPU ms/s', 'samples', 'max RSS MiB', 'at s', 'VmHWM MiB'],
      [
        memoryRow('baseline', f.baselineMemory, f.baselineCpuMsPerS),
        memoryRow('attack', f.attackMemory, f.attackCpuMsPerS),
      ],
    ),
  );
  if (f.killedAtCap) console.log('  the server was killed at the RSS cap: its peak is at least the cap');
  console.log(`  SQLite database on disk after the attack (with its WAL): ${mb(f.databaseBytes)}`);

  printTenantA(f);

  const peakMB = f.attackMemory.hwmMiB * MIB_IN_MB;
  const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
  const targets = [
    {
      what: `peak RSS of corral serve (VmHWM): ${peakMB.toFixed(0)} MB${f.killedAtCap ? ' or more (killed at the cap)' : ''}`,
      met: peakMB < TARGET_RSS_MB && !f.killedAtCap,
      target: `${TARGET_RSS_MB} MB`,
      ratio: f.attackMemory.hwmMiB / f.baselineMemory.hwmMiB,
    },
    ...(['healthz', 'gateway'] as const).map((call) => {
      const p99 = f.during[call].summary.p99;
      return {
        what: `tenant B's p99 ${call === 'healthz' ? '/healthz' : 'gateway call'}: ${formatMs(p99)} ms`,
        met: p99 < TARGET_P99_MS && f.during[call].failures === 0,
        target: `${TARGET_P99_MS} ms`,
        ratio: p99 / f.baseline[call].summary.p99,
      };
    }),
  ];
  console.log('\nTargets of issue 29:');
  if (f.cutAtBound)
    console.log(
      `  the attack was cut at its bound (${ATTACK_MAX_MS / 1000} s) before tenant A was done: these are the figures of ` +
        'a partial attack (CORRAL_BENCH_ISOLATION_ATTACK_S sets the bound)',
    );
  for (const t of targets)
    console.log(
      `  ${t.what}; under ${t.target}: ${verdict(t.met)}; attack / baseline ${formatRatio(t.ratio)}`,
    );
  if (STRICT && targets.some((t) => !t.met)) {
    console.log('CORRAL_BENCH_ISOLATION_STRICT=1 and a target is missed: exit code 1');
    process.exitCode = 1;
  }
}

function reads(r: Reads): string {
  return `${r.count} reads (${byStatus(r.byStatus)}), largest ${mb(r.maxBytes)}, in all ${mb(r.totalBytes)}, slowest ${formatMs(r.maxMs)} ms`;
}

function job(j: JobOutcome): string {
  const detail = j.detail ? `; ${j.detail.slice(0, 200)}` : '';
  return `run ${j.runStatus || 'no answer'}, ${j.finalStatus} after ${j.seconds.toFixed(1)} s${detail}`;
}

/** The last of the workers' progress lines for each value of `key` (a job, an answer). */
function lastOfEach(lines: Record<string, unknown>[], key: string): Record<string, unknown>[] {
  return [...new Map(lines.map((line) => [String(line[key]), line])).values()];
}

function printTenantA(f: SuiteFigures): void {
  console.log(`\nTenant A (its attack took ${f.attackSeconds.toFixed(1)} s):`);
  if (f.tenantA instanceof Error) {
    console.log(`  no report: ${f.tenantA.message}`);
    return;
  }
  const { answer, hoard, stream, errors } = f.tenantA;
  if (answer) {
    console.log(`  item 3, an http job whose app answers a huge JSON: ${job(answer)}`);
    console.log(`    its status: ${reads(answer.statusReads)}`);
    for (const line of lastOfEach(f.answered, 'answer'))
      console.log(
        `    the app had sent ${mb(Number(line.bytes))} of ${mb(Number(line.of))}${line.done ? '' : ' (still sending)'}`,
      );
  } else console.log('  item 3: not run');
  if (hoard) {
    console.log(
      `  item 4, ${hoard.sent} low-priority runs in ${hoard.seconds.toFixed(1)} s: ${byStatus(hoard.byStatus)}` +
        `${hoard.errors > 0 ? `, ${hoard.errors} without an answer` : ''}`,
    );
    if (hoard.firstRefusal) console.log(`    first refusal: ${hoard.firstRefusal.slice(0, 300)}`);
  } else console.log('  item 4: not run');
  if (stream) {
    console.log(`  item 5, a job whose worker streams huge chunks: ${job(stream)}`);
    for (const line of lastOfEach(f.streamed, 'job'))
      console.log(
        `    the worker had sent ${line.sent} of ${line.chunks} chunks of ${mb(Number(line.chunkBytes))}, answered ` +
          `${byStatus(line.byStatus as Record<string, number>)} in ${Number(line.seconds).toFixed(1)} s` +
          `${line.done ? `; its result ${line.result}` : ' (still sending)'}`,
      );
    console.log(`    its stream: ${reads(stream.streamReads)}`);
    console.log(`    its status: ${reads(stream.statusReads)}`);
  } else console.log('  item 5: not run');
  if (errors.length > 0)
    console.log(`  ${errors.length} requests without an answer, the first: ${errors.slice(0, 3).join('; ')}`);
}
