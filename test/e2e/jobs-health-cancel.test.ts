/**
 * Two loose ends of jobs (issue 22), end to end: `corral serve` (the built binary) with the `local` runtime.
 * - A queue endpoint with `healthy.path`: its worker (the RunPod protocol test worker, serving that path on its PORT
 *   with HEALTH_PATH) is ready only once it has polled and the path answers, and unhealthy again when the path fails.
 * - An http endpoint's job whose request is in flight (the plain test worker's `POST /sleep`): a cancel, and an
 *   executionTimeout, abort its request; the worker sees its connection closed, its only slot is free at once, and
 *   the job stays CANCELLED / TIMED_OUT.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callGateway } from '../support/gateway-call.js';
import { callJobs } from '../support/jobs-client.js';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServe,
} from '../support/process.js';
import { localSleeperEndpoint } from '../support/test-image.js';

const KEY = 'e2e-jobs-health-cancel-key-0123456789';
const RUNPOD_WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));

describe('jobs: a queue worker with healthy.path, and http jobs stopped in flight', () => {
  let dataDir: string;
  let server: ServeProcess;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const api = (path: string, body?: unknown) => callApi(server, KEY, path, body);
  const workersOf = async (id: string) =>
    (await api(`endpoint?id=${id}`)).body.endpoint.workers as {
      healthy: boolean;
      state: { state: string; message: string };
    }[];
  const until = <T>(check: () => T | Promise<T>, timeoutMs = 60_000) =>
    vi.waitFor(check, { timeout: timeoutMs, interval: 200 });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-jobs-hc-'));
    writeFileSync(join(dataDir, 'corral.yaml'), 'jobs:\n  lostAfterSeconds: 6\n  takeHoldSeconds: 5\n');
    server = await startServe([...localRuntimeArgs('h100-80g:2'), '--config', join(dataDir, 'corral.yaml')], {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: KEY,
    });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('a queue worker with healthy.path is ready once it has polled and the path answers, and unhealthy when the path fails', async () => {
    const status = join(dataDir, 'health-status');
    writeFileSync(status, '503');
    const created = await api('endpoint/create', {
      endpoint: {
        name: 'probed',
        type: 'queue',
        workerConfig: { minNum: 1, maxNum: 1, freeTimeout: 300, gpuNum: 1 },
        healthy: { path: '/ready', period: 1, failureThreshold: 2 },
        image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
        envs: [
          { key: 'RUNPOD_PING_INTERVAL', value: '1000' },
          { key: 'HEALTH_PATH', value: '/ready' },
          { key: 'HEALTH_STATUS_FILE', value: status },
        ],
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    expect((await api(`endpoint?id=${id}`)).body.endpoint.healthy.path).toBe('/ready');
    try {
      // The HTTP probe is sent only once the polls passed: its cause in the message says the worker polled.
      await until(async () =>
        expect(await workersOf(id)).toEqual([
          expect.objectContaining({
            healthy: false,
            state: expect.objectContaining({
              state: 'starting',
              message: expect.stringContaining('last probe: HTTP 503 from /ready'),
            }),
          }),
        ]),
      );
      writeFileSync(status, '200');
      await until(async () =>
        expect(await workersOf(id)).toEqual([
          expect.objectContaining({ healthy: true, state: expect.objectContaining({ state: 'running' }) }),
        ]),
      );
      const sync = await callJobs(server.gatewayUrl, KEY, {
        method: 'POST',
        endpoint: id,
        path: 'runsync?wait=30000',
        body: { input: { n: 1 } },
      });
      expect(sync.body).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 1 } } });
      writeFileSync(status, '500');
      await until(async () =>
        expect(await workersOf(id)).toEqual([
          expect.objectContaining({
            healthy: false,
            state: expect.objectContaining({
              state: 'unhealthy',
              message: expect.stringContaining('HTTP 500 from /ready'),
            }),
          }),
        ]),
      );
      // Without the path, the same worker is ready by its polls alone: a new queue endpoint shows none.
      const plain = await api('endpoint/create', {
        endpoint: {
          type: 'queue',
          image: { image: 'runpod-worker:local', command: 'true' },
          workerConfig: { minNum: 0, maxNum: 1 },
        },
      });
      expect((await api(`endpoint?id=${plain.body.id}`)).body.endpoint.healthy.path).toBe('');
      await api('endpoint/delete', { id: plain.body.id });
    } finally {
      await api('endpoint/delete', { id });
    }
  }, 120_000);

  it("a cancel and an executionTimeout abort an http job's request: the worker sees its connection close and its slot is free at once", async () => {
    const created = await api('endpoint/create', { endpoint: localSleeperEndpoint('sleeper') });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    const jobs = (method: string, path: string, body?: unknown) =>
      callJobs(server.gatewayUrl, KEY, { method, endpoint: 'sleeper', path, body });
    try {
      await until(async () =>
        expect(await workersOf(id)).toEqual([expect.objectContaining({ healthy: true })]),
      );
      const stopped = async (
        mark: string,
        policy: Record<string, number> | undefined,
        stop: (jobId: string) => Promise<unknown>,
      ) => {
        const run = await jobs('POST', 'run', {
          input: { ms: 120_000, mark },
          ...(policy ? { policy } : {}),
        });
        expect(run.body).toMatchObject({ status: 'IN_QUEUE' });
        await until(() => expect(existsSync(mark)).toBe(true));
        await stop(run.body.id);
        // The worker saw the connection of its request close (within the stop's round and a sweep).
        await until(() => expect(existsSync(`${mark}.closed`)).toBe(true), 10_000);
        // Its one slot is free: a request through the gateway is served without waiting for the sleep's end.
        const next = await callGateway(server, KEY, 'sleeper', '/work?ms=0');
        expect(next.status).toBe(200);
        expect(JSON.parse(next.body)).toMatchObject({ inFlight: 1 });
        expect(Number(next.headers['x-corral-queue-ms'])).toBeLessThan(1_000);
        return run.body.id as string;
      };
      const cancelled = await stopped(join(dataDir, 'cancelled'), undefined, async (jobId) => {
        expect((await jobs('POST', `cancel/${jobId}`)).body).toMatchObject({ status: 'CANCELLED' });
      });
      const timedOut = await stopped(join(dataDir, 'timed-out'), { executionTimeout: 5_000 }, (jobId) =>
        until(
          async () => expect((await jobs('GET', `status/${jobId}`)).body.status).toBe('TIMED_OUT'),
          30_000,
        ),
      );
      // Nothing was applied over either end afterwards.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await jobs('GET', `status/${cancelled}`)).body).toMatchObject({ status: 'CANCELLED' });
      expect((await jobs('GET', `status/${timedOut}`)).body).toMatchObject({ status: 'TIMED_OUT' });
    } finally {
      await api('endpoint/delete', { id });
    }
  }, 120_000);
});
