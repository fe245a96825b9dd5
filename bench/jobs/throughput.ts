/**
 * Jobs throughput (issue 22), part of `npm run bench -- jobs`: 10,000 trivial jobs through one replica's jobs
 * (src/app/build-jobs.ts, its real store on SQLite, or three replicas on PostgreSQL; its worker routes on a real
 * HTTP listener on 127.0.0.1) to protocol workers in a child process (protocol-workers.ts) that take in batches
 * (`job-take-batch?batch_size=N`) and post each result as runpod-python does. Jobs/s from the first take to the last result; then the store's counts say none was lost
 * and the workers' own tally says none ran twice. The baseline, in the same run: the same workers against a bare
 * HTTP server that answers every take with a batch of made-up jobs and every result with 200 (no store): the
 * HTTP round trips alone, so the ratio is what the queue and the store cost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildJobs } from '../../src/app/build-jobs.js';
import { DEFAULT_WORKER_LISTENER_LIMITS, startWorkerListener } from '../../src/app/worker-listener.js';
import { DEFAULT_JOB_POLICY, DEFAULT_JOB_STREAM_BOUNDS } from '../../src/domain/job.js';
import { systemClock, systemTimers } from '../../src/ports/clock.js';
import type { DatabaseConnection } from '../../src/store/connection.js';
import { Store } from '../../src/store/store.js';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { CPU_PROF_ENV, profiled } from './profile-run.js';
import { driveInChild } from './protocol-workers.js';

export interface ThroughputSettings {
  jobs: number;
  workers: number;
  batch: number;
  /** A bound on each figure's run. */
  limitMs: number;
}

export interface ThroughputFigures {
  seconds: number;
  jobsPerSecond: number;
  completed: number;
  lost: number;
  ranTwice: number;
  /**
   * This process's CPU time (user + system) per job over the run, in µs: the server's own cost, which the machine's
   * load does not inflate as it does the wall-clock rate (the workers run in another process).
   */
  serverCpuUsPerJob: number;
  /** The jobs' submission before the run, one at a time through the service (jobs/s); none for the baseline. */
  submittedPerSecond?: number;
}

/** One replica's jobs: its own store connection, worker listener and sweeper. */
async function startReplica(store: Store, replicaId: string) {
  let url = '';
  const logger = pino({ level: 'silent' });
  const jobs = await buildJobs({
    store,
    settings: {
      // The bench measures the queue, not the per-owner submission rate: a budget it never reaches.
      stream: DEFAULT_JOB_STREAM_BOUNDS,
      submissionRate: { requestsPerSecond: 1_000_000, burst: 1_000_000 },
      retentionSeconds: 1800,
      syncRetentionSeconds: 60,
      maxAttempts: 3,
      lostAfterSeconds: 35,
      stopGraceSeconds: 30,
      takeHoldSeconds: 1,
    },
    clock: systemClock,
    timers: systemTimers,
    logger,
    domain: 'localhost',
    verifyKey: async () => undefined,
    workersAddress: { url: () => url },
    replicaId,
    gatewayUrl: () => undefined,
  });
  const listener = await startWorkerListener({
    address: { host: '127.0.0.1', port: 0 },
    handler: jobs.workerHandler,
    logger,
    // The bench's 16 workers share one address (127.0.0.1), where a deployment's each have their own: the
    // per-address cap (64, a container's share) would close their connections past it.
    limits: {
      ...DEFAULT_WORKER_LISTENER_LIMITS,
      maxConnectionsPerClient: DEFAULT_WORKER_LISTENER_LIMITS.maxConnections,
    },
  });
  url = `http://127.0.0.1:${listener.address.port}`;
  jobs.start();
  return {
    jobs,
    close: async () => {
      await jobs.close();
      await listener.close();
      await store.close();
    },
  };
}

/**
 * Corral's jobs, `replicas` of them in this process, each with its own connection from `connect` (SQLite: one
 * replica on a file of a temporary directory; PostgreSQL: a scratch database). Jobs are submitted round-robin over
 * the replicas, and worker w takes from replica w mod replicas.
 */
