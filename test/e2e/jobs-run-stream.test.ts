/**
 * `corral jobs run` on a streaming job (a generator handler: the RunPod protocol test worker's `{"stream": N}`),
 * end to end with `corral serve` (the built binary, the `local` runtime): each chunk is printed as it arrives, the
 * first while the job still runs, and the end is said after the last.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callJobs } from '../support/jobs-client.js';
import {
  CORRAL_BIN,
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServeWithConfig,
} from '../support/process.js';

const KEY = 'e2e-jobs-run-stream-key-0123456789';
const RUNPOD_WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));

describe('corral jobs run on a streaming job', () => {
  let server: ServeProcess;
  let close: () => Promise<void>;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  beforeAll(async () => {
    ({ server, close } = await startServeWithConfig({
      dirPrefix: 'corral-e2e-jobs-stream-',
      configYaml: '',
      serveArgs: localRuntimeArgs('h100-80g:1'),
      apiKey: KEY,
    }));
  }, 60_000);
  afterAll(async () => {
    await close?.();
  }, 60_000);

  it('prints the first chunk before the job ends, each on its own line, and the end after the last', async () => {
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name: 'streamer',
        type: 'queue',
        workerConfig: { minNum: 1, maxNum: 1, freeTimeout: 300, gpuNum: 1 },
        image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;

    const child = spawn(process.execPath, [CORRAL_BIN, 'jobs', 'run', id, '{"stream": 3, "sleepMs": 1500}'], {
      env: { ...process.env, CORRAL_API_KEY: KEY, CORRAL_GATEWAY_URL: server.gatewayUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    // The job's status when the first chunk is printed.
    const statusAtFirstChunk = new Promise<string>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        const first = stdout === '';
        stdout += c.toString();
        if (!first) return;
        const jobId = /job (\S+) /.exec(stderr)?.[1] ?? '';
        void callJobs(server.gatewayUrl, KEY, { method: 'GET', endpoint: id, path: `status/${jobId}` }).then(
          (answer) => resolve(String(answer.body.status)),
        );
      });
    });

    expect(await statusAtFirstChunk).toBe('IN_PROGRESS');
    expect(await exited, stderr).toBe(0);
    expect(stdout).toBe('{"i":0}\n{"i":1}\n{"i":2}\n');
    await vi.waitFor(() => expect(stderr).toMatch(/COMPLETED after 3 streamed chunks\n$/));
  }, 120_000);
});
