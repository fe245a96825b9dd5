/**
 * RunPod's official clients, unmodified, against a real `corral serve` (the built binary, the `local` runtime, a
 * `queue` endpoint whose worker is Corral's RunPod protocol test worker): the npm package `runpod-sdk` (a
 * devDependency: always runs) with its `baseUrl` option, and runpod-python's `runpod.Endpoint` and
 * `runpod.AsyncioEndpoint` with `RUNPOD_ENDPOINT_BASE_URL` (opt-in: their sources are not on npm; the suite skips,
 * saying why, unless CORRAL_RUNPOD_PYTHON_DIR, CORRAL_AIOHTTP_DIR, CORRAL_AIOHTTP_RETRY_DIR and
 * CORRAL_TQDM_LOGGABLE_DIR name source trees, run by Debian's python3 with its python3-* packages; docs/jobs.md).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import runpodSdk from 'runpod-sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callApi, printServeLog, type ServeProcess, startServeWithConfig } from '../support/process.js';

const KEY = 'e2e-runpod-clients-operator-key-01';
const WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));
const CLIENT = fileURLToPath(new URL('../fixtures/runpod-client/client.py', import.meta.url));
const isRoot = process.getuid?.() === 0;

/** runpod-python's source and the trees its clients import that Debian 12 lacks (or ships too old). */
const pythonTrees = [
  ['CORRAL_RUNPOD_PYTHON_DIR', 'runpod'],
  ['CORRAL_AIOHTTP_DIR', 'aiohttp'],
  ['CORRAL_AIOHTTP_RETRY_DIR', 'aiohttp_retry'],
  ['CORRAL_TQDM_LOGGABLE_DIR', 'tqdm_loggable'],
] as const;
const PYTHON = process.env.CORRAL_PYTHON ?? '/usr/bin/python3';
const missingTrees = pythonTrees.filter(
  ([env, pkg]) => !existsSync(join(process.env[env] ?? '/nonexistent', pkg)),
);
if (missingTrees.length > 0)
  process.stderr.write(
    `skipping runpod-python's clients: set ${missingTrees.map(([env, pkg]) => `${env} (a tree holding ${pkg}/)`).join(', ')} (docs/jobs.md)\n`,
  );

function runPython(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(PYTHON, args, { env, encoding: 'utf8', timeout: 240_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    );
  });
}

