/**
 * Jobs benchmark (issue 22), `npm run bench -- jobs`: 10,000 trivial jobs through one replica on SQLite to
 * protocol workers (bench/jobs/throughput.ts) beside a bare HTTP baseline measured in the same run, then
 * `corral serve`'s RSS with 100,000 jobs queued beside the same server with none (bench/jobs/queued-memory.ts).
 * With CORRAL_TEST_DATABASE_URL set, a second throughput row: three replicas on PostgreSQL (a scratch database).
 * Settings:
 * CORRAL_BENCH_JOBS (default 10000), CORRAL_BENCH_JOBS_WORKERS (16), CORRAL_BENCH_JOBS_BATCH (4), CORRAL_BENCH_JOBS_QUEUED (100000);
 * CORRAL_BENCH_JOBS_PARTS=runsync,throughput,memory (the default: all three, in
 * that order) runs some; CORRAL_BENCH_JOBS_ROUNDS (500) runsync rounds (bench/jobs/runsync-latency.ts).
 * The part `openai` (not in the default) measures time to first token on the OpenAI route (bench/jobs/openai-ttft.ts),
 * CORRAL_BENCH_JOBS_TTFT_ROUNDS (200) rounds.
 */
import { join } from 'node:path';
import { connectPostgres } from '../../src/store/postgres/connect.js';
import { connectSqlite } from '../../src/store/sqlite/connect.js';
import { ScratchDatabases } from '../../test/support/scratch-databases.js';
import { formatMs, formatRatio, loadAverage, table } from '../support.js';
import { measureOpenAITtft } from './openai-ttft.js';
import { measureQueuedMemory } from './queued-memory.js';
import { measureRunsync } from './runsync-latency.js';
import {
  measureBareThroughput,
  measureJobsThroughput,
  type ThroughputFigures,
  type ThroughputSettings,
} from './throughput.js';

const TARGET_JOBS_PER_S = 1000;
const TARGET_QUEUED_MIB = 300;
const TARGET_RUNSYNC_ADDED_MS = 5;
const TARGET_TTFT_MS = 20;

export async function runJobsBench(): Promise<void> {
  const parts = new Set((process.env.CORRAL_BENCH_JOBS_PARTS ?? 'runsync,throughput,memory').split(','));
  if (parts.has('runsync')) await runRunsync();
  if (parts.has('throughput')) await runThroughput();
  if (parts.has('memory')) await runQueuedMemory();
  if (parts.has('openai')) await runOpenAITtft();
}

async function runOpenAITtft(): Promise<void> {
  const rounds = Number(process.env.CORRAL_BENCH_JOBS_TTFT_ROUNDS ?? 200);
  console.log(
    `\n## jobs: time to first token on the OpenAI route (handler's first yield to the client's first byte), ${rounds} rounds`,
  );
  console.log(`load average before: ${loadAverage()}`);
  const f = await measureOpenAITtft(rounds);
  console.log(`load average after: ${loadAverage()}`);
  const row = (name: string, s: typeof f.openai): string[] => [
    name,
    formatMs(s.p50),
    formatMs(s.p99),
    formatMs(s.mean),
    formatMs(s.max),
  ];
  console.log(
    table(
      ['', 'p50 ms', 'p99 ms', 'mean ms', 'max ms'],
      [
        row('POST /v2/{id}/openai/v1/chat/completions, stream', f.openai),
        row('baseline: /v2/{id}/run + /stream/{job} long poll', f.runpodStream),
      ],
    ),
  );
  console.log(`p50 ratio (OpenAI route / RunPod stream): ${formatRatio(f.openai.p50 / f.runpodStream.p50)}`);
  console.log(
    `TTFT p50 ${formatMs(f.openai.p50)} ms; target within ${TARGET_TTFT_MS} ms: ${f.openai.p50 <= TARGET_TTFT_MS ? 'met' : 'not met'}`,
  );
}

