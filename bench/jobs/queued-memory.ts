/**
 * `corral serve`'s memory with 100,000 jobs queued (issue 22), part of `npm run bench -- jobs`: a real `corral
 * serve` (the compiled dist/, SQLite, the `local` runtime) with one queue endpoint (minNum 0); its RSS, read from
 * /proc/<pid>/status, the median of 5 samples 1 s apart after 10 s settled, first with no job (the baseline, same
 * run), then after a restart with 100,000 IN_QUEUE jobs written into its database while it was stopped (one SQLite
 * transaction: submitting them through `run` would take minutes here). They are `lowPriority`, so no worker is
 * started and nothing takes them: what is measured is the queue held, as the store keeps it, by the process that
 * reads it (sweeper, signals, health). Target: under 300 MB.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CorralClient } from '../../src/client/index.js';
import { DEFAULT_JOB_POLICY } from '../../src/domain/job.js';
import type { ServeProcess } from '../../test/support/process.js';
import { memoryOf } from '../memory-readings.js';
import { buildDist } from '../tools.js';
import { startLocalServe, testWorkerImage } from './local-serve.js';

export interface QueuedMemoryFigures {
  emptyMiB: number;
  queuedMiB: number;
  jobs: number;
  insertSeconds: number;
}

const SETTLE_MS = 10_000;
const SAMPLES = 5;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function settledRss(server: ServeProcess): Promise<number> {
  const pid = server.child.pid;
  if (pid === undefined) throw new Error('corral serve has no pid');
  await sleep(SETTLE_MS);
  const values: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    values.push(memoryOf(pid)?.rssMiB ?? Number.NaN);
    if (i < SAMPLES - 1) await sleep(1_000);
  }
  values.sort((a, b) => a - b);
  return values[Math.floor(values.length / 2)] ?? Number.NaN;
}

/** 100,000 IN_QUEUE rows as `JobRepository.enqueue` writes them, in one transaction. */
function insertQueued(file: string, endpointId: string, count: number): number {
  const db = new Database(file);
  try {
    const owner = db.prepare('select owner_id from endpoints where id = ?').get(endpointId) as {
      owner_id: string;
    };
    const insert = db.prepare(
      `insert into jobs (id, endpoint_id, owner_id, status, input, output, error, webhook, execution_timeout_ms,
        ttl_ms, low_priority, sync, retain_ms, worker_id, attempts, created_at, started_at, completed_at, expires_at,
        deadline_at, retain_until, seen_at, stop_pending, stopped_at)
       values (?, ?, ?, 'IN_QUEUE', ?, null, null, null, ?, ?, 1, 0, 1800000, null, 0, ?, null, null, ?, null, null,
        null, 0, null)`,
    );
    const started = performance.now();
    const now = Date.now();
    db.transaction(() => {
      for (let i = 0; i < count; i++) {
        insert.run(
          randomUUID(),
          endpointId,
          owner.owner_id,
          `{"i":${i}}`,
          DEFAULT_JOB_POLICY.executionTimeoutMs,
          DEFAULT_JOB_POLICY.ttlMs,
          now + i,
          now + i + DEFAULT_JOB_POLICY.ttlMs,
        );
      }
    })();
    return (performance.now() - started) / 1000;
  } finally {
    db.close();
  }
}

export async function measureQueuedMemory(jobs: number): Promise<QueuedMemoryFigures> {
  buildDist();
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-jobs-memory-'));
  const key = `sk_bench_${randomBytes(16).toString('hex')}`;
  const serve = () => startLocalServe(dataDir, key);
  let server: ServeProcess | undefined;
  try {
    server = await serve();
    const client = new CorralClient({ baseUrl: server.apiUrl, apiKey: key });
    const { id } = await client.createEndpoint({
      name: 'queued',
      appName: 'queued',
      type: 'queue',
      image: testWorkerImage(),
      workerConfig: { gpuNum: 1, minNum: 0, maxNum: 1, maxConcurrent: 1, freeTimeout: 5 },
    });
    const emptyMiB = await settledRss(server);
    await server.stop();
    server = undefined;
    const insertSeconds = insertQueued(join(dataDir, 'corral.db'), id, jobs);
    server = await serve();
    const queuedMiB = await settledRss(server);
    const counted = await fetch(`${server.gatewayUrl}/v2/${id}/health`, { headers: { Authorization: key } });
    const health = (await counted.json()) as { jobs?: { inQueue?: number } };
    if (health.jobs?.inQueue !== jobs)
      throw new Error(`health says ${JSON.stringify(health)}, not ${jobs} in queue`);
    return { emptyMiB, queuedMiB, jobs, insertSeconds };
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
