/**
 * Opt-in: the unmodified runpod-python SDK's job loop (the image of scripts/build-runpod-image.sh) through a real
 * `corral serve` (the built binary, Docker runtime, its host guard and worker-facing listener), on `queue` endpoints:
 * run and runsync with their outputs, a failing handler, a progress update, a generator handler's stream, a worker
 * taking two jobs at once (concurrency 2, batch takes), a cancel of a running job reaching the SDK (which stops the
 * handler and keeps taking jobs; the stop not re-sent in a loop), and a worker killed mid-job (the job runs again on
 * its replacement). Idle workers stay until their freeTimeout (the same worker serves the next job). Skipped,
 * saying why, without the image or with one whose aiohttp is older than 3.9 (runpod-image.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { guardedDockerAvailable } from '../support/host-guard.js';
import { callJobs } from '../support/jobs-client.js';
import {
  callApi,
  serveLogLines as logLines,
  printServeLog,
  type ServeProcess,
  startServe,
} from '../support/process.js';
import { RUNPOD_IMAGE, runpodImagePresent, runpodJobLoopRuns } from '../support/runpod-image.js';
import { removeInstallationResources } from '../support/test-image.js';

const KEY = 'e2e-runpod-sdk-serve-operator-key-01';
const runs = runpodImagePresent() && runpodJobLoopRuns() && guardedDockerAvailable();
const WAIT = { timeout: 120_000, interval: 250 };

/** The worker's container (label corral.dev/worker), its id. */
function containerOf(installationId: string, workerId: string): string {
  return execFileSync(
    'docker',
    [
      'ps',
      '-aq',
      '--filter',
      `label=corral.dev/installation=${installationId}`,
      '--filter',
      `label=corral.dev/worker=${workerId}`,
    ],
    { encoding: 'utf8' },
  ).trim();
}

