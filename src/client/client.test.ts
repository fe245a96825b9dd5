import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import type { WireEndpoint, WireLimits } from '../contract/wire.js';
import { CorralApiError, CorralClient, CorralConnectionError, CorralProtocolError } from './index.js';

interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: unknown;
}

interface Canned {
  status?: number;
  body: unknown;
  raw?: string;
}

const PREFIX = '/gpu-instance/openapi/v1/';
const KEY = 'sk_test_0123456789';

function endpoint<P extends string | number>(port: P): WireEndpoint<P> {
  return sampleWireEndpoint(port, {
    id: 'ep1',
    name: 'demo',
    appName: 'demo',
    url: 'http://demo.localhost:8081',
    log: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/log?id=ep1',
  });
}

const LIMITS = { minWorkerNum: 0, maxWorkerNum: 10, cudaVersionList: ['12.4'] } as unknown as WireLimits;

const METRICS = {
  id: 'w1',
  state: 'running',
  healthy: true,
  gpus: ['GPU-0000'],
  cpuPercent: 12.5,
  memoryBytes: 1048576,
  startedAt: '2024-01-01T00:00:00.000Z',
  readyAt: null,
};

/** Canned answers by "METHOD path"; a test may override one before calling. */
const routes: Record<string, Canned> = {};
function resetRoutes(): void {
  for (const key of Object.keys(routes)) delete routes[key];
  Object.assign(routes, {
    'GET /healthz': { body: { status: 'ok' } },
    [`GET ${PREFIX}endpoints`]: { body: { endpoints: [endpoint('8000')], total: 1 } },
    [`POST ${PREFIX}endpoint/create`]: { body: { id: 'ep1' } },
    [`GET ${PREFIX}endpoint`]: { body: { endpoint: endpoint(8000) } },
    [`POST ${PREFIX}endpoint/update`]: { body: { endpoint: endpoint(8000) } },
    [`POST ${PREFIX}endpoint/delete`]: { body: {} },
    [`POST ${PREFIX}endpoint/stop`]: { body: {} },
    [`POST ${PREFIX}endpoint/worker/drain`]: { body: {} },
    [`POST ${PREFIX}endpoint/start`]: { body: {} },
    [`GET ${PREFIX}endpoint/limit`]: { body: LIMITS },
    [`GET ${PREFIX}endpoint/log`]: {
      body: {
        events: [{ at: '2024-01-01T00:00:00Z', type: 'created', message: 'created', data: {} }],
        next: 7,
      },
    },
    [`GET ${PREFIX}endpoint/worker/metrics`]: { body: METRICS },
    [`GET ${PREFIX}products`]: {
      body: {
        products: [
          { id: 'h100-80g', name: 'H100 80GB', gpuModel: 'H100', gpuMemoryGB: 80, gpusTotal: 8, gpusFree: 3 },
        ],
      },
    },
    [`POST ${PREFIX}repository/auth/save`]: { body: { id: 'cred1' } },
    [`GET ${PREFIX}repository/auths`]: {
      body: { auths: [{ id: 'cred1', name: 'hub', username: 'bob', createdAt: '2024-01-01T00:00:00Z' }] },
    },
    [`POST ${PREFIX}repository/auth/delete`]: { body: {} },
  });
}