describe("RunPod's official clients against corral serve", () => {
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  /** A queue endpoint of one worker with one slot (so that a running job keeps others queued): its id. */
  const createEndpoint = async (name: string): Promise<string> => {
    if (!server) throw new Error('no server');
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name,
        type: 'queue',
        workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent: 1, gpuNum: 1 },
        image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${WORKER}'` },
        envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    return created.body.id;
  };

  beforeAll(async () => {
    const started = await startServeWithConfig({
      dirPrefix: 'corral-e2e-runpod-clients-',
      configYaml: 'jobs:\n  takeHoldSeconds: 5\n  stopGraceSeconds: 10\n',
      serveArgs: ['--runtime', 'local', '--gpus', 'h100-80g:2', ...(isRoot ? ['--local-allow-root'] : [])],
      apiKey: KEY,
    });
    server = started.server;
    close = started.close;
  }, 60_000);

  afterAll(() => close?.(), 60_000);

  it('runpod-sdk (npm): run, status, runSync, stream, cancel, health, purgeQueue', async () => {
    const endpointId = await createEndpoint('runpod-sdk-npm');
    const runpod = runpodSdk(KEY, { baseUrl: `${server?.gatewayUrl}/v2` });
    const endpoint = runpod.endpoint(endpointId);
    if (!endpoint) throw new Error('no endpoint');
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      const { id } = await endpoint.run({ input: { sleepMs: 10, n: 1 } }, 10_000);
      expect(id).toEqual(expect.any(String));
      const done = await vi.waitFor(
        async () => {
          const status = await endpoint.status(id, 10_000);
          expect(status).toMatchObject({
            status: 'COMPLETED',
            started: true,
            completed: true,
            succeeded: true,
          });
          return status;
        },
        { timeout: 60_000, interval: 250 },
      );
      expect(done).toMatchObject({ id, output: { echo: { sleepMs: 10, n: 1 } } });
      expect(await endpoint.runSync({ input: { n: 2 } }, 60_000)).toMatchObject({
        status: 'COMPLETED',
        output: { echo: { n: 2 } },
        completed: true,
        succeeded: true,
      });
      const failed = await endpoint.runSync({ input: { error: 'no cats today' } }, 60_000);
      expect(failed).toMatchObject({ status: 'FAILED', error: 'no cats today', succeeded: false });
      const streamed = await endpoint.run({ input: { stream: 3, sleepMs: 100 } }, 10_000);
      const chunks: unknown[] = [];
      for await (const chunk of endpoint.stream(streamed.id, 60_000)) chunks.push(chunk);
      expect(chunks).toEqual([0, 1, 2].map((i) => ({ output: { i } })));
      // One worker, one slot: a long job runs, two more wait, and are purged; the long one is cancelled.
      const long = await endpoint.run({ input: { sleepMs: 60_000 } }, 10_000);
      await vi.waitFor(async () => expect((await endpoint.status(long.id)).status).toBe('IN_PROGRESS'), {
        timeout: 60_000,
        interval: 250,
      });
      const waiting = [
        await endpoint.run({ input: { n: 'a' } }, 10_000),
        await endpoint.run({ input: { n: 'b' } }, 10_000),
      ];
      expect(await endpoint.health()).toMatchObject({
        jobs: { inQueue: 2, inProgress: 1 },
        workers: expect.objectContaining({ running: 1 }),
      });
      expect(await endpoint.purgeQueue()).toEqual({ removed: 2, status: 'completed' });
      // Purged jobs are gone: their status is a 404, which the client throws.
      for (const job of waiting) await expect(endpoint.status(job.id)).rejects.toThrow(/status code 404/);
      expect(await endpoint.cancel(long.id)).toMatchObject({ id: long.id, status: 'CANCELLED' });
      expect((await endpoint.status(long.id)).status).toBe('CANCELLED');
    } finally {
      log.mockRestore();
    }
  }, 180_000);

  it.skipIf(missingTrees.length > 0)(
    'runpod-python: runpod.Endpoint and runpod.AsyncioEndpoint with RUNPOD_ENDPOINT_BASE_URL',
    async () => {
      const endpointId = await createEndpoint('runpod-python-clients');
      const home = mkdtempSync(join(tmpdir(), 'corral-runpod-home-'));
      try {
        const result = await runPython([CLIENT, endpointId], {
          PATH: process.env.PATH,
          // No ~/.runpod/config.toml: the key is the one the script sets.
          HOME: home,
          PYTHONPATH: pythonTrees.map(([env]) => process.env[env]).join(':'),
          PYTHONDONTWRITEBYTECODE: '1',
          AIOHTTP_NO_EXTENSIONS: '1',
          RUNPOD_ENDPOINT_BASE_URL: `${server?.gatewayUrl}/v2`,
          CORRAL_KEY: KEY,
        });
        expect(result.code, `${result.err}\n${result.out}`).toBe(0);
        const seen = JSON.parse(result.out.trim().split('\n').at(-1) ?? '{}');
        expect(seen.base).toBe(`${server?.gatewayUrl}/v2`);
        expect(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED']).toContain(seen.run_status);
        expect(seen.run_output).toMatchObject({ echo: { sleepMs: 10, n: 1 } });
        expect(seen.run_status_after).toBe('COMPLETED');
        expect(seen.run_sync).toMatchObject({ echo: { n: 2 } });
        expect([seen.failed_output, seen.failed_status, seen.failed_error]).toEqual([
          null,
          'FAILED',
          'no cats today',
        ]);
        expect(seen.stream).toEqual([0, 1, 2].map((i) => ({ i })));
        expect(seen.purge_queue).toEqual({ removed: 2, status: 'completed' });
        // Purged jobs are gone (404), as RunPod's purge removes them.
        expect(seen.purged_statuses).toEqual([404, 404]);
        expect(seen.cancel).toMatchObject({ status: 'CANCELLED' });
        expect(seen.cancelled_status).toBe('CANCELLED');
        expect(seen.health).toMatchObject({
          jobs: expect.objectContaining({ completed: expect.any(Number) }),
        });
        expect(seen.async_output).toMatchObject({ echo: { sleepMs: 10, async: true } });
        expect(seen.async_stream).toEqual([0, 1].map((i) => ({ i })));
        expect(seen.async_cancel).toMatchObject({ status: 'CANCELLED' });
        expect(seen.async_health).toMatchObject({ workers: expect.any(Object) });
        expect(seen.async_purge_queue).toMatchObject({ status: 'completed' });
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    },
    300_000,
  );
});
