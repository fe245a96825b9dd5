/**
 * The jobs API over real HTTP: the client routes (served as the gateway's router would hand them requests) and the
 * worker protocol's routes, with the RunPod protocol test worker (test/fixtures/worker/runpod-worker.mjs) as a
 * real process, on a real SQLite store. Real time: short pings, a short take hold and a short `lostAfter`. Every
 * answer is checked against the OpenAPI document, and what ran is read back in the jobs' Prometheus series.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { type Document, problemsIn, responseSchemaIn } from '../../test/support/openapi.js';
import { closeServer } from '../../test/support/test-servers.js';
import { buildJobs, type Jobs } from '../app/build-jobs.js';
import { buildWebhooks } from '../app/build-webhooks.js';
import { startWorkerListener } from '../app/worker-listener.js';
import { openApiDocument } from '../contract/openapi/document.js';
import type { Endpoint } from '../domain/endpoint.js';
import { DEFAULT_JOB_STREAM_BOUNDS } from '../domain/job.js';
import { systemClock, systemTimers } from '../ports/clock.js';
import { ApiKeyService } from '../service/api-key-service.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';

const WORKER = fileURLToPath(new URL('../../test/fixtures/worker/runpod-worker.mjs', import.meta.url));

describe('the jobs API over HTTP with the RunPod protocol test worker', () => {
  let store: Store;
  let jobs: Jobs;
  let client: Server;
  let workersServer: Server;
  let base: string;
  let workersUrl: string;
  let endpoint: Endpoint;
  let key: string;
  let otherKey: string;
  let scratch: string;
  const workers: ChildProcess[] = [];
  const registry = new Registry();
  /** Every answer of the client routes, for the check against the OpenAPI document. */
  const answered: { method: string; path: string; status: number; body: unknown }[] = [];

  const call = async (
    method: string,
    path: string,
    options: { body?: string; key?: string | null } = {},
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const headers: Record<string, string> = {};
    const presented = options.key === undefined ? key : options.key;
    if (presented !== null) headers.authorization = `Bearer ${presented}`;
    const response = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    const text = await response.text();
    const body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    answered.push({ method, path, status: response.status, body });
    return { status: response.status, body };
  };
  const run = async (input: unknown, extra: Record<string, unknown> = {}) => {
    const answer = await call('POST', `/v2/${endpoint.id}/run`, {
      body: JSON.stringify({ input, ...extra }),
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.id as string;
  };
  const statusOf = async (id: string) => (await call('GET', `/v2/${endpoint.id}/status/${id}`)).body;
  const startWorker = (workerId: string, env: Record<string, string> = {}) => {
    const protocol = Object.fromEntries(jobs.protocolEnv(endpoint.id, workerId).map((e) => [e.key, e.value]));
    const child = spawn(process.execPath, [WORKER], {
      env: { PATH: process.env.PATH ?? '', ...protocol, RUNPOD_PING_INTERVAL: '1000', ...env },
      stdio: 'ignore',
    });
    workers.push(child);
    return child;
  };

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'corral-jobs-'));
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    endpoint = sampleEndpoint({
      ownerId: 'owner-a',
      patch: { type: 'queue', workers: { maxConcurrent: 2 } },
    });
    await store.endpoints.create(endpoint, [], {
      at: 1,
      ownerId: 'owner-a',
      actor: 'test',
      action: 'create',
      targetId: endpoint.id,
    });
    for (const owner of ['owner-a', 'owner-b']) {
      const made = await new ApiKeyService({ store, clock: systemClock }).create({
        ownerId: owner,
        name: owner,
        admin: false,
      });
      if (owner === 'owner-a') key = made.key;
      else otherKey = made.key;
    }
    const keys = new InvokeKeyService({ store, clock: systemClock });
    const placeholder = { host: '127.0.0.1', port: 0 };
    jobs = await buildJobs({
      store,
      settings: {
        stream: DEFAULT_JOB_STREAM_BOUNDS,
        submissionRate: { requestsPerSecond: 1000, burst: 10_000 },
        retentionSeconds: 60,
        syncRetentionSeconds: 60,
        maxAttempts: 3,
        lostAfterSeconds: 3,
        stopGraceSeconds: 30,
        takeHoldSeconds: 2,
      },
      clock: systemClock,
      timers: systemTimers,
      logger: pino({ level: 'silent' }),
      domain: 'localhost',
      verifyKey: (k) => keys.grant(k),
      replicaId: 'r-1',
      // Main's webhooks, with the default policy: private targets (127.0.0.1 here) refused.
      webhooks: buildWebhooks({
        config: { webhooks: { allowPrivate: false } },
        store,
        secrets: { secretOf: async () => 'whsec_dGVzdA==' },
        logger: pino({ level: 'silent' }),
      }).webhooks,
      gatewayUrl: () => undefined,
      registry,
      // The URL is known once the listener is open; protocolEnv reads it through this port.
      workersAddress: { url: () => workersUrl },
    });
    ({ server: workersServer } = await startWorkerListener({
      address: placeholder,
      handler: jobs.workerHandler,
      logger: pino({ level: 'silent' }),
    }));
    workersUrl = `http://127.0.0.1:${(workersServer.address() as AddressInfo).port}`;
    client = createServer((req, res) => {
      if (jobs.clientRoute.claims(req)) jobs.clientRoute.handleRequest(req, res);
      else res.writeHead(418).end();
    });
    await new Promise<void>((resolve) => client.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(client.address() as AddressInfo).port}`;
    jobs.start();
  });

  afterAll(async () => {
    for (const child of workers) child.kill('SIGKILL');
    await jobs?.close();
    client?.closeAllConnections();
    workersServer?.closeAllConnections();
    await closeServer(client);
    await closeServer(workersServer);
    await store?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('runs a job through a worker: run, status, runsync, and a worker polling is what makes it run', async () => {
    const queued = await run({ sleepMs: 50, n: 1 });
    expect(await statusOf(queued)).toMatchObject({ id: queued, status: 'IN_QUEUE' });
    startWorker('w-1');
    const sync = await call('POST', `/v2/${endpoint.spec.appName}/runsync?wait=20000`, {
      body: JSON.stringify({ input: { n: 2 } }),
    });
    expect(sync.status).toBe(200);
    expect(sync.body).toMatchObject({ status: 'COMPLETED', workerId: 'w-1', output: { echo: { n: 2 } } });
    expect(sync.body.delayTime).toBeTypeOf('number');
    await vi.waitFor(async () => expect((await statusOf(queued)).status).toBe('COMPLETED'), {
      timeout: 20_000,
    });
    const done = await call('GET', `/v2/${endpoint.id}/status-sync/${queued}?wait=1000`);
    expect(done.body).toMatchObject({
      status: 'COMPLETED',
      output: { echo: { sleepMs: 50, n: 1 }, worker: 'w-1' },
    });
    const health = await call('GET', `/v2/${endpoint.id}/health`);
    expect(health.body).toMatchObject({ jobs: { completed: 2, inQueue: 0 } });
    const list = await call('GET', `/v2/${endpoint.id}/jobs?limit=1`);
    expect(list.body).toMatchObject({ counts: { COMPLETED: 2 }, jobs: [{ status: 'COMPLETED' }] });
  });

  it('refuses what it must, creating nothing, and never answers bad input with a 5xx', async () => {
    const before = ((await call('GET', `/v2/${endpoint.id}/health`)).body.jobs as Record<string, number>)
      .completed;
    expect((await call('POST', `/v2/${endpoint.id}/run`, { body: '{"input":1}', key: null })).status).toBe(
      401,
    );
    const other = await call('POST', `/v2/${endpoint.id}/run`, { body: '{"input":1}', key: otherKey });
    expect(other).toMatchObject({ status: 404, body: { reason: 'ENDPOINT_NOT_FOUND' } });
    const token = jobs.tokens.issue(endpoint.id, 'w-1');
    expect((await call('POST', `/v2/${endpoint.id}/run`, { body: '{"input":1}', key: token })).status).toBe(
      401,
    );
    expect((await call('POST', `/v2/${endpoint.id}/run`, { body: '{"inptu":1}' })).body).toMatchObject({
      reason: 'INVALID_JOB_REQUEST',
      error: 'input is required: send {"input": {...}}',
    });
    expect((await call('POST', `/v2/${endpoint.id}/run`, { body: '{nope' })).status).toBe(400);
    const hook = await call('POST', `/v2/${endpoint.id}/run`, {
      body: JSON.stringify({ input: 1, webhook: 'http://127.0.0.1:9/x' }),
    });
    expect(hook).toMatchObject({ status: 400, body: { reason: 'INVALID_JOB_REQUEST' } });
    expect(String(hook.body.message)).toContain('the webhook target is refused');
    const policy = { input: 1, policy: { executionTimeout: 1000 } };
    expect((await call('POST', `/v2/${endpoint.id}/run`, { body: JSON.stringify(policy) })).status).toBe(400);
    expect((await call('GET', `/v2/${endpoint.id}/status/no-such-job`)).status).toBe(404);
    const big = await call('POST', `/v2/${endpoint.id}/run`, {
      body: JSON.stringify({ input: 'x'.repeat(10 * 1024 * 1024) }),
    });
    expect(big).toMatchObject({ status: 413, body: { reason: 'BODY_TOO_LARGE' } });
    expect(String(big.body.message)).toContain('a run body is larger than 10485760 bytes');
    const done = await run({ n: 3 });
    await vi.waitFor(async () => expect((await statusOf(done)).status).toBe('COMPLETED'), {
      timeout: 20_000,
    });
    expect((await call('POST', `/v2/${endpoint.id}/retry/${done}`)).body).toMatchObject({
      reason: 'JOB_NOT_RETRYABLE',
    });
    expect(
      ((await call('GET', `/v2/${endpoint.id}/health`)).body.jobs as Record<string, number>).completed,
    ).toBe((before ?? 0) + 1);
    // The worker routes take only the worker's own token.
    const take = await fetch(`${workersUrl}/v2/${endpoint.id}/job-take/w-1?worker=w-1&job_in_progress=0`, {
      headers: { authorization: key },
    });
    expect(take.status).toBe(401);
    const stolen = await fetch(`${workersUrl}/v2/${endpoint.id}/job-take/w-2?worker=w-2`, {
      headers: { authorization: token },
    });
    expect(stolen.status).toBe(401);
    // A second take of one worker while its first is held open is slowed down; the first ends in 204.
    const own = { authorization: jobs.tokens.issue(endpoint.id, 'w-9') };
    const takeUrl = `${workersUrl}/v2/${endpoint.id}/job-take/w-9?worker=w-9&job_in_progress=0`;
    const first = fetch(takeUrl, { headers: own });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await fetch(takeUrl, { headers: own })).status).toBe(429);
    expect((await first).status).toBe(204);
  });

  it('streams chunks (consumed on read), keeps progress, fails a job whose handler errs, and retries it', async () => {
    const streamed = await run({ stream: 3, sleepMs: 200 });
    const seen: unknown[] = [];
    await vi.waitFor(
      async () => {
        const answer = await call('GET', `/v2/${endpoint.id}/stream/${streamed}?wait=2000`);
        seen.push(...(answer.body.stream as unknown[]));
        expect(answer.body.status).toBe('COMPLETED');
      },
      { timeout: 20_000, interval: 10 },
    );
    expect(seen).toEqual([{ output: { i: 0 } }, { output: { i: 1 } }, { output: { i: 2 } }]);
    const failing = await run({ error: 'bad input', progress: 'half' });
    await vi.waitFor(
      async () => expect(await statusOf(failing)).toMatchObject({ status: 'FAILED', error: 'bad input' }),
      {
        timeout: 20_000,
      },
    );
    expect((await call('POST', `/v2/${endpoint.id}/retry/${failing}`)).body).toMatchObject({
      status: 'IN_QUEUE',
    });
    await vi.waitFor(async () => expect((await statusOf(failing)).status).toBe('FAILED'), {
      timeout: 20_000,
    });
  });

  it('cancels a running job through the stop channel, and purges the queue', async () => {
    const long = await run({ sleepMs: 60_000 });
    await vi.waitFor(async () => expect((await statusOf(long)).status).toBe('IN_PROGRESS'), {
      timeout: 20_000,
    });
    const cancelled = await call('POST', `/v2/${endpoint.id}/cancel/${long}`);
    expect(cancelled.body).toMatchObject({ status: 'CANCELLED' });
    // The worker dropped it: its pings stop listing it, and the stop is no longer pending.
    await vi.waitFor(async () => expect(await store.jobs.stopsFor('w-1')).toEqual([]), { timeout: 20_000 });
    expect((await call('POST', `/v2/${endpoint.id}/purge-queue`)).body).toEqual({
      removed: 0,
      status: 'completed',
    });
  });

  it('gives a job whose worker died mid-job to another worker, where it completes once', async () => {
    const marker = join(scratch, 'died');
    const job = await run({ dieOnceAt: marker, sleepMs: 10 });
    await vi.waitFor(() => expect(existsSync(marker)).toBe(true), { timeout: 20_000 });
    // w-1 exited mid-job; a second worker takes the job once `lostAfter` passes with no ping listing it.
    startWorker('w-2', { DUPLICATE_RESULTS: '1' });
    await vi.waitFor(async () => expect((await statusOf(job)).status).toBe('COMPLETED'), { timeout: 30_000 });
    const final = await store.jobs.get(endpoint.id, job);
    expect(final).toMatchObject({ workerId: 'w-2', attempts: 2 });
  });

  it('answered what the OpenAPI document describes, every route and error', () => {
    const doc = openApiDocument({ serverUrl: 'http://127.0.0.1:8080' }) as Document;
    const checked = new Set<string>();
    for (const { method, path, status, body } of answered) {
      const [, , , verb = '', job] = (path.split('?')[0] ?? '').split('/');
      const template = `/v2/{endpoint}/${verb}${job === undefined ? '' : '/{job}'}`;
      const schema = responseSchemaIn(doc, template, method.toLowerCase(), String(status));
      expect(problemsIn(doc, body, schema), `${method} ${path} ${status}`).toEqual([]);
      checked.add(`${method} ${template} ${status}`);
    }
    // Every route's success, and the errors: 400, 401, 404, 409 and 413.
    expect([...checked].filter((c) => c.endsWith(' 200')).length).toBeGreaterThanOrEqual(10);
    expect(new Set([...checked].map((c) => c.split(' ')[2]))).toEqual(
      new Set(['200', '400', '401', '404', '409', '413']),
    );
  });

  it("counted every job that finished and every retry in /metrics' series", async () => {
    // The live counts are the autoscaler's snapshot (read every second): as the store is now.
    await jobs.signals.refresh();
    const text = await registry.metrics();
    const line = (series: string) => {
      const found = text.split('\n').find((l) => l.startsWith(`${series} `));
      return found === undefined ? undefined : Number(found.slice(series.length + 1));
    };
    const ep = `endpoint="${endpoint.id}"`;
    // 5 completed (2, 1, the stream, the job whose worker died), the failing job twice, the long one cancelled.
    expect(line(`corral_jobs_finished_total{${ep},outcome="COMPLETED"}`)).toBe(5);
    expect(line(`corral_jobs_finished_total{${ep},outcome="FAILED"}`)).toBe(2);
    expect(line(`corral_jobs_finished_total{${ep},outcome="CANCELLED"}`)).toBe(1);
    // A client's retry of the failed job, and the job of the worker that died, back in the queue.
    expect(line(`corral_jobs_retried_total{${ep}}`)).toBe(2);
    expect(line(`corral_job_delay_seconds_count{${ep}}`)).toBe(8);
    expect(line(`corral_job_execution_seconds_count{${ep}}`)).toBe(8);
    // The long job ran until its cancel: more than a second on its worker.
    expect(line(`corral_job_execution_seconds_bucket{le="0.5",${ep}}`)).toBeLessThan(8);
    // Nothing is queued or running now: the endpoint has no live series.
    expect(text).not.toContain(`corral_jobs{${ep}`);
  });
});
