/**
 * A budget with `corral serve` as a process (the built binary, the `local` runtime; docs/budgets.md): an owner whose
 * GPU-hour budget (a few GPU-seconds) its running worker spends sees `exceeded` in `GET quota`; then no new worker
 * starts beyond minNum: a request to an endpoint with none answers `429 BUDGET_EXCEEDED`, a queued job's status says
 * why it waits, and the worker its queue asks for stays pending with the budget's sentence, while the running
 * worker serves on.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServeWithConfig,
} from '../support/process.js';
import { localWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-budgets-operator-key-000000000001';
const RUNPOD_WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));
/** 0.001 GPU-hours: 3.6 GPU-seconds, which one running worker of one GPU spends in about 4 s. */
const CONFIG = 'quotas:\n  owners:\n    default:\n      budget: { gpuHoursPerMonth: 0.001 }\n';

describe('a spent budget, with corral serve as a process', () => {
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  beforeAll(async () => {
    const started = await startServeWithConfig({
      dirPrefix: 'corral-e2e-budgets-',
      configYaml: CONFIG,
      serveArgs: localRuntimeArgs('h100-80g:4'),
      apiKey: KEY,
    });
    server = started.server;
    close = started.close;
  }, 60_000);

  afterAll(() => close?.(), 60_000);

  const api = (path: string, body?: unknown) => callApi(server as ServeProcess, KEY, path, body);
  const create = async (endpoint: object) => {
    const created = await api('endpoint/create', { endpoint });
    expect(created.status, created.text).toBe(200);
    return created.body.id as string;
  };
  const gateway = (path: string, init: RequestInit = {}) =>
    fetch(`${server?.gatewayUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    });

  it('stops scale-up past minNum with BUDGET_EXCEEDED in the answer, the job and the worker; running work goes on', async () => {
    const running = await create(localWorkerEndpoint('spender', 'spender:local'));
    const appName = (await api(`endpoint?id=${running}`)).body.endpoint.appName as string;
    await vi.waitFor(
      async () =>
        expect((await api(`endpoint?id=${running}`)).body.endpoint.workers[0]?.state.state).toBe('running'),
      { timeout: 30_000, interval: 100 },
    );
    // Its one GPU spends the 3.6 GPU-seconds; the standing is read at most every 5 s.
    const quota = await vi.waitFor(
      async () => {
        const answer = await api('quota');
        expect(answer.body.budget?.state, answer.text).toBe('exceeded');
        return answer.body.budget;
      },
      { timeout: 30_000, interval: 500 },
    );
    expect(quota).toMatchObject({ unit: 'GPU-hours', limit: 0.001 });
    expect(quota.used).toBeGreaterThanOrEqual(0.001);

    // An endpoint with no worker up: answered at once, naming the budget.
    const idle = { ...localWorkerEndpoint('idle', 'idle:local'), appName: 'budget-idle' };
    idle.workerConfig = { ...idle.workerConfig, minNum: 0 };
    await create(idle);
    const refused = await vi.waitFor(
      async () => {
        const answer = await gateway('/e/budget-idle/work?ms=1');
        expect(answer.status).toBe(429);
        return answer.text();
      },
      { timeout: 10_000, interval: 200 },
    );
    expect(refused).toContain('BUDGET_EXCEEDED');
    expect(refused).toMatch(/budget/i);

    // A queue endpoint's job waits, and says why; the worker its queue asks for stays pending.
    const queue = await create({
      name: 'budget-queue',
      type: 'queue',
      workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent: 1, gpuNum: 1 },
      image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
      envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }],
    });
    const submitted = await gateway(`/v2/${queue}/run`, {
      method: 'POST',
      body: JSON.stringify({ input: { mark: 'held' } }),
    });
    expect(submitted.status).toBe(200);
    const jobId = ((await submitted.json()) as { id: string }).id;
    await vi.waitFor(
      async () => {
        const status = (await (await gateway(`/v2/${queue}/status/${jobId}`)).json()) as {
          status: string;
          waitingFor?: string;
        };
        expect(status.status).toBe('IN_QUEUE');
        expect(status.waitingFor).toContain('BUDGET_EXCEEDED');
      },
      { timeout: 15_000, interval: 250 },
    );
    await vi.waitFor(
      async () => {
        const workers = (await api(`endpoint?id=${queue}`)).body.endpoint.workers as {
          state: { state: string; message: string };
        }[];
        expect(workers[0]?.state.state).toBe('pending');
        expect(workers[0]?.state.message).toContain('BUDGET_EXCEEDED');
      },
      { timeout: 15_000, interval: 250 },
    );

    // The running worker serves on.
    const served = await gateway(`/e/${appName}/work?ms=1`);
    expect(served.status).toBe(200);
  }, 120_000);
});
