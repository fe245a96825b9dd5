/**
 * The usage ledger with `corral serve` as a process (the built binary, the local runtime) and prices in its config
 * file: a worker's time is counted from its start, active while it serves and idle otherwise, priced as the file says,
 * read through RunPod's billing route, and no longer grows once the worker is gone; a kill -9 of `corral serve` and a
 * restart lose none of it (docs/usage.md).
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServe,
  startServeWithConfig,
} from '../support/process.js';
import { localWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-usage-operator-key-000000000001';
const PER_HOUR = 3.6;

interface Row {
  endpointId: string;
  timeBilledMs: number;
  amount: number;
  currency: string;
  gpuSeconds: Record<string, number>;
}

describe('the usage ledger, with corral serve as a process', () => {
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  let serveArgs: string[] = [];
  let dataDir = '';
  let restarted = false;
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  beforeAll(async () => {
    serveArgs = localRuntimeArgs('h100-80g:1');
    const started = await startServeWithConfig({
      dirPrefix: 'corral-e2e-usage-',
      configYaml: `usage:\n  currency: USD\n  prices:\n    gpus:\n      h100-80g:\n        perHour: ${PER_HOUR}\n`,
      serveArgs,
      apiKey: KEY,
    });
    server = started.server;
    dataDir = started.dataDir;
    close = started.close;
  }, 60_000);

  afterAll(async () => {
    // After the kill -9, `close` would wait on the killed process: stop the restarted one, then remove the directory.
    if (!restarted) return close?.();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const create = (name: string) =>
    callApi(server as ServeProcess, KEY, 'endpoint/create', {
      endpoint: localWorkerEndpoint(name, 'billed:local'),
    });
  const billing = async (endpointId: string): Promise<Row | undefined> => {
    const answer = await callApi(
      server as ServeProcess,
      KEY,
      `billing/endpoints?bucketSize=day&endpointId=${endpointId}`,
    );
    expect(answer.status, answer.text).toBe(200);
    return (answer.body as Row[]).find((row) => row.endpointId === endpointId);
  };

  it('counts a worker from its start, active while it serves, priced per GPU-hour, and stops at its end', async () => {
    const before = Date.now();
    const created = await create('billed');
    expect(created.status, created.text).toBe(200);
    const id: string = created.body.id;
    const appName: string = (await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).body.endpoint
      .appName;
    let runningAt = 0;
    await vi.waitFor(
      async () => {
        const endpoint = (await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).body.endpoint;
        expect(endpoint.workers[0]?.state.state).toBe('running');
        runningAt = Date.now();
      },
      { timeout: 30_000, interval: 100 },
    );
    // Two seconds of work, then idle.
    const work = await fetch(`${server?.gatewayUrl}/e/${appName}/work?ms=2000`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(work.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const asked = Date.now();
    const row = await billing(id);
    expect(row).toBeDefined();
    const billed = row as Row;
    // From its placement (after the create, before it ran) until the question.
    expect(billed.timeBilledMs).toBeLessThanOrEqual(asked - before + 1000);
    expect(billed.timeBilledMs).toBeGreaterThanOrEqual(asked - runningAt - 1000);
    expect(billed.gpuSeconds.active).toBeGreaterThanOrEqual(1.5);
    expect(billed.gpuSeconds.active).toBeLessThanOrEqual(4);
    expect(billed.gpuSeconds.idle).toBeGreaterThan(0.5);
    expect(billed.currency).toBe('USD');
    expect(billed.amount).toBeCloseTo((PER_HOUR * billed.timeBilledMs) / 3_600_000, 6);

    const deleted = await callApi(server as ServeProcess, KEY, 'endpoint/delete', { id });
    expect(deleted.status, deleted.text).toBe(200);
    await vi.waitFor(
      async () => expect((await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).status).toBe(404),
      { timeout: 30_000, interval: 200 },
    );
    // Its span closes at its end (written within a second): from then on the time no longer grows.
    let last = -1;
    await vi.waitFor(
      async () => {
        const now = ((await billing(id)) as Row).timeBilledMs;
        const unchanged = now === last;
        last = now;
        expect(unchanged).toBe(true);
      },
      { timeout: 15_000, interval: 1500 },
    );
    expect(last).toBeGreaterThanOrEqual(billed.timeBilledMs - 1000);

    // /metrics counts the same seconds (this one process led throughout), by state, and their price by owner.
    const scrape = await fetch(`${server?.apiUrl}/metrics`, { headers: { authorization: `Bearer ${KEY}` } });
    const text = await scrape.text();
    const gpuSeconds = (state: string) =>
      Number(
        new RegExp(
          `^corral_gpu_seconds_total\\{[^}]*endpoint="${id}"[^}]*state="${state}"[^}]*\\} (\\S+)$`,
          'm',
        ).exec(text)?.[1] ?? Number.NaN,
      );
    const counted = ['starting', 'active', 'idle'].map(gpuSeconds).reduce((a, b) => a + b);
    expect(Math.abs(counted * 1000 - last), text).toBeLessThanOrEqual(100);
    expect(gpuSeconds('active')).toBeCloseTo(billed.gpuSeconds.active ?? 0, 0);
    expect(text).toMatch(/^corral_usage_amount_total\{owner="[^"]+",currency="USD"\} [0-9.e-]+$/m);
  }, 90_000);

  it('loses no second across a kill -9 of corral serve and a restart that adopts the worker', async () => {
    const created = await create('survivor');
    expect(created.status, created.text).toBe(200);
    const id: string = created.body.id;
    await vi.waitFor(
      async () =>
        expect(
          (await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).body.endpoint.workers[0]?.state
            .state,
        ).toBe('running'),
      { timeout: 30_000, interval: 100 },
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const beforeKill = ((await billing(id)) as Row).timeBilledMs;
    const killedAt = Date.now();
    const killed = server as ServeProcess;
    const exited = new Promise((resolve) => killed.child.once('exit', resolve));
    killed.child.kill('SIGKILL');
    await exited;
    restarted = true;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    server = await startServe([...serveArgs, '--config', `${dataDir}/corral.yaml`], {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: KEY,
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const asked = Date.now();
    const after = ((await billing(id)) as Row).timeBilledMs;
    // The worker went on while no corral serve ran: those seconds count, and none twice.
    expect(after).toBeGreaterThanOrEqual(beforeKill + (asked - killedAt) - 1500);
    expect(after).toBeLessThanOrEqual(beforeKill + (asked - killedAt) + 1500);
    const deleted = await callApi(server, KEY, 'endpoint/delete', { id });
    expect(deleted.status, deleted.text).toBe(200);
  }, 90_000);
});