let server: Server;
let baseUrl: string;
let requests: Recorded[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const text = Buffer.concat(chunks).toString('utf8');
      requests.push({
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body: text === '' ? undefined : JSON.parse(text),
      });
      const canned = routes[`${req.method} ${url.pathname}`] ?? {
        status: 404,
        body: { code: 404, reason: 'NOT_FOUND', message: 'no route', metadata: {} },
      };
      res.writeHead(canned.status ?? 200, { 'content-type': 'application/json' });
      res.end(canned.raw ?? JSON.stringify(canned.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  requests = [];
  resetRoutes();
});

function client(): CorralClient {
  return new CorralClient({ baseUrl, apiKey: KEY });
}

function only(): Recorded {
  expect(requests).toHaveLength(1);
  const [request] = requests;
  if (request === undefined) throw new Error('no request recorded');
  return request;
}

describe('CorralClient requests', () => {
  it('lists endpoints with paging query and bearer auth', async () => {
    const result = await client().listEndpoints({ pageSize: 20, pageNum: 0 });
    expect(result.total).toBe(1);
    expect(result.endpoints[0]?.ports[0]?.port).toBe('8000');
    const request = only();
    expect(request.method).toBe('GET');
    expect(request.path).toBe(`${PREFIX}endpoints`);
    expect(request.query).toEqual({ pageSize: '20', pageNum: '0' });
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    // No body, no Content-Type (a DELETE saying JSON without a body is refused by the API's parser).
    expect(request.headers['content-type']).toBeUndefined();
    expect(request.body).toBeUndefined();
  });

  it('omits paging parameters that are not given', async () => {
    await client().listEndpoints();
    expect(only().query).toEqual({});
  });

  it('creates an endpoint wrapped in {endpoint}', async () => {
    const spec = { name: 'demo', image: { image: 'corral/echo:1' }, ports: [{ port: '8000' }] };
    await expect(client().createEndpoint(spec)).resolves.toEqual({ id: 'ep1' });
    const request = only();
    expect(request.method).toBe('POST');
    expect(request.path).toBe(`${PREFIX}endpoint/create`);
    expect(request.body).toEqual({ endpoint: spec });
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request.headers['content-type']).toBe('application/json');
  });

  it('gets one endpoint by id and unwraps it', async () => {
    const result = await client().getEndpoint('ep 1/x');
    expect(result.ports[0]?.port).toBe(8000);
    const request = only();
    expect(request.method).toBe('GET');
    expect(request.path).toBe(`${PREFIX}endpoint`);
    expect(request.query).toEqual({ id: 'ep 1/x' });
  });

  it('updates with a flat body carrying the id', async () => {
    const result = await client().updateEndpoint('ep1', { name: 'renamed', workerConfig: { maxNum: 3 } });
    expect(result.id).toBe('ep1');
    const request = only();
    expect(request.path).toBe(`${PREFIX}endpoint/update`);
    expect(request.body).toEqual({ id: 'ep1', name: 'renamed', workerConfig: { maxNum: 3 } });
  });

  it.each([
    ['deleteEndpoint', 'endpoint/delete'],
    ['stopEndpoint', 'endpoint/stop'],
    ['startEndpoint', 'endpoint/start'],
  ] as const)('%s posts {id} to %s', async (method, route) => {
    await expect(client()[method]('ep1')).resolves.toBeUndefined();
    const request = only();
    expect(request.method).toBe('POST');
    expect(request.path).toBe(PREFIX + route);
    expect(request.body).toEqual({ id: 'ep1' });
  });

  it('reads limits', async () => {
    await expect(client().getLimits()).resolves.toEqual(LIMITS);
    expect(only().path).toBe(`${PREFIX}endpoint/limit`);
  });

  it('reads a page of the endpoint log', async () => {
    const page = await client().getEndpointLog('ep1', { after: 3, limit: 50 });
    expect(page.next).toBe(7);
    expect(page.events[0]?.type).toBe('created');
    const request = only();
    expect(request.path).toBe(`${PREFIX}endpoint/log`);
    expect(request.query).toEqual({ id: 'ep1', after: '3', limit: '50' });
  });

  it('drains and undrains a worker with the body waverless sends', async () => {
    await expect(client().drainWorker('w1')).resolves.toBeUndefined();
    await expect(client().drainWorker('w1', false)).resolves.toBeUndefined();
    expect(requests.map((r) => [r.method, r.path, r.body])).toEqual([
      ['POST', `${PREFIX}endpoint/worker/drain`, { workerID: 'w1', drain: true }],
      ['POST', `${PREFIX}endpoint/worker/drain`, { workerID: 'w1', drain: false }],
    ]);
  });

  it("reads a worker's metrics by endpoint and worker id", async () => {
    await expect(client().getWorkerMetrics('ep1', 'w 1')).resolves.toEqual(METRICS);
    const request = only();
    expect(request.method).toBe('GET');
    expect(request.path).toBe(`${PREFIX}endpoint/worker/metrics`);
    expect(request.query).toEqual({ id: 'ep1', worker: 'w 1' });
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("reads an endpoint's metrics, and refuses an answer without its workers", async () => {
    const metrics = { id: 'ep1', workers: { running: 1 }, requests: null };
    routes[`GET ${PREFIX}endpoint/metrics`] = { body: metrics };
    await expect(client().getEndpointMetrics('ep1')).resolves.toEqual(metrics);
    expect(only().query).toEqual({ id: 'ep1' });
    routes[`GET ${PREFIX}endpoint/metrics`] = { body: { id: 'ep1' } };
    await expect(client().getEndpointMetrics('ep1')).rejects.toBeInstanceOf(CorralProtocolError);
  });

  it("reads an endpoint's history, and refuses an answer without its columns", async () => {
    const history = {
      id: 'ep1',
      intervalSeconds: 10,
      capacity: 360,
      at: [1, 2],
      requests: { ok: [3, 4], clientErrors: [0, 0], serverErrors: [0, 1] },
      workers: { running: [1, 1] },
    };
    routes[`GET ${PREFIX}endpoint/metrics/history`] = { body: history };
    await expect(client().getEndpointHistory('ep1')).resolves.toEqual(history);
    expect(only().query).toEqual({ id: 'ep1' });
    routes[`GET ${PREFIX}endpoint/metrics/history`] = { body: { id: 'ep1', at: [] } };
    await expect(client().getEndpointHistory('ep1')).rejects.toBeInstanceOf(CorralProtocolError);
  });

  it('lists products', async () => {
    const products = await client().listProducts();
    expect(products.map((p) => p.id)).toEqual(['h100-80g']);
    expect(only().path).toBe(`${PREFIX}products`);
  });

  it('saves, lists and deletes registry credentials', async () => {
    const c = client();
    await expect(c.saveCredential({ name: 'hub', username: 'bob', password: 's3cret' })).resolves.toEqual({
      id: 'cred1',
    });
    await expect(c.listCredentials()).resolves.toHaveLength(1);
    await c.deleteCredential('cred1');
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `POST ${PREFIX}repository/auth/save`,
      `GET ${PREFIX}repository/auths`,
      `POST ${PREFIX}repository/auth/delete`,
    ]);
    expect(requests[0]?.body).toEqual({ name: 'hub', username: 'bob', password: 's3cret' });
    expect(requests[2]?.body).toEqual({ id: 'cred1' });
  });

  it('pulls a model with the POST models body and removes one revision with a DELETE', async () => {
    const entry = {
      name: 'acme/tiny-llm',
      revision: 'main',
      commit: 'c'.repeat(40),
      files: 3,
      bytes: 10,
      diskBytes: 10,
      lastUsedAt: '2024-01-01T00:00:00.000Z',
      endpoints: [],
      download: { bytesDone: 1, bytesTotal: 10, bytesPerSecond: 1 },
    };
    routes[`POST ${PREFIX}models`] = { status: 202, body: entry };
    routes[`DELETE ${PREFIX}models/acme/tiny-llm`] = { status: 204, body: {} };
    const c = client();
    const pull = {
      name: 'acme/tiny-llm',
      revision: 'main',
      allowPatterns: ['*.json'],
      tokenSecret: 'hf-token',
    };
    await expect(c.pullModel(pull)).resolves.toEqual(entry);
    await c.removeModel('acme/tiny-llm', { revision: 'refs/pr/1' });
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `POST ${PREFIX}models`,
      `DELETE ${PREFIX}models/acme/tiny-llm`,
    ]);
    expect(requests[0]?.body).toEqual(pull);
    expect(requests[1]?.query).toEqual({ revision: 'refs/pr/1' });
    expect(requests[1]?.body).toBeUndefined();
    expect(requests[1]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('checks health without sending the key', async () => {
    await expect(client().health()).resolves.toEqual({ status: 'ok' });
    const request = only();
    expect(request.path).toBe('/healthz');
    expect(request.headers.authorization).toBeUndefined();
  });

  it('keeps a path prefix of the base URL and ignores trailing slashes', async () => {
    routes[`GET /corral${PREFIX}products`] = { body: { products: [] } };
    const prefixed = new CorralClient({ baseUrl: `${baseUrl}/corral/`, apiKey: KEY });
    await expect(prefixed.listProducts()).resolves.toEqual([]);
    expect(only().path).toBe(`/corral${PREFIX}products`);
  });

  it('uses an injected fetch', async () => {
    const calls: string[] = [];
    const fetchSpy: typeof fetch = async (input, init) => {
      calls.push(String(input));
      return fetch(input, init);
    };
    await new CorralClient({ baseUrl, apiKey: KEY, fetch: fetchSpy }).listProducts();
    expect(calls).toEqual([`${baseUrl}${PREFIX}products`]);
  });
});

describe('CorralClient errors', () => {
  it('turns an error body into CorralApiError', async () => {
    routes[`POST ${PREFIX}endpoint/create`] = {
      status: 400,
      body: {
        code: 400,
        reason: 'OUT_OF_RANGE',
        message: 'maxNum must be at most 10',
        metadata: { field: 'workerConfig.maxNum' },
      },
    };
    const error = await client()
      .createEndpoint({ workerConfig: { maxNum: 99 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorralApiError);
    const apiError = error as CorralApiError;
    expect(apiError.status).toBe(400);
    expect(apiError.reason).toBe('OUT_OF_RANGE');
    expect(apiError.message).toBe('maxNum must be at most 10');
    expect(apiError.metadata).toEqual({ field: 'workerConfig.maxNum' });
    expect(apiError.field).toBe('workerConfig.maxNum');
  });

  it('reports 401 and 404 with their reasons', async () => {
    routes[`GET ${PREFIX}endpoint`] = {
      status: 404,
      body: { code: 404, reason: 'ENDPOINT_NOT_FOUND', message: 'no endpoint ep9', metadata: {} },
    };
    await expect(client().getEndpoint('ep9')).rejects.toMatchObject({
      name: 'CorralApiError',
      status: 404,
      reason: 'ENDPOINT_NOT_FOUND',
    });
    routes[`GET ${PREFIX}endpoints`] = {
      status: 401,
      body: { code: 401, reason: 'UNAUTHORIZED', message: 'invalid API key', metadata: {} },
    };
    await expect(client().listEndpoints()).rejects.toMatchObject({ status: 401, reason: 'UNAUTHORIZED' });
  });

  it('still throws CorralApiError for a non-JSON error body', async () => {
    routes[`GET ${PREFIX}products`] = { status: 502, body: null, raw: '<html>Bad Gateway</html>' };
    const error = (await client()
      .listProducts()
      .catch((e: unknown) => e)) as CorralApiError;
    expect(error).toBeInstanceOf(CorralApiError);
    expect(error.status).toBe(502);
    expect(error.reason).toBe('HTTP_502');
    expect(error.message).toContain('Bad Gateway');
    expect(error.metadata).toEqual({});
  });

  it('throws CorralProtocolError for a 2xx body of the wrong shape', async () => {
    routes[`GET ${PREFIX}endpoint/worker/metrics`] = { body: { state: 'running' } };
    await expect(client().getWorkerMetrics('ep1', 'w1')).rejects.toBeInstanceOf(CorralProtocolError);
    routes[`GET ${PREFIX}endpoint`] = { body: { id: 'ep1' } };
    await expect(client().getEndpoint('ep1')).rejects.toBeInstanceOf(CorralProtocolError);
    routes[`GET ${PREFIX}products`] = { body: null, raw: 'not json' };
    await expect(client().listProducts()).rejects.toBeInstanceOf(CorralProtocolError);
  });

  it('turns connection refused into CorralConnectionError naming the base URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const deadUrl = `http://127.0.0.1:${port}`;
    const error = await new CorralClient({ baseUrl: deadUrl, apiKey: KEY })
      .listEndpoints()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorralConnectionError);
    const connectionError = error as CorralConnectionError;
    expect(connectionError.baseUrl).toBe(deadUrl);
    expect(connectionError.timedOut).toBe(false);
    expect(connectionError.message).toContain(deadUrl);
    expect(connectionError.message).toContain('ECONNREFUSED');
    expect(connectionError.message).not.toContain(KEY);
  });

  it('times out with CorralConnectionError', async () => {
    const slow = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
    try {
      const error = await new CorralClient({ baseUrl: slowUrl, apiKey: KEY, timeoutMs: 100 })
        .getLimits()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorralConnectionError);
      expect((error as CorralConnectionError).timedOut).toBe(true);
      expect((error as Error).message).toContain(slowUrl);
    } finally {
      slow.closeAllConnections();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });

  it('rejects a base URL that is not http(s)', () => {
    expect(() => new CorralClient({ baseUrl: 'localhost:8080', apiKey: KEY })).toThrow(
      /invalid Corral API URL/,
    );
    expect(() => new CorralClient({ baseUrl: 'not a url', apiKey: KEY })).toThrow(/invalid Corral API URL/);
  });
});
