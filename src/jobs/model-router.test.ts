/**
 * The model router on real HTTP: a real gateway with the jobs routes and the model router in front, an in-memory
 * SQLite store, real keys, a queue endpoint (its job taken and answered through the worker side's WorkerJobs) and
 * an http endpoint whose worker says what it received.
 */
import { createServer } from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import { sampleEndpoint, storeEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { startStoreGateway } from '../../test/support/store-gateway.js';
import { testServers } from '../../test/support/test-servers.js';
import { RoutingTable } from '../controller/routing-table.js';
import type { Endpoint } from '../domain/endpoint.js';
import { MODELS_NAMED } from '../domain/openai-model.js';
import { ApiKeyService } from '../service/api-key-service.js';
import { CallerKeys } from '../service/caller-keys.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { JobClientRoutes } from './client-routes.js';
import { JobEvents } from './job-events.js';
import { JobService } from './job-service.js';
import { ModelRouter } from './model-router.js';
import { Wakeups } from './wakeups.js';
import { WorkerJobs } from './worker-jobs.js';

const servers = testServers();

describe('the model router: /openai/v1/... picks the endpoint by the body’s model', () => {
  let store: Store;
  let base: string;
  let queue: Endpoint;
  let http: Endpoint;
  let service: JobService;
  let workers: WorkerJobs;
  let keyA: string;
  let keyB: string;
  let invokeKeys: InvokeKeyService;
  /** What the http endpoint's worker received: method, path and body. */
  let received: { method: string; url: string; body: string }[];

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    servers.cleanups.push(() => store.close());
    const timers = new ManualTimers(1_000_000);
    const clock = () => timers.now;
    queue = sampleEndpoint({ patch: { type: 'queue', appName: 'llama', openaiModel: 'llama-3' } });
    http = sampleEndpoint({ patch: { appName: 'qwen', openaiModel: 'Qwen/Qwen2.5-7B' } });
    const plain = sampleEndpoint({ patch: { appName: 'plain' } });
    const foreign = sampleEndpoint({
      ownerId: 'owner-b',
      patch: { appName: 'b-llama', openaiModel: 'b-model' },
    });
    for (const e of [queue, http, plain, foreign]) await storeEndpoint(store, e);
    received = [];
    const worker = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (part: string) => {
        body += part;
      });
      req.on('end', () => {
        received.push({ method: req.method ?? '', url: req.url ?? '', body });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"object":"chat.completion","from":"http"}');
      });
    });
    const workerPort = await servers.listen(worker);
    const routing = new RoutingTable();
    routing.publish(
      [queue, http, plain, foreign],
      new Map([[http.id, [{ id: 'w-http', address: { host: '127.0.0.1', port: workerPort } }]]]),
    );
    invokeKeys = new InvokeKeyService({ store, clock });
    const keys = new CallerKeys({ verify: (key) => invokeKeys.grant(key), clock, timers });
    const wakeups = new Wakeups({ timers, recheckMs: 500 });
    const events = new JobEvents();
    service = new JobService({
      jobs: store.jobs,
      clock,
      wakeups,
      events,
      findEndpoints: (ref, reach, limit) => store.endpoints.matching(ref, reach, limit),
      findModelEndpoints: (reach, limit) => store.endpoints.withOpenAIModel(reach, limit),
      keys,
      retention: { asyncMs: 60_000, syncMs: 60_000 },
    });
    workers = new WorkerJobs({ jobs: store.jobs, clock, wakeups, events, maxAttempts: 3 });
    const logger = { warn: () => {}, error: () => {} };
    const port = await startStoreGateway(servers, {
      store,
      routing,
      timers,
      keys,
      routes: [
        new ModelRouter({ service, domain: 'localhost', logger }),
        new JobClientRoutes({ service, clock, domain: 'localhost', logger }),
      ],
    });
    base = `http://127.0.0.1:${port}`;
    const apiKeys = new ApiKeyService({ store, clock });
    keyA = (await apiKeys.create({ ownerId: 'owner-a', name: 'a', admin: false })).key;
    keyB = (await apiKeys.create({ ownerId: 'owner-b', name: 'b', admin: false })).key;
  });

  /** A call's status and JSON body (any: each test reads what it asserts). */
  const post = async (
    path: string,
    body: unknown,
    key: string | null = keyA,
  ): Promise<{ status: number; body: any }> => {
    const response = await fetch(`${base}/openai/v1${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };
  const get = async (path: string, key = keyA): Promise<{ status: number; body: any }> => {
    const response = await fetch(`${base}/openai/v1${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: response.status, body: await response.json() };
  };

  it("serves a queue endpoint's model as a job with RunPod's input, answered with the handler's object", async () => {
    const request = { model: 'llama-3', messages: [{ role: 'user', content: 'hi' }] };
    const answer = post('/chat/completions?trace=1', request);
    const caller = { endpoint: queue, workerId: 'w-queue' };
    // A held take: the job's announcement hands it over as soon as the router has made it (no polling).
    const taken = await workers.take(caller, { batch: 1, holding: undefined, holdMs: 60_000 });
    expect(taken).toHaveLength(1);
    const job = taken[0];
    expect(JSON.parse(job?.input ?? '')).toEqual({
      openai_route: '/v1/chat/completions',
      openai_input: request,
    });
    await workers.result(caller, job?.id ?? '', {
      kind: 'final',
      status: 'COMPLETED',
      output: '[{"object":"chat.completion","from":"queue"}]',
      error: null,
      stopPod: false,
    });
    const response = await answer;
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: 'chat.completion', from: 'queue' });
    expect(received).toEqual([]);
  });

  it("passes an http endpoint's model to its worker as /v1/..., the body as sent", async () => {
    const body = '{"model":"Qwen/Qwen2.5-7B","messages":[{"role":"user","content":"héllo"}]}';
    const response = await post('/chat/completions', body);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: 'chat.completion', from: 'http' });
    expect(received).toEqual([{ method: 'POST', url: '/v1/chat/completions', body }]);
    expect((await service.list(queue, { limit: 5 })).jobs).toEqual([]);
  });

  it('passes a body sent in chunks (no Content-Length) whole, in one piece', async () => {
    const parts = ['{"model":"Qwen/Qwen2.5-7B",', '"prompt":"in parts"}'];
    const response = await fetch(`${base}/openai/v1/completions?stream=false`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(200);
    expect(received).toEqual([{ method: 'POST', url: '/v1/completions?stream=false', body: parts.join('') }]);
  });

  it("lists the key's models in OpenAI's shape, and one by its name", async () => {
    const list = await get('/models');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      object: 'list',
      data: [
        {
          id: 'Qwen/Qwen2.5-7B',
          object: 'model',
          created: Math.floor(http.createdAt / 1000),
          owned_by: 'qwen',
        },
        { id: 'llama-3', object: 'model', created: Math.floor(queue.createdAt / 1000), owned_by: 'llama' },
      ],
    });
    const one = await get(`/models/${encodeURIComponent('Qwen/Qwen2.5-7B')}`);
    expect(one.body).toMatchObject({ id: 'Qwen/Qwen2.5-7B', object: 'model', owned_by: 'qwen' });
    expect((await get('/models/gpt-4')).status).toBe(404);
    expect((await get('/models', keyB)).body.data.map((m: { id: string }) => m.id)).toEqual(['b-model']);
  });

  it.each([
    ['an unknown model', { model: 'gpt-4', messages: [] }, 'no endpoint serves the model "gpt-4"'],
    ['no model', { messages: [] }, 'the request names no model'],
  ])("answers %s 404 in OpenAI's shape naming the models there are", async (_, body, said) => {
    const response = await post('/chat/completions', body);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({
      error: {
        message: `${said}; the models there are: Qwen/Qwen2.5-7B, llama-3`,
        type: 'not_found_error',
        code: 'MODEL_NOT_FOUND',
      },
    });
  });

  it("never picks another owner's endpoint, and an invoke key reaches its one endpoint alone", async () => {
    const foreign = await post('/chat/completions', { model: 'llama-3', messages: [] }, keyB);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.message).toBe(
      'no endpoint serves the model "llama-3"; the models there are: b-model',
    );
    const invoke = await invokeKeys.create({ ownerId: 'owner-a', keyId: 'k', admin: false }, http.id, 'c');
    const list = await get('/models', invoke.key);
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual(['Qwen/Qwen2.5-7B']);
    expect((await post('/chat/completions', { model: 'llama-3' }, invoke.key)).status).toBe(404);
    expect((await post('/chat/completions', { model: 'Qwen/Qwen2.5-7B' }, invoke.key)).status).toBe(200);
  });

  it("refuses without a key (401), a body that is no JSON object and a GET of another route (400), in OpenAI's shape", async () => {
    const unauthenticated = await post('/chat/completions', { model: 'llama-3' }, null);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body.error).toMatchObject({
      type: 'authentication_error',
      code: 'UNAUTHENTICATED',
    });
    const notJson = await post('/chat/completions', 'model=llama-3');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error).toMatchObject({ code: 'INVALID_JOB_REQUEST' });
    expect((await get('/files')).status).toBe(400);
  });

  it(`names at most ${MODELS_NAMED} models and counts the rest`, async () => {
    for (let i = 0; i < MODELS_NAMED; i++)
      await storeEndpoint(
        store,
        sampleEndpoint({ patch: { openaiModel: `m-${String(i).padStart(2, '0')}` } }),
      );
    const response = await post('/embeddings', { model: 'nope', input: 'x' });
    expect(response.body.error.message).toMatch(
      /the models there are: Qwen\/Qwen2.5-7B, .*, m-17 and 2 more$/,
    );
  });
});
