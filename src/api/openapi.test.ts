import type { IncomingMessage } from 'node:http';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { MemoryModelCache } from '../../test/support/memory-model-cache.js';
import { type Document, problemsIn, responseSchemaIn, type Schema } from '../../test/support/openapi.js';
import { servedOperations } from '../../test/support/routes.js';
import { storeTargets } from '../../test/support/stores.js';
import { endpointInput } from '../contract/endpoint-schema.js';
import { requestJsonSchemas } from '../contract/json-schema.js';
import { openAIErrorBody, openAIModelList } from '../contract/openai.js';
import { openApiDocument } from '../contract/openapi/document.js';
import { API_PREFIX } from '../contract/paths.js';
import { CLIENT_ROUTES } from '../contract/runpod-routes.js';
import { API_ERROR_CATALOGUE } from '../errors/api-catalogue.js';
import { JOBS_ERROR_CATALOGUE } from '../errors/jobs-catalogue.js';
import { GatewayMetrics } from '../gateway/metrics.js';
import { TrafficHistory } from '../history/history.js';
import { ModelRouter } from '../jobs/model-router.js';
import { ApiKeyService } from '../service/api-key-service.js';

const doc = openApiDocument({ serverUrl: 'http://127.0.0.1:8080' }) as Document;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Every `METHOD path` the document describes on the API's address (`gateway`: on the gateway's, the jobs API). */
function documentedOperations(gateway = false): string[] {
  return Object.entries(doc.paths)
    .filter(([, item]) => (item.servers !== undefined) === gateway)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => METHODS.includes(method))
        // On the API's address a path parameter as its router spells it: `{org}` is `:org`.
        .map((method) => `${method.toUpperCase()} ${gateway ? path : path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
}

const problems = (value: unknown, schema: Schema, at = '$') => problemsIn(doc, value, schema, at);
const responseSchema = (path: string, method: string, status = '200') =>
  responseSchemaIn(doc, path, method, status);

const requestSchema = (path: string, method: string): Schema => {
  const body = doc.paths[path]?.[method]?.requestBody as
    | { content: Record<string, { schema: Schema }> }
    | undefined;
  const schema = body?.content['application/json']?.schema;
  if (!schema) throw new Error(`no request body documented for ${method} ${path}`);
  return schema;
};

const V1 = '/gpu-instance/openapi/v1';

describe('the request schemas', () => {
  it('are what zod says of the schemas that parse requests', () => {
    const generated = requestJsonSchemas();
    expect(Object.keys(generated).sort()).toEqual(
      [
        'EndpointInput',
        'EnvInput',
        'HealthyInput',
        'ImageInput',
        'IntegerInput',
        'ModelInput',
        'PolicyInput',
        'PortInput',
        'ProductInput',
        'VolumeMountInput',
        'WorkerConfigInput',
      ].sort(),
    );
    for (const [name, schema] of Object.entries(generated)) {
      expect(doc.components.schemas[name], name).toEqual(schema);
    }
  });

  it('accept and refuse what the parser accepts and refuses', () => {
    const samples: unknown[] = [
      {},
      { name: 'n', ports: [{ port: 8000 }], image: { image: 'x' } },
      { ports: [8000], products: ['h100', { id: 'a100' }] },
      { workerConfig: { minNum: '1', maxNum: ' 2 ' }, policy: [{ type: 'queue', value: 3 }] },
      { workerConfig: [], image: [{ image: 'x' }] },
      { healthy: [] },
      { healthy: [{ path: '/ok' }] },
      { healthy: [{}, {}] },
      { workerConfig: { minNum: 1.5 } },
      { workerConfig: { minNum: 'one' } },
      { policy: { type: 'fastest' } },
      { volumeMounts: [{ type: 'local', mountPath: '/data' }] },
      { volumeMounts: [{ type: 'local' }] },
      { envs: [{ key: 'A', value: null }], clusterID: null },
      { envs: 'A=1' },
      { ports: [{ port: 'http' }] },
    ];
    const schema = doc.components.schemas.EndpointInput as Schema;
    const verdicts = samples.map((body) => [
      JSON.stringify(body),
      endpointInput.safeParse(body).success,
      problems(body, schema).length === 0,
    ]);
    expect(verdicts.filter(([, parsed, documented]) => parsed !== documented)).toEqual([]);
    expect(verdicts.filter(([, parsed]) => !parsed).length).toBeGreaterThan(5);
  });
});
const target = storeTargets()[0];

describe('the OpenAPI document against the routes', () => {
  let api: TestApi;
  let adminKey: string;
  let dispose: () => Promise<void>;
  let now = Date.parse('2026-11-26T10:00:00Z');
  const gatewayMetrics = new GatewayMetrics({ registry: new Registry(), clock: () => now });
  const history = new TrafficHistory({
    sources: {
      counters: () => gatewayMetrics.counters(),
      load: () => [],
      workers: () => [],
      desired: () => undefined,
      exists: () => true,
    },
    clock: () => now,
    timers: { setTimeout: () => undefined, clearTimeout: () => {} },
    intervalSeconds: 10,
    samples: 360,
    maxEndpoints: 10,
  });

  beforeAll(async () => {
    if (!target) throw new Error('no store target');
    const opened = await target.open();
    dispose = opened.dispose;
    // A model cache, so that the routes that pull into it and remove from it are served.
    const cache = new MemoryModelCache({ hubDir: '/cache/hub', models: [] });
    api = await createTestApi(opened.store, {
      history,
      desiredWorkers: () => 1,
      modelCache: cache,
      models: { cache, users: async () => new Map() },
    });
    adminKey = (
      await new ApiKeyService({ store: opened.store, clock: Date.now }).create({
        ownerId: 'ops',
        name: 'ops',
        admin: true,
      })
    ).key;
    await opened.store.replicas.beat({
      id: 'rep-test',
      host: 'h',
      pid: 1,
      apiUrl: 'http://h:1',
      inFlight: 0,
      queued: 0,
    });
    await opened.store.leases.tryAcquire('controller', 'rep-test', 60_000);
    await api.app.ready();
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
  });

  it('documents every route the app serves', () => {
    const served = servedOperations(api.app);
    expect(served.filter((operation) => operation.includes(API_PREFIX)).length).toBeGreaterThan(10);
    expect(served.length).toBeGreaterThanOrEqual(18);
    expect(served.filter((operation) => !documentedOperations().includes(operation))).toEqual([]);
  });

  it('describes only operations the app serves', () => {
    const missing = documentedOperations().filter((operation) => {
      const [method = '', url = ''] = operation.split(' ');
      return !api.app.hasRoute({ method: method as 'GET' | 'POST' | 'DELETE', url });
    });
    expect(missing).toEqual([]);
    expect(documentedOperations()).toHaveLength(45);
  });

  it("describes the jobs API's client routes, each on the gateway's address, as the gateway serves them", () => {
    const served = Object.entries(CLIENT_ROUTES).flatMap(([verb, route]) =>
      route.methods.map((method) => `${method} /v2/{endpoint}/${verb}${route.job ? '/{job}' : ''}`),
    );
    const isOpenAI = (operation: string) => /\/openai\/v1\//.test(operation);
    expect(
      documentedOperations(true)
        .filter((operation) => !isOpenAI(operation))
        .sort(),
    ).toEqual(served.sort());
    expect(served).toHaveLength(13);
    // The OpenAI routes: RunPod's per endpoint, and the model router's.
    expect(documentedOperations(true).filter(isOpenAI).sort()).toEqual([
      'GET /openai/v1/models',
      'GET /v2/{endpoint}/openai/v1/{route}',
      'POST /openai/v1/{route}',
      'POST /v2/{endpoint}/openai/v1/{route}',
    ]);
    const router = new ModelRouter({
      service: { modelEndpoints: async () => [] },
      domain: 'localhost',
      logger: console,
    });
    for (const url of ['/openai/v1/chat/completions', '/openai/v1/models'])
      expect(router.claims({ url, headers: { host: 'gateway:8000' } } as IncomingMessage), url).toBe(true);
    expect(responseSchema('/openai/v1/models', 'get')).toEqual({
      $ref: '#/components/schemas/OpenAIModelList',
    });
    expect(
      problems(
        JSON.parse(openAIModelList([{ id: 'llama', created: 1, ownedBy: 'team-a' }])),
        responseSchema('/openai/v1/models', 'get'),
      ),
    ).toEqual([]);
    expect(
      problems(
        JSON.parse(openAIErrorBody('no model x', 'not_found_error', 'MODEL_NOT_FOUND')),
        responseSchema('/openai/v1/{route}', 'post', '404'),
      ),
    ).toEqual([]);
    for (const path of Object.keys(doc.paths).filter((p) => p.startsWith('/v2/'))) {
      expect(doc.paths[path]?.servers).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:8000' })]);
    }
    // Their bodies and answers are checked against what the routes answer in src/jobs/jobs.int.test.ts.
    expect(requestSchema('/v2/{endpoint}/run', 'post')).toEqual({
      $ref: '#/components/schemas/JobRunRequest',
    });
    expect(
      problems(
        { input: { prompt: 'a cat' }, policy: { ttl: 60_000 } },
        requestSchema('/v2/{endpoint}/run', 'post'),
      ),
    ).toEqual([]);
    expect(problems({ webhook: 'https://example.com' }, requestSchema('/v2/{endpoint}/run', 'post'))).toEqual(
      ['$: missing required input'],
    );
    const error = doc.components.schemas.JobError as { properties: { reason: { enum: string[] } } };
    expect(error.properties.reason.enum).toEqual(Object.keys(JOBS_ERROR_CATALOGUE));
  });

  it('serves itself at /openapi.json without a key', async () => {
    const response = await api.app.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { host: 'corral.example.com:9000' },
    });
    expect(response.statusCode).toBe(200);
    const served = response.json() as Document;
    expect(served.openapi).toBe('3.1.0');
    expect(served.servers).toEqual([{ url: 'http://corral.example.com:9000' }]);
    // The jobs API: the same name, the gateway's port.
    expect(served.paths['/v2/{endpoint}/run']?.servers).toEqual([
      expect.objectContaining({ url: `http://corral.example.com:${api.config.gatewayAddr.port}` }),
    ]);
    expect(Object.keys(served.paths)).toEqual(Object.keys(doc.paths));
  });

  it('resolves every $ref', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/(\w+)\/(\w+)"/g)];
    const components = doc.components as unknown as Record<string, Record<string, unknown>>;
    const unresolved = refs.filter(([, kind = '', name = '']) => components[kind]?.[name] === undefined);
    expect(unresolved.map(([whole]) => whole)).toEqual([]);
    expect(refs.length).toBeGreaterThan(20);
  });

  it('lists every reason of the error catalogue', () => {
    const error = doc.components.schemas.Error as { properties: { reason: { enum: string[] } } };
    expect(error.properties.reason.enum).toEqual(Object.keys(API_ERROR_CATALOGUE));
  });

  it('requires authentication everywhere but the system routes', () => {
    const open = Object.entries(doc.paths)
      .filter(
        ([, item]) => Array.isArray(item.get?.security) && (item.get.security as unknown[]).length === 0,
      )
      .map(([path]) => path);
    expect(open.sort()).toEqual(['/healthz', '/openapi.json', '/readyz']);
  });

  it("accepts the original service's client bodies", () => {
    expect(problems(originalClientCreateBody(), requestSchema(`${V1}/endpoint/create`, 'post'))).toEqual([]);
    const modern = {
      endpoint: {
        image: { image: 'x/y:z' },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: '1', maxNum: 2 },
        healthy: [{ path: '/ok' }],
      },
    };
    expect(problems(modern, requestSchema(`${V1}/endpoint/create`, 'post'))).toEqual([]);
  });

  /** The endpoint's history after an interval with a request and one without (nulls in its columns). */
  const sampledHistory = async (id: string) => {
    gatewayMetrics.observeRequest(id, 200, 12, 0);
    gatewayMetrics.observeColdStart(id, 900);
    now += 10_000;
    history.sample();
    now += 10_000;
    history.sample();
    const body = (await api.call('GET', `endpoint/metrics/history?id=${id}`)).body;
    expect(body.at).toHaveLength(2);
    expect(body.latencyMs.p50).toEqual([12, null]);
    return body;
  };

  it('matches what the app answers', async () => {
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(created.status).toBe(200);
    expect(problems(created.body, responseSchema(`${V1}/endpoint/create`, 'post'))).toEqual([]);
    const id = created.body.id as string;

    const answers: [string, string, unknown][] = [
      [`${V1}/endpoint`, 'get', (await api.call('GET', `endpoint?id=${id}`)).body],
      [`${V1}/endpoints`, 'get', (await api.call('GET', 'endpoints')).body],
      [`${V1}/endpoint/update`, 'post', (await api.call('POST', 'endpoint/update', { id, name: 'x' })).body],
      [`${V1}/endpoint/log`, 'get', (await api.call('GET', `endpoint/log?id=${id}`)).body],
      [`${V1}/endpoint/metrics`, 'get', (await api.call('GET', `endpoint/metrics?id=${id}`)).body],
      [`${V1}/endpoint/metrics/history`, 'get', await sampledHistory(id)],
      [`${V1}/endpoint/limit`, 'get', (await api.call('GET', 'endpoint/limit')).body],
      [`${V1}/products`, 'get', (await api.call('GET', 'products')).body],
      [
        `${V1}/repository/auth/save`,
        'post',
        (await api.call('POST', 'repository/auth/save', { name: 'r', username: 'u', password: 'p' })).body,
      ],
      [`${V1}/repository/auths`, 'get', (await api.call('GET', 'repository/auths')).body],
      [`${V1}/endpoint/stop`, 'post', (await api.call('POST', 'endpoint/stop', { id })).body],
      [`${V1}/endpoint/start`, 'post', (await api.call('POST', 'endpoint/start', { id })).body],
      [`${V1}/cluster`, 'get', (await api.call('GET', 'cluster', undefined, adminKey)).body],
      [`${V1}/gpus`, 'get', (await api.call('GET', 'gpus')).body],
      [`${V1}/gpus`, 'get', (await api.call('GET', 'gpus', undefined, adminKey)).body],
      [
        `${V1}/apikey/create`,
        'post',
        (await api.call('POST', 'apikey/create', { name: 'n', ownerId: 'b' }, adminKey)).body,
      ],
      [`${V1}/apikeys`, 'get', (await api.call('GET', 'apikeys', undefined, adminKey)).body],
      ['/readyz', 'get', (await api.app.inject({ method: 'GET', url: '/readyz' })).json()],
      ['/healthz', 'get', (await api.app.inject({ method: 'GET', url: '/healthz' })).json()],
    ];
    for (const [path, method, body] of answers) {
      expect(problems(body, responseSchema(path, method)), `${method} ${path}`).toEqual([]);
    }
    // The check is not vacuous: a listed endpoint (string port) is not a got one (integer port).
    const listed = answers[1]?.[2] as { endpoints: unknown[] };
    expect(listed.endpoints).toHaveLength(1);
    expect(problems({ endpoint: listed.endpoints[0] }, responseSchema(`${V1}/endpoint`, 'get'))).toEqual([
      '$.endpoint.ports[0].port: expected an integer, got "8000"',
    ]);
    expect(problems({}, responseSchema(`${V1}/endpoint/create`, 'post'))).toEqual(['$: missing required id']);
  });

  it('describes the error bodies the app sends', async () => {
    const missing = await api.call('GET', 'endpoint?id=nope');
    expect(missing.status).toBe(404);
    expect(problems(missing.body, responseSchema(`${V1}/endpoint`, 'get', '404'))).toEqual([]);

    const unauthenticated = await api.call('GET', 'endpoints', undefined, null);
    expect(unauthenticated.status).toBe(401);
    expect(problems(unauthenticated.body, responseSchema(`${V1}/endpoints`, 'get', '401'))).toEqual([]);

    const invalid = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ ports: [{ port: 2222 }] }),
    );
    expect(invalid.status).toBe(400);
    expect(problems(invalid.body, responseSchema(`${V1}/endpoint/create`, 'post', '400'))).toEqual([]);
  });
});
