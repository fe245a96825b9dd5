import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';

const KEY = 'e2e-oom-key-0123456789abcdef';
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

const call = (server: ServeProcess, path: string, body?: unknown) => callApi(server, KEY, path, body);

function containerIds(label: string): string[] {
  const out = execFileSync('docker', ['ps', '-a', '-q', '--no-trunc', '--filter', `label=${label}`], {
    encoding: 'utf8',
  });
  return out.split('\n').filter((line) => line !== '');
}

describe.runIf(withDocker)('a worker over its memory limit on Docker, with corral serve as a process', () => {
  let dataDir: string;
  let image: string;
  let server: ServeProcess | undefined;
  let endpointId = '';
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-oom-'));
    // 0.25 GiB per GPU: a one-GPU worker runs under a 256 MiB limit.
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'controller: { reconcileIntervalMs: 200 }\nworkers: { memoryGBPerGpu: 0.25 }\n',
    );
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    // Only this test's containers: other suites may share the engine.
    if (endpointId !== '') {
      for (const id of containerIds(`corral.dev/endpoint=${endpointId}`)) {
        execFileSync('docker', ['rm', '-f', '-v', id], { stdio: 'ignore' });
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('says "out of memory: limit 256 MiB" and reaches CRASH_LOOP with backoff, one state event per change', async () => {
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    const running = server;
    const created = await call(running, 'endpoint/create', {
      endpoint: {
        ...testWorkerEndpoint(image),
        // Healthy at once, then 512 MiB 3 s later: over the 256 MiB limit, the kernel's OOM killer ends it.
        envs: [
          { key: 'ALLOCATE_MB', value: '512' },
          { key: 'ALLOCATE_MB_AFTER_S', value: '3' },
        ],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    endpointId = created.body.id as string;

    const started = Date.now();
    const endpoint = await vi.waitFor(
      async () => {
        const e = (await call(running, `endpoint?id=${endpointId}`)).body.endpoint;
        expect(e.state).toMatchObject({ state: 'failed', error: 'CRASH_LOOP' });
        return e;
      },
      { timeout: 150_000, interval: 500 },
    );
    const took = Date.now() - started;
    expect(endpoint.state.message).toContain('out of memory: limit 256 MiB');
    const failed = endpoint.workers.filter((w: any) => w.state.state === 'failed');
    expect(failed.length).toBeGreaterThan(0);
    for (const worker of failed) {
      expect(worker.state.message).toBe('worker ran out of memory: limit 256 MiB (exit code 137)');
    }

    const log = (await call(running, `endpoint/log?id=${endpointId}&limit=1000`)).body.events as any[];
    const crashes = log.filter((e) => e.type === 'crashed');
    const states = log.filter((e) => e.type === 'state').map((e) => e.data.state);
    process.stdout.write(
      `oom e2e: CRASH_LOOP after ${took} ms; crashes at +${crashes
        .map((e) => Date.parse(e.at) - Date.parse(crashes[0].at))
        .join(', +')} ms; state events ${JSON.stringify(states)}\n`,
    );
    // Five deaths, with the backoff between them: 1, 2, 4, 8 s on top of each worker's ~3 s life.
    expect(crashes).toHaveLength(5);
    expect(crashes.every((e) => e.data.reason === 'out-of-memory' && e.data.exitCode === 137)).toBe(true);
    const gaps = crashes.slice(1).map((e, i) => Date.parse(e.at) - Date.parse(crashes[i].at));
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(3_000 + 1000 * 2 ** i);
    });
    // serving once, then failed: no flip at each restart.
    expect(states).toEqual(['serving', 'failed']);
  }, 200_000);
});
