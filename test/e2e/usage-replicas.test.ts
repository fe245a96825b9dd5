/**
 * The usage ledger on the Docker runtime with two replicas on PostgreSQL (issue 32's "Done when"): a worker starts,
 * serves for about 20 s, idles and freezes; the leading replica is killed with kill -9 while the worker is frozen,
 * the other one leads on and adopts it, and then removes it. RunPod's billing route answers the worker's time
 * within 5 % of the container's own life (Docker's `Created`, and the moment the container is gone), split by state
 * in Corral's fields, and `amount` is price times time: no second lost or counted twice across the leader change.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { ScratchDatabases } from '../support/scratch-databases.js';
import {
  containersOf,
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
} from '../support/test-image.js';

const baseUrl = process.env.CORRAL_TEST_DATABASE_URL;
const withDocker =
  integrationAvailable(
    'PostgreSQL',
    Boolean(baseUrl),
    'set CORRAL_TEST_DATABASE_URL (scripts/provision.sh prints it)',
  ) && integrationAvailable('Docker', dockerAvailable(), 'start dockerd (scripts/provision.sh does)');
const KEY = `op-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = randomBytes(32).toString('base64');
const PER_HOUR = 3.6;
const CONFIG = [
  'controller: { reconcileIntervalMs: 200 }',
  'quotas: { minGpus: unlimited, maxGpus: unlimited }',
  `usage: { currency: USD, prices: { gpus: { h100-80g: { perHour: ${PER_HOUR} } } } }`,
  '',
].join('\n');

interface BillingRow {
  endpointId: string;
  timeBilledMs: number;
  amount: number;
  currency: string;
  gpuSeconds: Record<string, number>;
}

const docker = (args: string[]) => execFileSync('docker', args, { encoding: 'utf8' }).trim();

describe.runIf(withDocker)('the usage ledger across a leader change, on Docker', () => {
  let databases: ScratchDatabases;
  let databaseUrl = '';
  const dirs: string[] = [];
  const servers: ServeProcess[] = [];

  beforeAll(async () => {
    databases = await ScratchDatabases.connect(baseUrl ?? '');
    databaseUrl = await databases.create('corral_e2e_usage');
  });
  afterEach((context) => {
    if (context.task.result?.state === 'fail') for (const server of servers) printServeLog(server, 80);
  });
  afterAll(async () => {
    for (const server of servers)
      if (server.child.exitCode === null && server.child.signalCode === null) await server.stop();
    for (const id of new Set(servers.map((server) => server.installationId))) removeInstallationResources(id);
    await databases.dropAll();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const replica = async (): Promise<ServeProcess> => {
    const dataDir = mkdtempSync(join(tmpdir(), 'corral-usage-replica-'));
    dirs.push(dataDir);
    const config = join(dataDir, 'corral.yaml');
    writeFileSync(config, CONFIG);
    const server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:1', '--config', config, '--database-url', databaseUrl],
      { CORRAL_API_KEY: KEY, CORRAL_SECRET_KEY: SECRET_KEY, CORRAL_DATA_DIR: dataDir },
    );
    servers.push(server);
    return server;
  };
  const leaderOf = async (server: ServeProcess): Promise<string | undefined> =>
    (await callApi(server, KEY, 'cluster')).body.leader?.replica;
  const selfOf = async (server: ServeProcess): Promise<string> =>
    (await callApi(server, KEY, 'cluster')).body.self;

  it('bills the worker within 5 % of its container, by state, though the leader was killed while it was frozen', async () => {
    const image = await ensureTestImage();
    const a = await replica();
    const idA = await selfOf(a);
    await vi.waitFor(async () => expect(await leaderOf(a)).toBe(idA), { timeout: 10_000, interval: 100 });
    const b = await replica();
    const idB = await selfOf(b);

    const created = await callApi(a, KEY, 'endpoint/create', {
      endpoint: {
        appName: 'billed-replicas',
        image: { image },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 2, freeTimeout: 2, keepFrozen: 600, gpuNum: 1 },
        policy: { type: 'queue', value: 1 },
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;

    // A cold start, then about 20 s of work.
    const work = await fetch(`${a.gatewayUrl}/e/billed-replicas/work?ms=20000`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(work.status, await work.text()).toBe(200);
    const [container] = containersOf(a.installationId, id);
    expect(container).toBeDefined();
    const createdAt = Date.parse(docker(['inspect', '-f', '{{.Created}}', container ?? '']));

    // Idle for its freeTimeout, then frozen (docker pause).
    await vi.waitFor(
      () => expect(docker(['inspect', '-f', '{{.State.Status}}', container ?? ''])).toBe('paused'),
      { timeout: 15_000, interval: 200 },
    );
    await sleep(2_000);
    await new Promise<void>((resolve) => {
      a.child.once('exit', () => resolve());
      a.child.kill('SIGKILL');
    });
    await vi.waitFor(async () => expect(await leaderOf(b)).toBe(idB), { timeout: 15_000, interval: 100 });
    // The new leader adopts the frozen worker, which goes on being counted.
    await vi.waitFor(
      async () => {
        const workers = (await callApi(b, KEY, `endpoint?id=${id}`)).body.endpoint.workers as {
          state: { state: string };
        }[];
        expect(workers.map((w) => w.state.state)).toEqual(['frozen']);
      },
      { timeout: 15_000, interval: 200 },
    );
    await sleep(3_000);

    const deleted = await callApi(b, KEY, 'endpoint/delete', { id });
    expect(deleted.status, deleted.text).toBe(200);
    await vi.waitFor(() => expect(containersOf(b.installationId, id)).toEqual([]), {
      timeout: 30_000,
      interval: 50,
    });
    const goneAt = Date.now();
    const lived = goneAt - createdAt;

    // The span's end is written within a second of the removal: read until the time stops growing.
    let row: BillingRow | undefined;
    let last = -1;
    await vi.waitFor(
      async () => {
        const answer = await callApi(b, KEY, `billing/endpoints?bucketSize=day&endpointId=${id}`);
        expect(answer.status, answer.text).toBe(200);
        row = (answer.body as BillingRow[]).find((r) => r.endpointId === id);
        const now = row?.timeBilledMs ?? -2;
        const unchanged = now === last;
        last = now;
        expect(unchanged).toBe(true);
      },
      { timeout: 20_000, interval: 1_500 },
    );
    const billed = row as BillingRow;
    process.stdout.write(
      `[usage-replicas e2e] container lived ${lived} ms; billed ${billed.timeBilledMs} ms (${((100 * (billed.timeBilledMs - lived)) / lived).toFixed(2)} %); by state ${JSON.stringify(billed.gpuSeconds)}\n`,
    );
    expect(Math.abs(billed.timeBilledMs - lived)).toBeLessThanOrEqual(0.05 * lived);
    expect(billed.gpuSeconds.active).toBeGreaterThanOrEqual(19);
    expect(billed.gpuSeconds.active).toBeLessThanOrEqual(23);
    expect(billed.gpuSeconds.starting).toBeGreaterThan(0);
    expect(billed.gpuSeconds.idle).toBeGreaterThan(0);
    // Frozen from the pause through the kill, the failover and the 3 s after, until the removal.
    expect(billed.gpuSeconds.frozen).toBeGreaterThan(5);
    expect(billed.currency).toBe('USD');
    expect(billed.amount).toBeCloseTo((PER_HOUR * billed.timeBilledMs) / 3_600_000, 6);
    await b.stop();
  }, 240_000);
});
