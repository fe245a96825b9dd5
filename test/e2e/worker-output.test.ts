/**
 * A worker's output outlives it, end to end on Docker with `corral serve` as a process: an app that exits at start
 * (the test worker's EXIT_ON_START) has its own last line readable through the worker log route and `corral logs`
 * once its container is gone, and again after Corral restarts; `corral logs -f` follows the endpoint across its
 * workers, each line prefixed by its worker, until interrupted.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import {
  CORRAL_BIN,
  callApi,
  printServeLog,
  runCorral,
  type ServeProcess,
  startServe,
} from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';

const KEY = 'e2e-worker-output-key-0123456789';
const LINE = 'EXIT_ON_START: exiting with code 3';
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

/** Containers (any state) of one worker on the machine's engine. */
function containersOf(workerId: string): string[] {
  return execFileSync('docker', ['ps', '-aq', '--filter', `label=corral.dev/worker=${workerId}`], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}

describe.runIf(withDocker)("a crashed worker's output on Docker, with corral serve as a process", () => {
  let dataDir: string;
  let image: string;
  let server: ServeProcess | undefined;
  const installations = new Set<string>();
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const serve = async () => {
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    installations.add(server.installationId);
    return server;
  };
  const cliEnv = (s: ServeProcess) => ({ CORRAL_API_URL: s.apiUrl, CORRAL_API_KEY: KEY });
  const workerLog = async (s: ServeProcess, endpointId: string, workerId: string) => {
    const response = await fetch(
      `${s.apiUrl}/gpu-instance/openapi/v1/endpoint/worker/log?id=${endpointId}&worker=${workerId}`,
      {
        headers: { authorization: `Bearer ${KEY}` },
      },
    );
    return {
      status: response.status,
      text: await response.text(),
      ended: response.headers.get('x-corral-worker-ended'),
    };
  };

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-output-'));
    writeFileSync(join(dataDir, 'corral.yaml'), 'controller: { reconcileIntervalMs: 200 }\n');
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    for (const id of installations) removeInstallationResources(id);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("keeps the app's own last line after its container is gone and after a restart of Corral", async () => {
    let running = await serve();
    const created = await callApi(running, KEY, 'endpoint/create', {
      endpoint: {
        ...testWorkerEndpoint(image),
        envs: [{ key: 'EXIT_ON_START', value: '3' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    const endpointId = created.body.id as string;

    // The first worker crashes; the controller removes its container.
    const crashedId = await vi.waitFor(
      async () => {
        const events = (await callApi(running, KEY, `endpoint/log?id=${endpointId}&limit=1000`)).body
          .events as any[];
        const crashed = events.find((e) => e.type === 'crashed');
        expect(crashed).toBeDefined();
        return crashed.data.workerId as string;
      },
      { timeout: 60_000, interval: 200 },
    );
    await vi.waitFor(() => expect(containersOf(crashedId)).toEqual([]), { timeout: 30_000, interval: 200 });

    // Its output, through the route and the CLI, with its container gone.
    const answer = await vi.waitFor(
      async () => {
        const got = await workerLog(running, endpointId, crashedId);
        expect(got.status).toBe(200);
        expect(got.text).toContain(`${LINE}\n`);
        return got;
      },
      { timeout: 10_000, interval: 200 },
    );
    expect(answer.text.split('\n')[0]).toMatch(
      new RegExp(
        `^\\[corral\\] worker ${crashedId} ended at \\S+ \\(worker exited with code 3\\); its output:$`,
      ),
    );
    expect(answer.ended).not.toBeNull();
    const before = await runCorral(['logs', endpointId, '--worker', crashedId], cliEnv(running));
    expect(before.stderr).toBe('');
    expect(before.code).toBe(0);
    expect(before.stdout).toContain(`${LINE}\n`);

    // Stopped (no worker left), then Corral restarts on the same data directory.
    expect((await callApi(running, KEY, 'endpoint/stop', { id: endpointId })).status).toBe(200);
    // Only failed workers' records are left (no container): a restart forgets those.
    await vi.waitFor(
      async () => {
        const { workers } = (await callApi(running, KEY, `endpoint?id=${endpointId}`)).body.endpoint;
        expect(workers.filter((w: any) => w.state.state !== 'failed')).toEqual([]);
        expect(containersOf(crashedId)).toEqual([]);
      },
      { timeout: 30_000, interval: 200 },
    );
    await running.stop();
    running = await serve();
    // The restarted controller forgets those records in its first pass; on a loaded machine that may come after
    // the first request.
    const restarted = running;
    await vi.waitFor(
      async () => {
        const { workers } = (await callApi(restarted, KEY, `endpoint?id=${endpointId}`)).body.endpoint;
        expect(workers).toEqual([]);
      },
      { timeout: 30_000, interval: 200 },
    );

    const after = await runCorral(['logs', endpointId, '--worker', crashedId], cliEnv(running));
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toContain(`${LINE}\n`);
    expect(after.stdout.split('\n')[0]).toContain(`[corral] worker ${crashedId} ended at`);
    const ended = (await callApi(running, KEY, `endpoint/worker/ended?id=${endpointId}`)).body
      .workers as any[];
    // Without --worker: the endpoint has no worker, so the one that ended last is shown, and said so. That is the
    // crashed worker, or a replacement the stop ended before it printed anything (on a loaded machine).
    const lastEnded = [...ended].sort((a, b) => Date.parse(b.endedAt) - Date.parse(a.endedAt))[0];
    const last = await runCorral(['logs', endpointId], cliEnv(running));
    expect(last.code, last.stderr).toBe(0);
    expect(last.stderr).toMatch(
      new RegExp(
        `has no workers \\(endpoint state: stopped\\); the output of worker ${lastEnded.id}, which ended last`,
      ),
    );
    expect(last.stdout.split('\n')[0]).toContain(`[corral] worker ${lastEnded.id} ended at`);
    if (lastEnded.reason === 'worker exited with code 3') expect(last.stdout).toContain(`${LINE}\n`);
    expect(ended.find((w) => w.id === crashedId)).toMatchObject({
      failed: true,
      reason: 'worker exited with code 3',
      truncated: false,
    });
    expect(ended.length).toBeLessThanOrEqual(10);

    // corral logs -f follows the endpoint's workers as they come, each line prefixed, until Ctrl-C.
    const follow = spawn(process.execPath, [CORRAL_BIN, 'logs', endpointId, '-f'], {
      env: { ...process.env, ...cliEnv(running) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    follow.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    follow.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => follow.once('exit', (code) => resolve(code)));
    try {
      await vi.waitFor(() => expect(err).toContain(`waiting for a worker of endpoint ${endpointId}`), {
        timeout: 10_000,
        interval: 100,
      });
      expect((await callApi(running, KEY, 'endpoint/start', { id: endpointId })).status).toBe(200);
      // Two workers crash one after the other (1 s of backoff between them): both are followed.
      await vi.waitFor(
        () => {
          const workers = new Set(
            out
              .split('\n')
              .filter((line) => line.endsWith(LINE))
              .map((line) => /^\[(\S+)\] /.exec(line)?.[1]),
          );
          expect(workers.size).toBeGreaterThanOrEqual(2);
          expect(workers.has(undefined)).toBe(false);
        },
        { timeout: 60_000, interval: 200 },
      );
    } finally {
      follow.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    expect((await callApi(running, KEY, 'endpoint/stop', { id: endpointId })).status).toBe(200);
  }, 240_000);
});
