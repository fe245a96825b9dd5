/**
 * Jobs benchmark (issue 22), `npm run bench -- jobs`: 10,000 trivial jobs through one replica on SQLite to
 * protocol workers (bench/jobs/throughput.ts) beside a bare HTTP baseline measured in the same run. Settings:
 * CORRAL_BENCH_JOBS (default 10000), CORRAL_BENCH_JOBS_WORKERS (16), CORRAL_BENCH_JOBS_BATCH (4).
 */
import { formatRatio, loadAverage, table } from '../support.js';
import { measureBareThroughput, measureJobsThroughput, type ThroughputSettings } from './throughput.js';

const TARGET_JOBS_PER_S = 1000;

export async function runJobsBench(): Promise<void> {
  const settings: ThroughputSettings = {
    jobs: Number(process.env.CORRAL_BENCH_JOBS ?? 10_000),
    workers: Number(process.env.CORRAL_BENCH_JOBS_WORKERS ?? 16),
    batch: Number(process.env.CORRAL_BENCH_JOBS_BATCH ?? 4),
    limitMs: 120_000,
  };
  console.log(
    `\n## jobs: ${settings.jobs} trivial jobs, ${settings.workers} protocol workers taking batches of ${settings.batch}`,
  );
  console.log(`load average before: ${loadAverage()}`);
  const bare = await measureBareThroughput(settings);
  const corral = await measureJobsThroughput(settings);
  console.log(`load average after: ${loadAverage()}`);
  const row = (name: string, f: typeof bare): string[] => [
    name,
    f.seconds.toFixed(2),
    f.jobsPerSecond.toFixed(0),
    String(f.completed),
    String(f.lost),
    String(f.ranTwice),
    f.submittedPerSecond === undefined ? '-' : f.submittedPerSecond.toFixed(0),
  ];
  console.log(
    table(
      ['', 's', 'jobs/s', 'completed', 'lost', 'ran twice', 'submitted/s'],
      [row('bare HTTP (baseline)', bare), row('corral, SQLite, 1 replica', corral)],
    ),
  );
  console.log(
    `corral / bare: ${formatRatio(corral.jobsPerSecond / bare.jobsPerSecond)}; target ${TARGET_JOBS_PER_S} jobs/s: ${corral.jobsPerSecond >= TARGET_JOBS_PER_S ? 'met' : 'not met'}; none lost: ${corral.lost === 0}; none ran twice: ${corral.ranTwice === 0}`,
  );
}
