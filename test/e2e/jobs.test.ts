/**
 * Jobs end to end (issue 22): `corral serve` (the built binary) with the `local` runtime, a `queue` endpoint whose
 * workers are the RunPod protocol test worker (test/fixtures/worker/runpod-worker.mjs) reaching the worker-facing
 * listener on 127.0.0.1 (a free port: test/support/process.ts), and the client API on the gateway address. A first job wakes the endpoint from zero; run,
 * runsync, status, stream and cancel; a worker killed mid-job (the job runs again elsewhere and completes once);
 * the jobs that ran read back in endpoint/metrics, its history and /metrics; kill -9 of serve with a queued job (it
 * completes after the restart).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callJobs } from '../support/jobs-client.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { WORKER_SCRIPT } from '../support/test-image.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const KEY = 'e2e-jobs-operator-key-0123456789';
const WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));
const isRoot = process.getuid?.() === 0;

describe('jobs on a queue endpoint, end to end', () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  let endpointId = '';

  const serve = async () => {
    server = await startServe(
      [
        '--runtime',
        'local',
        '--gpus',
        'h100-80g:2',
        '--config',
        join(dataDir, 'corral.yaml'),
        ...(isRoot ? ['--local-allow-root'] : []),
      ],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY, CORRAL_WEBHOOK_ALLOW_PRIVATE: 'true' },
    );
    return server;
  };
  const jobs = (method: string, path: string, body?: unknown, endpoint = endpointId) =>
    callJobs(server?.gatewayUrl ?? '', KEY, { method, endpoint, path, body });
  const statusOf = async (id: string) => (await jobs('GET', `status/${id}`)).body;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-jobs-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      `webhooks:\n  allowPrivate: true\njobs:\n  lostAfterSeconds: 4\n  takeHoldSeconds: 5\n  stopGraceSeconds: 10\nhistory:\n  intervalSeconds: 1\n`,
    );
    await serve();
  }, 60_000);

  afterAll(async () => {
    if (server) {
      await callApi(server, KEY, 'endpoint/delete', { id: endpointId }).catch(() => undefined);
      await server.stop();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('wakes a queue endpoint from zero with a first job and serves run, runsync, status, stream and cancel', async () => {
    if (!server) throw new Error('no server');
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name: 'runpod',
        type: 'queue',
        workerConfig: { minNum: 0, maxNum: 2, freeTimeout: 300, maxConcurrent: 2, gpuNum: 1 },
        image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${WORKER}'` },
        envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    endpointId = created.body.id;
    try {
      const run = await jobs('POST', 'run', { input: { sleepMs: 10, n: 1 } });
      expect(run.body).toMatchObject({ status: 'IN_QUEUE' });
      await vi.waitFor(async () => expect((await statusOf(run.body.id)).status).toBe('COMPLETED'), {
        timeout: 60_000,
        interval: 250,
      });
      // A finished job's status goes to its webhook, signed.
      const receiver = await startWebhookReceiver();
      const hooked = await jobs('POST', 'run', { input: { n: 'hook' }, webhook: `${receiver.base}/done` });
      await vi.waitFor(() => expect(receiver.received).toHaveLength(1), { timeout: 30_000, interval: 100 });
      expect(JSON.parse(receiver.received[0]?.body ?? '{}')).toMatchObject({
        id: hooked.body.id,
        status: 'COMPLETED',
        output: { echo: { n: 'hook' } },
      });
      expect(receiver.received[0]?.headers['webhook-signature']).toMatch(/^v1,/);
      await receiver.close();
      const sync = await jobs('POST', 'runsync?wait=30000', { input: { n: 2 } });
      expect(sync.body).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 2 } } });
      const streamed = await jobs('POST', 'run', { input: { stream: 2, sleepMs: 100 } });
      const chunks: unknown[] = [];
      await vi.waitFor(
        async () => {
          const answer = await jobs('GET', `stream/${streamed.body.id}?wait=2000`);
          chunks.push(...answer.body.stream);
          expect(answer.body.status).toBe('COMPLETED');
        },
        { timeout: 30_000, interval: 10 },
      );
      expect(chunks).toEqual([{ output: { i: 0 } }, { output: { i: 1 } }]);
      const long = await jobs('POST', 'run', { input: { sleepMs: 120_000 } });
      await vi.waitFor(async () => expect((await statusOf(long.body.id)).status).toBe('IN_PROGRESS'), {
        timeout: 30_000,
        interval: 250,
      });
      expect((await jobs('POST', `cancel/${long.body.id}`)).body).toMatchObject({ status: 'CANCELLED' });
      // The cancelled job's worker is idle once it has heard of the cancel (its next poll), not at the answer.
      await vi.waitFor(
        async () => {
          const health = await jobs('GET', 'health');
          expect(health.body.jobs).toMatchObject({ completed: 4, inProgress: 0, inQueue: 0 });
          expect(health.body.workers.running).toBeGreaterThanOrEqual(1);
          expect(health.body.workers.idle).toBe(health.body.workers.running);
        },
        { timeout: 10_000, interval: 250 },
      );
      // Ready by its polls (no HTTP probe: the protocol worker serves none).
      const got = await callApi(server, KEY, `endpoint?id=${endpointId}`);
      expect(got.body.endpoint.workers).toContainEqual(
        expect.objectContaining({ healthy: true, state: expect.objectContaining({ state: 'running' }) }),
      );
    } catch (error) {
      printServeLog(server);
      throw error;
    }
  }, 120_000);

  it('runs a job whose worker was killed mid-job again, once', async () => {
    const marker = join(dataDir, 'died-once');
    try {
      const run = await jobs('POST', 'run', { input: { dieOnceAt: marker } });
      await vi.waitFor(() => expect(existsSync(marker)).toBe(true), { timeout: 30_000, interval: 100 });
      await vi.waitFor(async () => expect((await statusOf(run.body.id)).status).toBe('COMPLETED'), {
        timeout: 60_000,
        interval: 250,
      });
      const listed = await jobs('GET', 'jobs?limit=1');
      expect(listed.body.jobs[0]).toMatchObject({ id: run.body.id, status: 'COMPLETED', attempts: 2 });
    } catch (error) {
      printServeLog(server);
      throw error;
    }
  }, 120_000);

  it('shows the jobs that ran in endpoint/metrics, its history and /metrics', async () => {
    if (!server) throw new Error('no server');
    const ready = server;
    try {
      // 5 completed (run, the webhook's, runsync, the stream, the killed worker's), 1 cancelled; the killed worker's
      // job went back to the queue once. The history samples every second here.
      await vi.waitFor(
        async () => {
          const metrics = await callApi(ready, KEY, `endpoint/metrics?id=${endpointId}`);
          expect(metrics.body.jobs).toMatchObject({
            inQueue: 0,
            inProgress: 0,
            recent: { completed: 5, failed: 0, cancelled: 1, timedOut: 0, retried: 1 },
          });
        },
        { timeout: 30_000, interval: 500 },
      );
      const { jobs: recent } = (await callApi(ready, KEY, `endpoint/metrics?id=${endpointId}`)).body;
      expect(recent.recent.delayMs.p50).toBeGreaterThan(0);
      expect(recent.recent.executionMs.p95).toBeGreaterThanOrEqual(recent.recent.executionMs.p50);
      // The stream's job slept 2 x 100 ms on its worker: the slowest executions took at least that.
      expect(recent.recent.executionMs.p95).toBeGreaterThanOrEqual(100);
      const history = (await callApi(ready, KEY, `endpoint/metrics/history?id=${endpointId}`)).body;
      const total = (values: number[]) => values.reduce((a, b) => a + b, 0);
      expect(total(history.jobs.completed)).toBe(5);
      expect(total(history.jobs.cancelled)).toBe(1);
      const scraped = await fetch(`${ready.apiUrl}/metrics`, { headers: { authorization: `Bearer ${KEY}` } });
      const text = await scraped.text();
      expect(text).toContain(`corral_jobs_finished_total{endpoint="${endpointId}",outcome="COMPLETED"} 5`);
      expect(text).toContain(`corral_jobs_finished_total{endpoint="${endpointId}",outcome="CANCELLED"} 1`);
      expect(text).toContain(`corral_jobs_retried_total{endpoint="${endpointId}"} 1`);
      expect(text).toContain(`corral_job_execution_seconds_count{endpoint="${endpointId}"} 6`);
    } catch (error) {
      printServeLog(server);
      throw error;
    }
  }, 60_000);

  it('keeps a queued job through kill -9 of corral serve and completes it after the restart', async () => {
    if (!server) throw new Error('no server');
    // No worker may take it before the kill: the endpoint can have none.
    expect(
      (
        await callApi(server, KEY, 'endpoint/update', {
          id: endpointId,
          workerConfig: { minNum: 0, maxNum: 0 },
        })
      ).status,
    ).toBe(200);
    await vi.waitFor(
      async () => {
        const got = await callApi(server as ServeProcess, KEY, `endpoint?id=${endpointId}`);
        const live = got.body.endpoint.workers.filter(
          (w: { state: { state: string } }) => !['failed', 'stopped'].includes(w.state.state),
        );
        expect(live).toEqual([]);
      },
      { timeout: 30_000, interval: 250 },
    );
    const run = await jobs('POST', 'run', { input: { n: 'durable' } });
    expect(run.status).toBe(200);
    server.child.kill('SIGKILL');
    await new Promise((resolve) => server?.child.once('exit', resolve));
    await serve();
    try {
      expect((await statusOf(run.body.id)).status).toBe('IN_QUEUE');
      const updated = await callApi(server, KEY, 'endpoint/update', {
        id: endpointId,
        workerConfig: { minNum: 0, maxNum: 1 },
      });
      expect(updated.status, updated.text).toBe(200);
      await vi.waitFor(async () => expect((await statusOf(run.body.id)).status).toBe('COMPLETED'), {
        timeout: 60_000,
        interval: 250,
      });
      expect((await statusOf(run.body.id)).output).toMatchObject({ echo: { n: 'durable' } });
    } catch (error) {
      printServeLog(server);
      throw error;
    }
  }, 120_000);

  it('delivers the jobs of an http endpoint as POST {jobsPath} through the gateway: 2xx JSON is the output, else FAILED', async () => {
    if (!server) throw new Error('no server');
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name: 'plain',
        appName: 'plain-http',
        jobsPath: '/echo',
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent: 4, gpuNum: 1 },
        image: { image: 'plain-worker:local', command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
      },
    });
    expect(created.status, created.text).toBe(200);
    try {
      const sync = await jobs(
        'POST',
        'runsync?wait=60000',
        { input: { prompt: 'hi', n: [1, 2] } },
        'plain-http',
      );
      expect(sync.body).toMatchObject({ status: 'COMPLETED', output: { prompt: 'hi', n: [1, 2] } });
      const moved = await callApi(server, KEY, 'endpoint/update', {
        id: created.body.id,
        jobsPath: '/no-such-path',
      });
      expect(moved.status, moved.text).toBe(200);
      const failed = await jobs('POST', 'runsync?wait=60000', { input: { x: 1 } }, 'plain-http');
      expect(failed.body).toMatchObject({ status: 'FAILED' });
      expect(failed.body.error).toMatch(/^HTTP 404: /);
    } catch (error) {
      printServeLog(server);
      throw error;
    } finally {
      await callApi(server, KEY, 'endpoint/delete', { id: created.body.id });
    }
  }, 120_000);
});
