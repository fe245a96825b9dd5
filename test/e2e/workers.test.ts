import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, runCorral, type ServeProcess, startServe } from '../support/process.js';
import { dockerAvailable, ensureTestImage, removeInstallationResources } from '../support/test-image.js';

const KEY = 'e2e-operator-key-0123456789';
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

const call = (server: ServeProcess, path: string, body?: unknown) => callApi(server, KEY, path, body);

/** Retries `check` (it throws until it passes) for at most `timeoutMs`; resolves with what it returned. */
function until<T>(check: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  return vi.waitFor(check, { timeout: timeoutMs, interval: 200 });
}

/** A worker's GPU ids, from its `metrics` URL (what `workers[].metrics` links to). */
async function workerGpus(url: string): Promise<string[]> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${KEY}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { gpus: string[] }).gpus;
}

/** GPU ids by worker id, for the endpoint's running workers. */
async function gpusByWorker(endpoint: any): Promise<Record<string, string[]>> {
  const running = endpoint.workers.filter((w: any) => w.state.state === 'running');
  const entries = await Promise.all(
    running.map(async (w: any) => [w.id as string, await workerGpus(w.metrics)] as const),
  );
  return Object.fromEntries(entries);
}

function containers(label: string): string[] {
  const out = execFileSync('docker', ['ps', '-a', '-q', '--no-trunc', '--filter', `label=${label}`], {
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter((line) => line !== '')
    .sort();
}

function publishedPort(workerId: string): number {
  const out = execFileSync(
    'docker',
    ['ps', '--filter', `label=corral.dev/worker=${workerId}`, '--format', '{{.Ports}}'],
    { encoding: 'utf8' },
  );
  const port = /127\.0\.0\.1:(\d+)->/.exec(out)?.[1];
  if (!port) throw new Error(`no published port for worker ${workerId}: ${out}`);
  return Number(port);
}

const endpointBody = (image: string, overrides: Record<string, unknown> = {}) => ({
  endpoint: {
    image: { image },
    ports: [{ port: 8000 }],
    workerConfig: { minNum: 1, maxNum: 3, gpuNum: 1 },
    healthy: { path: '/health' },
    products: [{ id: 'h100-80g' }],
    ...overrides,
  },
});

describe.runIf(withDocker)('workers on the Docker engine, with corral serve as a process', () => {
  let dataDir: string;
  let image: string;
  let server: ServeProcess;
  // A failure in CI shows what corral serve logged, which the assertion alone does not.
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));
  const env = () => ({ CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY });
  const args = (gpus: string) => [
    '--runtime',
    'docker',
    '--gpus',
    gpus,
    '--config',
    join(dataDir, 'corral.yaml'),
  ];
  const gpusFree = async (productId: string): Promise<number> => {
    const { body } = await call(server, 'products');
    return body.products.find((p: any) => p.id === productId)?.gpusFree;
  };
  const running = async (id: string, count: number) => {
    const { body } = await call(server, `endpoint?id=${id}`);
    const workers = body.endpoint.workers.filter((w: any) => w.state.state === 'running' && w.healthy);
    expect(workers, JSON.stringify(body.endpoint.workers)).toHaveLength(count);
    return body.endpoint;
  };

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-workers-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      // One owner holds every GPU on purpose (minNum 3 on 2 GPUs) over many endpoints: no GPU quotas.
      'controller: { startupTimeoutSeconds: 6, reconcileIntervalMs: 200 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n',
    );
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps minNum workers, survives kill -9 without duplicates, replaces a crash, removes all on stop', async () => {
    server = await startServe(args('h100-80g:4'), env());
    const created = await call(
      server,
      'endpoint/create',
      endpointBody(image, { workerConfig: { minNum: 2, maxNum: 2, gpuNum: 1 } }),
    );
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const endpoint = await until(() => running(id, 2), 30_000);
    expect(endpoint.state.state).toBe('serving');
    const before = containers(`corral.dev/endpoint=${id}`);
    expect(before).toHaveLength(2);

    // The workers see their GPUs and Corral env.
    const [first, second] = endpoint.workers as { id: string }[];
    const envs = await Promise.all(
      [first, second].map(
        async (w) => (await fetch(`http://127.0.0.1:${publishedPort(w?.id ?? '')}/env`)).json() as any,
      ),
    );
    expect(envs.map((e) => e.CORRAL_ENDPOINT_ID)).toEqual([id, id]);
    expect(new Set(envs.map((e) => e.NVIDIA_VISIBLE_DEVICES)).size).toBe(2);

    // The CLI shows the same workers and their output (each worker logs one line per request).
    const cli = (...cliArgs: string[]) => runCorral([...cliArgs, '--api-url', server.apiUrl], env());
    const listed = await cli('workers', 'list', id);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.match(/running/g)).toHaveLength(2);
    const logs = await cli('logs', id, '--worker', first?.id ?? '', '--tail', '20');
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('/env');

    // Each worker holds its own GPU, as its metrics and the products' free count say.
    const gpusBefore = await gpusByWorker(endpoint);
    expect(Object.values(gpusBefore).map((gpus) => gpus.length)).toEqual([1, 1]);
    expect(new Set(Object.values(gpusBefore).flat()).size).toBe(2);
    expect(await gpusFree('h100-80g')).toBe(2);

    server.child.kill('SIGKILL');
    await new Promise((resolve) => server.child.once('exit', resolve));
    server = await startServe(args('h100-80g:4'), env());
    const adopted = await until(() => running(id, 2), 30_000);
    expect(containers(`corral.dev/endpoint=${id}`)).toEqual(before);
    // The adopted workers still hold the same GPUs (they came back from the containers, not from memory).
    expect(await gpusByWorker(adopted)).toEqual(gpusBefore);
    expect(await gpusFree('h100-80g')).toBe(2);

    const crashing = first?.id ?? '';
    const survivor = second?.id ?? '';
    await fetch(`http://127.0.0.1:${publishedPort(crashing)}/crash`, { method: 'POST' }).catch(
      () => undefined,
    );
    const replaced = await until(async () => {
      const e = await running(id, 2);
      expect(e.workers.filter((w: any) => w.state.state === 'running').map((w: any) => w.id)).not.toContain(
        crashing,
      );
      return e;
    }, 30_000);
    expect(replaced.workers.some((w: any) => w.id === crashing && w.state.state === 'failed')).toBe(true);
    // The replacement got a GPU nobody else holds: not the survivor's.
    const gpusAfter = await gpusByWorker(replaced);
    expect(gpusAfter[survivor]).toEqual(gpusBefore[survivor]);
    const replacement = Object.keys(gpusAfter).find((workerId) => workerId !== survivor) ?? '';
    expect(gpusAfter[replacement]).toHaveLength(1);
    expect(gpusAfter[replacement]).not.toEqual(gpusAfter[survivor]);
    // The crashed worker's GPU is free again once its container is gone.
    await until(async () => expect(await gpusFree('h100-80g')).toBe(2), 15_000);

    expect((await call(server, 'endpoint/stop', { id })).status).toBe(200);
    await until(async () => {
      expect(containers(`corral.dev/endpoint=${id}`)).toEqual([]);
      expect((await call(server, `endpoint?id=${id}`)).body.endpoint.state.state).toBe('stopped');
    }, 30_000);
  }, 180_000);

  it('an image that does not exist fails with IMAGE_PULL_FAILED within seconds', async () => {
    const started = Date.now();
    // `.invalid` never resolves: accepted at create as an unreachable registry (docs/api.md, Private images), where
    // Docker Hub, when reachable, would refuse a name it does not have at create already.
    const { body } = await call(
      server,
      'endpoint/create',
      endpointBody('registry.invalid/corral-does-not-exist:nope'),
    );
    const endpoint = await until(async () => {
      const e = (await call(server, `endpoint?id=${body.id}`)).body.endpoint;
      expect(e.state).toMatchObject({ state: 'failed', error: 'IMAGE_PULL_FAILED' });
      return e;
    }, 20_000);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(endpoint.workers[0].state.error).toBe('IMAGE_PULL_FAILED');
    expect(endpoint.state.message).toContain('corral-does-not-exist:nope');
    await call(server, 'endpoint/delete', { id: body.id });
  }, 60_000);

  it('a health path that never answers fails the worker with HEALTH_TIMEOUT; delete leaves no container', async () => {
    const { body } = await call(
      server,
      'endpoint/create',
      endpointBody(image, { healthy: { path: '/never' } }),
    );
    await until(async () => {
      const e = (await call(server, `endpoint?id=${body.id}`)).body.endpoint;
      expect(e.workers.map((w: any) => w.state.error)).toContain('HEALTH_TIMEOUT');
    }, 40_000);
    await call(server, 'endpoint/delete', { id: body.id });
    await until(async () => expect(containers(`corral.dev/endpoint=${body.id}`)).toEqual([]), 30_000);
  }, 90_000);

  it('/metrics counts workers by state, starts, failures by code and time to running', async () => {
    const text = await (
      await fetch(`${server.apiUrl}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })
    ).text();
    expect(text).toMatch(/^corral_workers\{state="running"\} \d+$/m);
    expect(Number(/^corral_worker_starts_total\{runtime="docker"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(
      0,
    );
    expect(text).toMatch(/^corral_worker_failures_total\{code="IMAGE_PULL_FAILED"\} [1-9]\d*$/m);
    expect(text).toMatch(/^corral_worker_failures_total\{code="HEALTH_TIMEOUT"\} [1-9]\d*$/m);
    // The process's own figures, for whoever watches its memory.
    expect(Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(Number(/^corral_worker_time_to_running_seconds_count (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it('with 2 GPUs and minNum 3: two run on different GPU ids, one waits pending for a GPU and starts once another endpoint releases one', async () => {
    await server.stop();
    server = await startServe(args('h100-80g:2'), env());
    const lacksGpu = 'needs 1 GPU of h100-80g, 0 free';
    const pendingOf = (e: any) => e.workers.filter((w: any) => w.state.state === 'pending');

    // Another endpoint holds one of the two GPUs.
    const holder = (await call(server, 'endpoint/create', endpointBody(image))).body.id as string;
    await until(() => running(holder, 1), 30_000);
    const wide = (
      await call(
        server,
        'endpoint/create',
        endpointBody(image, { workerConfig: { minNum: 3, maxNum: 3, gpuNum: 1 } }),
      )
    ).body.id as string;
    // One GPU is left: one worker runs; the others wait, saying they lack a GPU.
    const waiting = await until(async () => {
      const pending = pendingOf(await running(wide, 1));
      expect(pending.map((w: any) => w.state.message)).toEqual([lacksGpu, lacksGpu]);
      return pending.map((w: any) => w.id as string);
    }, 30_000);
    expect(await gpusFree('h100-80g')).toBe(0);

    // The other endpoint releases its GPU: a waiting worker starts on it.
    expect((await call(server, 'endpoint/stop', { id: holder })).status).toBe(200);
    const endpoint = await until(async () => {
      const e = await running(wide, 2);
      expect(pendingOf(e).map((w: any) => w.state.message)).toEqual([lacksGpu]);
      return e;
    }, 30_000);
    const runningIds = endpoint.workers
      .filter((w: any) => w.state.state === 'running')
      .map((w: any) => w.id as string);
    expect(runningIds.filter((id: string) => waiting.includes(id))).toHaveLength(1);

    // Two workers on two different GPU ids (their metrics and their containers agree); the third still waits.
    const gpus = await gpusByWorker(endpoint);
    expect(Object.values(gpus).map((ids) => ids.length)).toEqual([1, 1]);
    expect(new Set(Object.values(gpus).flat()).size).toBe(2);
    for (const [workerId, ids] of Object.entries(gpus)) {
      const seen = (await (await fetch(`http://127.0.0.1:${publishedPort(workerId)}/env`)).json()) as any;
      expect(seen.NVIDIA_VISIBLE_DEVICES).toBe(ids.join(','));
    }
    expect(await gpusFree('h100-80g')).toBe(0);
  }, 120_000);
});
