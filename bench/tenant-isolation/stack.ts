/**
 * What the suite runs against: a real `corral serve` (the compiled dist/, SQLite in a temporary data directory, the
 * `local` runtime, whose workers are host processes), the operator's admin key, and two tenants with keys of their
 * own (`tenant-a`, `tenant-b`, no admin). The local runtime is single-tenant (only an admin key creates endpoints),
 * so the operator creates each tenant's endpoints for it (`X-Corral-Owner`); the tenants then use only their own keys:
 *
 * - tenant A: `a-answer` (http, jobsPath /answer; huge-answer-app.mjs answers ANSWER_BYTES of JSON), `a-stream`
 *   (queue, one warm stream-worker.mjs), `a-hoard` (queue, no worker: its low-priority jobs start none);
 * - tenant B: `b-small` (http; the test worker, which answers `GET /work?ms=0` at once).
 *
 * `closeStack` stops the server (SIGKILL if it has not exited 15 s after SIGTERM), removes the workers it left
 * (local workers outlive their server, to be adopted by the next one) and the data directory.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CorralClient } from '../../src/client/index.js';
import { LocalRuntime } from '../../src/runtime/local/local-runtime.js';
import { callApi, type ServeProcess } from '../../test/support/process.js';
import { nodeScriptImage, startLocalServe, testWorkerImage } from '../jobs/local-serve.js';
import { ANSWER_BYTES } from './settings.js';

export const APPS = { answer: 'a-answer', stream: 'a-stream', hoard: 'a-hoard', b: 'b-small' } as const;

export interface Stack {
  server: ServeProcess;
  apiPort: number;
  gatewayPort: number;
  keyA: string;
  keyB: string;
}

const ANSWER_APP = fileURLToPath(new URL('./huge-answer-app.mjs', import.meta.url));
const STREAM_WORKER = fileURLToPath(new URL('./stream-worker.mjs', import.meta.url));
const STOP_GRACE_MS = 15_000;
const READY_WITHIN_MS = 90_000;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const one = { gpuNum: 1, maxNum: 1, freeTimeout: 300 };
const endpointsOf = {
  'tenant-a': [
    {
      name: APPS.answer,
      appName: APPS.answer,
      jobsPath: '/answer',
      image: nodeScriptImage('tenant-isolation-answer:local', ANSWER_APP),
      ports: [{ port: 8000 }],
      envs: [
        { key: 'HOST', value: '127.0.0.1' },
        { key: 'ANSWER_BYTES', value: String(ANSWER_BYTES) },
      ],
      healthy: { path: '/health' },
      workerConfig: { ...one, minNum: 1, maxConcurrent: 4 },
    },
    {
      name: APPS.stream,
      appName: APPS.stream,
      type: 'queue',
      image: nodeScriptImage('tenant-isolation-stream:local', STREAM_WORKER),
      workerConfig: { ...one, minNum: 1, maxConcurrent: 1 },
    },
    {
      name: APPS.hoard,
      appName: APPS.hoard,
      type: 'queue',
      image: nodeScriptImage('tenant-isolation-stream:local', STREAM_WORKER),
      workerConfig: { ...one, minNum: 0, maxConcurrent: 1 },
    },
  ],
  'tenant-b': [
    {
      name: APPS.b,
      appName: APPS.b,
      image: testWorkerImage(),
      ports: [{ port: 8000 }],
      envs: [{ key: 'HOST', value: '127.0.0.1' }],
      healthy: { path: '/health' },
      workerConfig: { ...one, minNum: 1, maxConcurrent: 8 },
    },
  ],
};

/** `corral serve` on `dataDir` with a new operator key (under `node --cpu-prof` when given a directory). */
export async function startServer(
  dataDir: string,
  profileDir: string | undefined,
): Promise<{ server: ServeProcess; operatorKey: string }> {
  const operatorKey = `sk_bench_${randomBytes(16).toString('hex')}`;
  const nodeArgs = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  return { server: await startLocalServe(dataDir, operatorKey, { nodeArgs }), operatorKey };
}