function containerLogs(container: string): string {
  return execFileSync('docker', ['logs', container], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe.runIf(runs)('the runpod-python SDK through corral serve', () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  const ids: Record<'echo' | 'stream' | 'batch' | 'load', string> = {
    echo: '',
    stream: '',
    batch: '',
    load: '',
  };
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  const jobs = (endpoint: keyof typeof ids, method: string, path: string, body?: unknown) =>
    callJobs(server?.gatewayUrl ?? '', KEY, { method, endpoint: ids[endpoint], path, body });
  const run = async (endpoint: keyof typeof ids, input: unknown): Promise<string> => {
    const answer = await jobs(endpoint, 'POST', 'run', { input });
    expect(answer.body, JSON.stringify(answer.body)).toMatchObject({ status: 'IN_QUEUE' });
    return answer.body.id;
  };
  const reaches = (endpoint: keyof typeof ids, id: string, status: string) =>
    vi.waitFor(async () => {
      const body = (await jobs(endpoint, 'GET', `status/${id}`)).body;
      expect(body.status).toBe(status);
      return body;
    }, WAIT);

  const queueEndpoint = (name: string, envs: { key: string; value: string }[], maxConcurrent = 1) => ({
    name,
    type: 'queue',
    image: { image: RUNPOD_IMAGE },
    workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent, gpuNum: 1 },
    products: [{ id: 'h100-80g' }],
    // Pings every second (the SDK's default is 10 s): a stopped job leaves the pings' list sooner.
    envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }, ...envs],
  });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-runpod-sdk-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'controller: { startupTimeoutSeconds: 120, reconcileIntervalMs: 200 }\n',
    );
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:4', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    const bodies = {
      echo: queueEndpoint('runpod-sdk-echo', []),
      stream: queueEndpoint('runpod-sdk-stream', [{ key: 'CORRAL_TEST_HANDLER', value: 'stream' }]),
      batch: queueEndpoint('runpod-sdk-batch', [{ key: 'CORRAL_TEST_CONCURRENCY', value: '2' }], 2),
      load: queueEndpoint('runpod-sdk-load', [{ key: 'CORRAL_TEST_CONCURRENCY', value: '4' }], 4),
    };
    for (const [key, endpoint] of Object.entries(bodies)) {
      const created = await callApi(server, KEY, 'endpoint/create', { endpoint });
      expect(created.status, created.text).toBe(200);
      ids[key as keyof typeof ids] = created.body.id;
    }
  }, 240_000);

  afterAll(async () => {
    if (server) {
      await server.stop();
      removeInstallationResources(server.installationId);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('wakes from zero on a run and completes it; runsync answers with the output; a raising handler FAILS', async () => {
    const first = await run('echo', { hello: 'sdk' });
    const done = await reaches('echo', first, 'COMPLETED');
    expect(done.output).toEqual({ echo: { hello: 'sdk' }, job: first });
    expect(done.workerId).toEqual(expect.any(String));
    const sync = await jobs('echo', 'POST', 'runsync?wait=60000', { input: { n: 2 } });
    expect(sync.body).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 2 } } });
    const failing = await run('echo', { fail: 'no cats today' });
    const failed = await reaches('echo', failing, 'FAILED');
    // The SDK posts {"error": "<JSON of error_type, error_message, traceback...>"}.
    expect(JSON.parse(failed.error)).toMatchObject({
      error_message: 'no cats today',
      runpod_version: '1.12.0',
    });
  }, 240_000);

  it("shows the handler's progress update while it runs, then its output", async () => {
    const id = await run('echo', { progress: true, sleep: 3 });
    await vi.waitFor(async () => {
      const body = (await jobs('echo', 'GET', `status/${id}`)).body;
      expect(body).toMatchObject({ status: 'IN_PROGRESS', output: 'half way' });
    }, WAIT);
    expect((await reaches('echo', id, 'COMPLETED')).output).toEqual({
      echo: { progress: true, sleep: 3 },
      job: id,
    });
  }, 180_000);

  it("streams a generator handler's chunks, each once and in order, and its aggregate output", async () => {
    const id = await run('stream', { chunks: 4, gap: 0.3 });
    const chunks: unknown[] = [];
    await vi.waitFor(async () => {
      const answer = (await jobs('stream', 'GET', `stream/${id}?wait=2000`)).body;
      chunks.push(...(answer.stream ?? []));
      expect(answer.status).toBe('COMPLETED');
    }, WAIT);
    expect(chunks).toEqual([0, 1, 2, 3].map((chunk) => ({ output: { chunk } })));
    expect((await reaches('stream', id, 'COMPLETED')).output).toEqual(
      [0, 1, 2, 3].map((chunk) => ({ chunk })),
    );
  }, 180_000);

  it('runs two jobs at once on a worker of concurrency 2', async () => {
    // Warm the worker first, so that both jobs find it taking.
    await reaches('batch', await run('batch', { warm: true }), 'COMPLETED');
    const pair = [await run('batch', { sleep: 4, n: 1 }), await run('batch', { sleep: 4, n: 2 })];
    const both = await vi.waitFor(async () => {
      const bodies = await Promise.all(
        pair.map(async (id) => (await jobs('batch', 'GET', `status/${id}`)).body),
      );
      for (const body of bodies) expect(body.status).toBe('IN_PROGRESS');
      return bodies;
    }, WAIT);
    expect(both[0]?.workerId).toBe(both[1]?.workerId);
    // An idle worker of concurrency 2 asks for two jobs at once (the SDK logs its take URLs at its default level).
    const logs = containerLogs(containerOf(server?.installationId ?? '', both[0]?.workerId));
    expect(logs).toMatch(/\/job-take-batch\/[^ ]*&batch_size=2/);
    for (const id of pair) await reaches('batch', id, 'COMPLETED');
  }, 180_000);

  it("answers every job of a steady stream on a worker of concurrency 4, past its client's connection cap", async () => {
    // The SDK's aiohttp opens about one new connection per job and keeps each idle for 15 s: at ~4 jobs a second a
    // worker holds more than the worker-facing listener's 64 per client. Corral closes its longest-idle ones then;
    // when it refused the new ones instead, results were lost ("Failed to return job results") and jobs ran again.
    await reaches('load', await run('load', { warm: true }), 'COMPLETED');
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) {
      ids.push(await run('load', { sleep: 0.2, n: i }));
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    const outcomes = await vi.waitFor(
      async () => {
        const statuses = await Promise.all(
          ids.map(async (id) => (await jobs('load', 'GET', `status/${id}`)).body),
        );
        for (const body of statuses) expect(['IN_QUEUE', 'IN_PROGRESS']).not.toContain(body.status);
        return statuses;
      },
      { timeout: 120_000, interval: 1_000 },
    );
    expect(outcomes.filter((body) => body.status !== 'COMPLETED')).toEqual([]);
    const worker = outcomes[0]?.workerId;
    expect(containerLogs(containerOf(server?.installationId ?? '', worker))).not.toContain(
      'Failed to return job results',
    );
    const caps = server ? logLines(server).filter((line) => line.listener === 'workers') : [];
    expect(caps.filter((line) => Number(line.overClient) > 0)).toEqual([]);
    // The stream did reach the cap: idle connections were closed for new ones.
    expect(caps.some((line) => Number(line.idleClosed) > 0)).toBe(true);
  }, 240_000);

  it('a cancel of a running job reaches the SDK, which stops the handler and takes the next job', async () => {
    const id = await run('echo', { sleep: 120 });
    const running = await reaches('echo', id, 'IN_PROGRESS');
    const cancelled = await jobs('echo', 'POST', `cancel/${id}`);
    expect(cancelled.body).toMatchObject({ id, status: 'CANCELLED' });
    const container = containerOf(server?.installationId ?? '', running.workerId);
    // The SDK logs JSON lines on Corral (RUNPOD_ENDPOINT_ID is set): {"requestId": <job>, "message": ...}.
    const said = (logs: string, message: string) =>
      logs.includes(`"requestId": "${id}", "message": "${message}"`);
    await vi.waitFor(() => {
      const logs = containerLogs(container);
      expect(said(logs, 'Stopping job.') && said(logs, 'Job stopped.'), logs.slice(-3000)).toBe(true);
    }, WAIT);
    // The stop is re-sent while the pings list the job, at most once a second, not in a loop until the next ping.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const resent = containerLogs(container).split(`No in-progress job for ${id}.`).length - 1;
    expect(resent).toBeLessThanOrEqual(3);
    // The same worker, not a replacement: the SDK freed the slot without being killed.
    const next = await run('echo', { after: 'cancel' });
    expect((await reaches('echo', next, 'COMPLETED')).workerId).toBe(running.workerId);
  }, 180_000);

  it('a worker killed mid-job: the job runs again on its replacement and completes once', async () => {
    const id = await run('echo', { sleep: 6, kill: true });
    const running = await reaches('echo', id, 'IN_PROGRESS');
    execFileSync('docker', ['kill', containerOf(server?.installationId ?? '', running.workerId)]);
    const done = await reaches('echo', id, 'COMPLETED');
    expect(done.workerId).not.toBe(running.workerId);
    expect(done.output).toEqual({ echo: { sleep: 6, kill: true }, job: id });
    const listed = (await jobs('echo', 'GET', 'jobs?limit=50')).body.jobs.find(
      (job: { id: string }) => job.id === id,
    );
    expect(listed).toMatchObject({ status: 'COMPLETED', attempts: 2 });
  }, 240_000);
});
