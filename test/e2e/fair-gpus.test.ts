import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { WORKER_SCRIPT } from '../support/test-image.js';

const KEY = 'e2e-fair-gpus-key-0123456789';

/** As the operator's (admin) key, acting for `owner` when given (X-Corral-Owner). */
const call = (server: ServeProcess, path: string, body?: unknown, owner?: string) =>
  callApi(server, KEY, path, body, owner);

const endpointBody = (minNum: number) => ({
  endpoint: {
    image: { image: 'local', command: `${process.execPath} ${WORKER_SCRIPT}` },
    ports: [{ port: 8000 }],
    workerConfig: { minNum, maxNum: minNum, gpuNum: 1 },
    healthy: { path: '/health' },
    products: [{ id: 'h100-80g' }],
  },
});

// The local runtime: worker processes of this test's own data dir, which no other Corral on the machine adopts.
describe('GPUs shared fairly between owners, with corral serve as a process (local runtime)', () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-fair-'));
    // The hog's minNum is past the default quota on purpose: fair placement must hold where an operator lifts it.
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'controller: { reconcileIntervalMs: 200 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n',
    );
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a hog holding every GPU (minNum 8 of 4) gives one back: the second owner runs in seconds', async () => {
    server = await startServe(
      [
        '--runtime',
        'local',
        // The local runtime refuses root without it (CI runs as root); its workers are this test's own script.
        ...(process.getuid?.() === 0 ? ['--local-allow-root'] : []),
        '--gpus',
        'h100-80g:4',
        '--config',
        join(dataDir, 'corral.yaml'),
      ],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    const s = server;
    const workersOf = async (id: string, owner?: string) =>
      (await call(s, `endpoint?id=${id}`, undefined, owner)).body.endpoint.workers as any[];
    const count = (workers: any[], state: string) => workers.filter((w) => w.state.state === state).length;

    const hog = (await call(s, 'endpoint/create', endpointBody(8))).body.id as string;
    await vi.waitFor(async () => expect(count(await workersOf(hog), 'running')).toBe(4), {
      timeout: 60_000,
      interval: 200,
    });

    const started = Date.now();
    const created = await call(s, 'endpoint/create', endpointBody(1), 'tenant-b');
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const newcomer = created.body.id as string;
    await vi.waitFor(async () => expect(count(await workersOf(newcomer, 'tenant-b'), 'running')).toBe(1), {
      timeout: 60_000,
      interval: 100,
    });
    const took = Date.now() - started;

    const hogWorkers = await vi.waitFor(
      async () => {
        const workers = await workersOf(hog);
        expect(count(workers, 'running')).toBe(3);
        expect(count(workers, 'pending')).toBe(5);
        return workers;
      },
      { timeout: 30_000, interval: 200 },
    );
    const waiting = hogWorkers.filter((w) => w.state.state === 'pending').map((w) => w.state.message);
    process.stdout.write(
      `fair e2e: the second owner's worker ran ${took} ms after its create; hog: ${waiting[0]}\n`,
    );
    expect(new Set(waiting)).toEqual(
      new Set([
        'needs 1 GPU of h100-80g, 0 free; owner default is at its fair share of h100-80g (holds 3, share 3 of 4)',
      ]),
    );
    const products = (await call(s, 'products')).body.products as any[];
    expect(products.find((p) => p.id === 'h100-80g')?.gpusFree).toBe(0);
  }, 150_000);
});