export async function measureJobsThroughput(
  settings: ThroughputSettings,
  store: { replicas: number; connect: (dir: string) => DatabaseConnection },
): Promise<ThroughputFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-jobs-'));
  const stores = Array.from({ length: store.replicas }, () => new Store({ connection: store.connect(dir) }));
  const first = stores[0];
  if (!first) throw new Error('no replica');
  await first.migrate();
  const endpoint = sampleEndpoint({ patch: { type: 'queue', workers: { maxConcurrent: settings.batch } } });
  await first.endpoints.create(endpoint, [], {
    at: 1,
    ownerId: endpoint.ownerId,
    actor: 'bench',
    action: 'create',
    targetId: endpoint.id,
  });
  const replicas = await Promise.all(stores.map((s, r) => startReplica(s, `bench-${r}`)));
  const replica = (i: number) => {
    const chosen = replicas[i % replicas.length];
    if (!chosen) throw new Error('no replica');
    return chosen.jobs;
  };
  try {
    const submitStart = performance.now();
    for (let i = 0; i < settings.jobs; i++) {
      await replica(i).service.submit(
        endpoint,
        { input: `{"i":${i}}`, inputBytes: `{"i":${i}}`.length, webhook: null, policy: DEFAULT_JOB_POLICY },
        false,
      );
    }
    const submitMs = performance.now() - submitStart;
    const urls = Array.from({ length: settings.workers }, (_, w) => {
      const env = Object.fromEntries(
        replica(w)
          .protocolEnv(endpoint.id, `w-${w}`)
          .map((e) => [e.key, e.value]),
      );
      return {
        take: String(env.RUNPOD_WEBHOOK_GET_JOB),
        result: String(env.RUNPOD_WEBHOOK_POST_OUTPUT),
        token: String(env.RUNPOD_AI_API_KEY),
      };
    });
    const cpu = process.cpuUsage();
    const { ms, ranTwice } = await profiled(process.env[CPU_PROF_ENV], `jobs-${store.replicas}-replica`, () =>
      driveInChild(urls, settings),
    );
    const serverCpuUsPerJob = cpuUsOf(process.cpuUsage(cpu)) / settings.jobs;
    const counts = await first.jobs.counts(endpoint.id);
    const completed = counts.COMPLETED ?? 0;
    return {
      seconds: ms / 1000,
      jobsPerSecond: settings.jobs / (ms / 1000),
      completed,
      lost: settings.jobs - completed,
      ranTwice,
      serverCpuUsPerJob,
      submittedPerSecond: settings.jobs / (submitMs / 1000),
    };
  } finally {
    for (const r of replicas) await r.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The baseline: the same workers against a bare server that hands out made-up jobs and keeps nothing. */
export async function measureBareThroughput(settings: ThroughputSettings): Promise<ThroughputFigures> {
  let next = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.includes('/job-take-batch/')) {
        const batch = Array.from({ length: settings.batch }, () => ({
          id: `j${next++}`,
          input: { i: next },
        }));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(batch));
        return;
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  try {
    const base = `http://127.0.0.1:${port}`;
    const urls = Array.from({ length: settings.workers }, () => ({
      take: `${base}/v2/job-take/w?x=1`,
      result: `${base}/v2/job-done/$ID?x=1`,
      token: 'bare',
    }));
    const cpu = process.cpuUsage();
    const { ms, ranTwice } = await driveInChild(urls, settings);
    const serverCpuUsPerJob = cpuUsOf(process.cpuUsage(cpu)) / settings.jobs;
    return {
      seconds: ms / 1000,
      jobsPerSecond: settings.jobs / (ms / 1000),
      completed: settings.jobs,
      lost: 0,
      ranTwice,
      serverCpuUsPerJob,
    };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function cpuUsOf(usage: NodeJS.CpuUsage): number {
  return usage.user + usage.system;
}
