/**
 * Worker affinity (issue 35) on Docker with two real workers of the test image, through `corral serve` as a
 * process: soft, strict (waiting for its busy worker while the other is free), 404 AFFINITY_WORKER_GONE once the
 * worker was removed, and strict-resume thawing a frozen worker (Server-Timing says `thaw`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callGateway } from '../support/gateway-call.js';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { dockerAvailable, ensureTestImage, removeInstallationResources } from '../support/test-image.js';

const KEY = 'e2e-affinity-key-0123456789abcd';
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

interface ListedWorker {
  id: string;
  state: { state: string };
  healthy: boolean;
}

describe.runIf(withDocker)('worker affinity on Docker, with corral serve as a process', () => {
  let dataDir: string;
  let server: ServeProcess;
  let id: string;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const api = (path: string, body?: unknown) => callApi(server, KEY, path, body);
  const call = (path: string, headers: Record<string, string> = {}) =>
    callGateway(server, KEY, 'affine', path, headers);
  const workersOf = async (id: string) =>
    (await api(`endpoint?id=${id}`)).body.endpoint.workers as ListedWorker[];
  const until = <T>(check: () => T | Promise<T>, timeoutMs: number) =>
    vi.waitFor(check, { timeout: timeoutMs, interval: 200 });

  beforeAll(async () => {
    const image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-affinity-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'controller: { reconcileIntervalMs: 200 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n',
    );
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    const created = await api('endpoint/create', {
      endpoint: {
        appName: 'affine',
        image: { image },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 2, maxNum: 2, maxConcurrent: 1, freeTimeout: 1, keepFrozen: 600, gpuNum: 1 },
        policy: { type: 'queue', value: 1 },
      },
    });
    expect(created.body.id, created.text).toBeDefined();
    id = created.body.id;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('soft, strict, the 404 after removal and strict-resume (a thaw), with two workers', async () => {
    const serving = await until(async () => {
      const workers = (await workersOf(id)).filter((w) => w.state.state === 'running' && w.healthy);
      expect(workers).toHaveLength(2);
      return workers.map((w) => w.id).sort();
    }, 60_000);
    const [a = '', b = ''] = serving;

    // Soft: each request goes to the worker it names, as the answer says in RunPod's header.
    for (const worker of [b, a, b]) {
      const answer = await call('/work?ms=1', { 'X-Runpod-Worker-Id': worker });
      expect(answer.status, answer.body).toBe(200);
      expect(answer.headers['x-runpod-worker-id']).toBe(worker);
      expect(JSON.parse(answer.body).worker).toBe(worker);
    }

    // Strict: with a busy (maxConcurrent 1), the next strict request waits for it while b is free.
    const holding = call('/work?ms=1500', { 'X-Corral-Worker-Id': `strict ${a}` });
    // Integration tier: a moment for the first to take a's slot (no hook tells when it reached the worker).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [waited, plain] = await Promise.all([
      call('/work?ms=1', { 'X-Runpod-Worker-Id': `strict ${a}` }),
      call('/work?ms=1'),
    ]);
    expect((await holding).headers['x-corral-worker']).toBe(a);
    expect(waited.status, waited.body).toBe(200);
    expect(waited.headers['x-corral-worker']).toBe(a);
    expect(Number(waited.headers['x-corral-queue-ms'])).toBeGreaterThanOrEqual(500);
    expect(plain.headers['x-corral-worker']).toBe(b);

    // a removed (drained away): strict to it is RunPod's 404, soft to it is served by any worker.
    expect((await api('endpoint/worker/drain', { workerID: a, drain: true })).status).toBe(200);
    await until(async () => expect((await workersOf(id)).map((w) => w.id)).not.toContain(a), 30_000);
    const gone = await call('/work?ms=1', { 'X-Runpod-Worker-Id': `strict ${a}` });
    expect(gone.status, gone.body).toBe(404);
    expect(JSON.parse(gone.body)).toMatchObject({ code: 404, reason: 'AFFINITY_WORKER_GONE' });
    expect(JSON.parse(gone.body).message).toMatch(/^affinity_worker_gone: /);
    expect((await call('/work?ms=1', { 'X-Runpod-Worker-Id': a })).status).toBe(200);

    // Strict-resume: every worker frozen once idle (minNum 0), a request naming b thaws b alone, and says so.
    expect((await api('endpoint/update', { id, workerConfig: { minNum: 0 } })).status).toBe(200);
    await until(async () => {
      const workers = await workersOf(id);
      expect(workers.map((w) => w.id)).toContain(b);
      expect(workers.every((w) => w.state.state === 'frozen')).toBe(true);
    }, 30_000);
    const woken = await call('/work?ms=1', { 'X-Runpod-Worker-Id': `strict-resume ${b}` });
    expect(woken.status, woken.body).toBe(200);
    expect(woken.headers['x-corral-worker']).toBe(b);
    expect(String(woken.headers['server-timing'])).toMatch(/(^|, )thaw;dur=[\d.]+/);
    expect(woken.headers['x-corral-cold-start-ms']).toBeDefined();
    // The thaw was b's alone: no other worker woke for it.
    const others = (await workersOf(id)).filter((w) => w.id !== b);
    expect(others.map((w) => w.state.state).filter((state) => state !== 'frozen')).toEqual([]);
  }, 180_000);
});