async function runRunsync(): Promise<void> {
  const rounds = Number(process.env.CORRAL_BENCH_JOBS_ROUNDS ?? 500);
  console.log(
    `\n## jobs: runsync on a warm worker against the same work as a plain gateway request, ${rounds} rounds`,
  );
  console.log(`load average before: ${loadAverage()}`);
  const f = await measureRunsync(rounds);
  console.log(`load average after: ${loadAverage()}`);
  const row = (name: string, s: typeof f.plain): string[] => [
    name,
    formatMs(s.p50),
    formatMs(s.p99),
    formatMs(s.mean),
  ];
  console.log(
    table(
      ['', 'p50 ms', 'p99 ms', 'mean ms'],
      [
        row('POST /echo through the gateway', f.plain),
        row('POST /v2/{app}/runsync (jobsPath /echo)', f.runsync),
      ],
    ),
  );
  const added = f.runsync.p50 - f.plain.p50;
  console.log(
    `p50 added by runsync: ${formatMs(added)} ms; target under ${TARGET_RUNSYNC_ADDED_MS} ms: ${added < TARGET_RUNSYNC_ADDED_MS ? 'met' : 'not met'}`,
  );
}

async function runQueuedMemory(): Promise<void> {
  const jobs = Number(process.env.CORRAL_BENCH_JOBS_QUEUED ?? 100_000);
  console.log(`\n## jobs: corral serve's RSS with ${jobs} jobs queued (SQLite)`);
  console.log(`load average before: ${loadAverage()}`);
  const f = await measureQueuedMemory(jobs);
  console.log(`load average after: ${loadAverage()}`);
  console.log(
    table(
      ['', 'RSS MiB'],
      [
        ['no job', f.emptyMiB.toFixed(1)],
        [`${jobs} jobs queued (after a restart)`, f.queuedMiB.toFixed(1)],
      ],
    ),
  );
  console.log(
    `added by the queue: ${(f.queuedMiB - f.emptyMiB).toFixed(1)} MiB; target under ${TARGET_QUEUED_MIB} MB: ${f.queuedMiB * 1.048576 < TARGET_QUEUED_MIB ? 'met' : 'not met'}; rows written in ${f.insertSeconds.toFixed(1)} s`,
  );
}

async function runThroughput(): Promise<void> {
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
  const corral = await measureJobsThroughput(settings, {
    replicas: 1,
    // As `corral serve` opens it (app/startup.ts): its queries on a thread of their own, the WAL checkpointed on
    // another, not in commits.
    connect: (dir) =>
      connectSqlite(join(dir, 'corral.db'), {
        queryThread: true,
        backgroundCheckpoints: { intervalMs: 1000 },
      }),
  });
  const postgres = await measurePostgres(settings);
  console.log(`load average after: ${loadAverage()}`);
  const row = (name: string, f: typeof bare): string[] => [
    name,
    f.seconds.toFixed(2),
    f.jobsPerSecond.toFixed(0),
    String(f.completed),
    String(f.lost),
    String(f.ranTwice),
    f.serverCpuUsPerJob.toFixed(0),
    f.submittedPerSecond === undefined ? '-' : f.submittedPerSecond.toFixed(0),
  ];
  console.log(
    table(
      ['', 's', 'jobs/s', 'completed', 'lost', 'ran twice', 'server CPU µs/job', 'submitted/s'],
      [
        row('bare HTTP (baseline)', bare),
        row('corral, SQLite, 1 replica', corral),
        ...(postgres ? [row('corral, PostgreSQL, 3 replicas', postgres)] : []),
      ],
    ),
  );
  console.log(
    `corral / bare: ${formatRatio(corral.jobsPerSecond / bare.jobsPerSecond)}; target ${TARGET_JOBS_PER_S} jobs/s: ${corral.jobsPerSecond >= TARGET_JOBS_PER_S ? 'met' : 'not met'}; none lost: ${corral.lost === 0}; none ran twice: ${corral.ranTwice === 0}`,
  );
  if (postgres)
    console.log(
      `PostgreSQL, 3 replicas / bare: ${formatRatio(postgres.jobsPerSecond / bare.jobsPerSecond)}; none lost: ${postgres.lost === 0}; none ran twice: ${postgres.ranTwice === 0}`,
    );
}

/** The second row: three replicas on a scratch database of CORRAL_TEST_DATABASE_URL's server (none: skipped). */
async function measurePostgres(settings: ThroughputSettings): Promise<ThroughputFigures | undefined> {
  const baseUrl = process.env.CORRAL_TEST_DATABASE_URL;
  if (!baseUrl) {
    console.log('CORRAL_TEST_DATABASE_URL unset: no PostgreSQL row');
    return undefined;
  }
  const databases = await ScratchDatabases.connect(baseUrl);
  try {
    const url = await databases.create('corral_bench_jobs');
    return await measureJobsThroughput(settings, {
      replicas: 3,
      connect: () => connectPostgres({ connectionString: url }),
    });
  } finally {
    await databases.dropAll();
  }
}