/** The tenants' keys and endpoints, once every worker is ready. */
export async function prepareTenants(server: ServeProcess, operatorKey: string): Promise<Stack> {
  const operator = new CorralClient({ baseUrl: server.apiUrl, apiKey: operatorKey });
  const keyA = (await operator.createApiKey({ ownerId: 'tenant-a', name: 'tenant A', admin: false })).key;
  const keyB = (await operator.createApiKey({ ownerId: 'tenant-b', name: 'tenant B', admin: false })).key;
  for (const [owner, endpoints] of Object.entries(endpointsOf)) {
    for (const endpoint of endpoints) {
      const created = await callApi(server, operatorKey, 'endpoint/create', { endpoint }, owner);
      if (created.status !== 200)
        throw new Error(`creating ${endpoint.name}: ${created.status} ${created.text}`);
    }
  }
  const stack = {
    server,
    apiPort: Number(new URL(server.apiUrl).port),
    gatewayPort: Number(new URL(server.gatewayUrl).port),
    keyA,
    keyB,
  };
  await waitForWorkers(stack);
  return stack;
}

/** Until B's endpoint and A's app answer through the gateway and A's stream worker is up. */
async function waitForWorkers(stack: Stack): Promise<void> {
  const gateway = stack.server.gatewayUrl;
  const answers = async (path: string, key: string, ok: (body: string) => boolean) => {
    const response = await fetch(`${gateway}${path}`, { headers: { authorization: `Bearer ${key}` } }).catch(
      () => undefined,
    );
    return response !== undefined && response.status === 200 && ok(await response.text());
  };
  const deadline = Date.now() + READY_WITHIN_MS;
  for (;;) {
    const ready = await Promise.all([
      answers(`/e/${APPS.b}/work?ms=0`, stack.keyB, () => true),
      answers(`/e/${APPS.answer}/health`, stack.keyA, () => true),
      answers(`/v2/${APPS.stream}/health`, stack.keyA, (body) => {
        const workers = (JSON.parse(body) as { workers?: { idle?: number; running?: number } }).workers;
        return (workers?.idle ?? 0) + (workers?.running ?? 0) > 0;
      }),
    ]);
    if (ready.every(Boolean)) return;
    if (Date.now() > deadline)
      throw new Error(
        `the workers were not ready in ${READY_WITHIN_MS / 1000} s (b, answer, stream: ${ready})`,
      );
    await sleep(250);
  }
}

/** The JSON lines with `message` that the workers wrote to their logs (the local runtime's logs/ directory). */
export function workerLogLines(dataDir: string, message: string): Record<string, unknown>[] {
  const dir = join(dataDir, 'local-runtime', 'logs');
  let files: string[];
  try {
    files = readdirSync(dir);
  } catch {
    return [];
  }
  return files.flatMap((file) =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('{') && line.includes(`"message":"${message}"`))
      .map((line) => JSON.parse(line) as Record<string, unknown>),
  );
}

/** The SQLite database's size on disk, its WAL included, in bytes. */
export function databaseBytes(dataDir: string): number {
  return readdirSync(dataDir)
    .filter((name) => name.startsWith('corral.db'))
    .reduce((sum, name) => sum + statSync(join(dataDir, name)).size, 0);
}

export async function closeStack(server: ServeProcess | undefined, dataDir: string): Promise<void> {
  if (server) {
    const killer = setTimeout(() => server.child.kill('SIGKILL'), STOP_GRACE_MS);
    await server.stop();
    clearTimeout(killer);
  }
  const runtime = new LocalRuntime({ stateDir: join(dataDir, 'local-runtime') });
  try {
    for (const worker of await runtime.list({})) await runtime.remove(worker.workerId, { graceSeconds: 1 });
  } finally {
    await runtime.close();
  }
  rmSync(dataDir, { recursive: true, force: true });
}
