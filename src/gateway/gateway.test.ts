import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { loopTurns, ManualTimers } from '../../test/support/manual-timers.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { RoutableWorker, RoutingView } from '../ports/routing-view.js';
import { CallerKeys, KEY_CACHE_TTL_MS, STALE_CHECK_WAIT_MS } from '../service/caller-keys.js';
import type { EndpointKeyGrant } from '../service/invoke-key-service.js';
import { Gateway, type GatewayOptions } from './gateway.js';
import { GatewayMetrics } from './metrics.js';
import { WorkerPools } from './pools.js';

// A real gateway on port 0 in front of real worker servers on port 0; only the controller's routing view is
// replaced, by one the test sets by hand. Sockets are real (I/O); time is not: the gateway runs on ManualTimers and
// its clock, and tests await the events that make a state true (a request queued, one reaching a worker, a
// connection closing) instead of polling for it.

/** How many times something has happened, awaitable: `reached(n)` resolves once it has happened n times in all. */
class Tally {
  count = 0;
  readonly #waiters: { total: number; resolve: () => void }[] = [];

  add(): void {
    this.count += 1;
    for (const waiter of this.#waiters.filter((w) => w.total <= this.count)) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  reached(total: number): Promise<void> {
    if (this.count >= total) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ total, resolve }));
  }
}

/** Lets the callbacks that I/O events and settled promises have queued run (event-loop turns, not time). */
async function flushIo(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve));
}

interface TestWorker {
  id: string;
  address: { host: string; port: number };
  maxInFlight: number;
  /** Resolves once the worker has received `total` requests in all. */
  received(total: number): Promise<void>;
  /** Resolves once `total` requests in all were abandoned by the gateway before the worker answered them. */
  left(total: number): Promise<void>;
  /** Answers every request held at `/hold` so far. */
  release(): void;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/**
 * A worker that answers with its id, `/hold` only once the test calls release(), anything else at once; it counts
 * the requests it holds at once.
 */
async function startWorker(id: string): Promise<TestWorker> {
  let inFlight = 0;
  const held: (() => void)[] = [];
  const received = new Tally();
  const left = new Tally();
  const worker: TestWorker = {
    id,
    address: { host: '127.0.0.1', port: 0 },
    maxInFlight: 0,
    received: (total) => received.reached(total),
    left: (total) => left.reached(total),
    release: () => {
      for (const answer of held.splice(0)) answer();
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
  const server = createServer((req, res) => {
    inFlight += 1;
    worker.maxInFlight = Math.max(worker.maxInFlight, inFlight);
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      inFlight -= 1;
      return true;
    };
    const answer = () => {
      if (finish()) res.end(id);
    };
    res.on('close', () => {
      if (!res.writableFinished && finish()) left.add();
    });
    if (req.url?.startsWith('/hold')) held.push(answer);
    else answer();
    received.add();
  });
  // Upgrades are accepted and the connection closed at once.
  server.on('upgrade', (_req, socket: Socket) => {
    socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
  });
  worker.address.port = await listen(server);
  return worker;
}

/** An address where nothing listens: connecting to it is refused. */
async function deadAddress(): Promise<{ host: string; port: number }> {
  const server = createServer();
  const port = await listen(server);
  server.close();
  await once(server, 'close');
  return { host: '127.0.0.1', port };
}

/** An API key of owner-a, the owner of sampleEndpoint(): what every request of these tests sends unless told. */
const OWNER_KEY = 'sk_ownera000000_ownerAkeyOwnerAkeyOwnerAkeyOwnerA';
const AUTHORIZATION = `Bearer ${OWNER_KEY}`;

class StaticRouting implements RoutingView {
  readonly endpoints = new Map<string, Endpoint>();
  readonly workers = new Map<string, RoutableWorker[]>();
  readonly #listeners = new Set<() => void>();

  endpointByAppName(appName: string): Endpoint | undefined {
    for (const endpoint of this.endpoints.values()) if (endpoint.spec.appName === appName) return endpoint;
    return undefined;
  }
  endpointById(endpointId: string): Endpoint | undefined {
    return this.endpoints.get(endpointId);
  }
  routableWorkers(endpointId: string) {
    return this.workers.get(endpointId) ?? [];
  }
  conditionOf() {
    return undefined;
  }
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  changed(): void {
    for (const listener of this.#listeners) listener();
  }
  refreshes = 0;
  requestRefresh(): void {
    this.refreshes += 1;
  }
}

interface Harness {
  gateway: Gateway;
  metrics: GatewayMetrics | undefined;
  routing: StaticRouting;
  port: number;
  /** The gateway's timers; `timers.now` is its clock. */
  timers: ManualTimers;
  warnings: { fields: object; message: string }[];
  /** Endpoints the gateway said a request queued at (the autoscaler's signal), in order. */
  queued: string[];
  /** Resolves once `total` requests in all have had to wait in a queue (the gateway's onQueued). */
  whenQueued(total: number): Promise<void>;
  /**
   * Resolves once `total` client connections in all have closed at the gateway's server, and the gateway has run
   * what their 'close' set off.
   */
  whenClosed(total: number): Promise<void>;
  pools: WorkerPools;
  lookUp: { answer: (appName: string) => Promise<Endpoint | undefined> };
  /** The keys the store knows (OWNER_KEY to begin with), and how many times the gateway asked it about one. */
  keys: Map<string, EndpointKeyGrant>;
  keyQueries: () => number;
  /** The store's answer about a key (by default: from `keys`). */
  keyStore: { answer: (key: string) => Promise<EndpointKeyGrant | undefined> };
  /** Client connections the gateway's server still holds (upgraded sockets too, until they close). */
  connections: () => Promise<number>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startGateway(
  options: {
    queueTimeoutMs?: number;
    registry?: Registry;
    timers?: ManualTimers;
    neverPlaceable?: (endpoint: Endpoint) => string | undefined;
    findWorker?: GatewayOptions['findWorker'];
  } = {},
): Promise<Harness> {
  const routing = new StaticRouting();
  const timers = options.timers ?? new ManualTimers(1_000);
  const warnings: Harness['warnings'] = [];
  const lookUp: Harness['lookUp'] = { answer: async () => undefined };
  const keys = new Map<string, EndpointKeyGrant>([[OWNER_KEY, { ownerId: 'owner-a', admin: false }]]);
  let keyQueries = 0;
  const keyStore: Harness['keyStore'] = { answer: async (key) => keys.get(key) };
  const pools = new WorkerPools({ connectTimeoutMs: 1_000 });
  // Its load is read at scrape time, from the gateway made next.
  const metrics = options.registry
    ? new GatewayMetrics({ registry: options.registry, load: () => gateway.stats() })
    : undefined;
  const gateway: Gateway = new Gateway({
    metrics,
    routing,
    pools,
    domain: 'localhost',
    clock: () => timers.now,
    timers,
    logger: { info: () => {}, warn: (fields, message) => warnings.push({ fields, message }) },
    bodyLimitBytes: 1024,
    maxQueueLength: 10,
    queueTimeoutMs: options.queueTimeoutMs ?? 5_000,
    findEndpoint: (appName) => lookUp.answer(appName),
    keys: new CallerKeys({
      verify: (key) => {
        keyQueries += 1;
        return keyStore.answer(key);
      },
      clock: () => timers.now,
      timers,
    }),
    ...(options.neverPlaceable ? { neverPlaceable: options.neverPlaceable } : {}),
    ...(options.findWorker ? { findWorker: options.findWorker } : {}),
  });
  const queued: string[] = [];
  const queuedTally = new Tally();
  gateway.onQueued((endpointId) => {
    queued.push(endpointId);
    queuedTally.add();
  });
  const closed = new Tally();
  const server = createServer(gateway.handleRequest).on('upgrade', gateway.handleUpgrade);
  server.on('connection', (socket: Socket) => socket.on('close', () => closed.add()));
  const port = await listen(server);
  cleanups.push(async () => {
    gateway.close();
    server.closeAllConnections();
    server.close();
    await pools.close();
  });
  const connections = () =>
    new Promise<number>((resolve, reject) =>
      server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
  return {
    gateway,
    routing,
    port,
    timers,
    warnings,
    queued,
    whenQueued: (total) => queuedTally.reached(total),
    whenClosed: async (total) => {
      await closed.reached(total);
      await flushIo();
    },
    pools,
    lookUp,
    keys,
    keyQueries: () => keyQueries,
    keyStore,
    connections,
    metrics,
  };
}

async function track(worker: Promise<TestWorker>): Promise<TestWorker> {
  const started = await worker;
  cleanups.push(() => started.close());
  return started;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A GET with OWNER_KEY's Authorization unless `extra` says otherwise (`authorization: undefined`: none). */
function get(port: number, host: string, path = '/work', extra: Record<string, string | undefined> = {}) {
  const headers: Record<string, string> = { host };
  for (const [name, value] of Object.entries({ authorization: AUTHORIZATION, ...extra })) {
    if (value !== undefined) headers[name] = value;
  }
  return new Promise<Answer>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** One sample of a metric in the registry's text, by its full series name (`name{labels}`); NaN when absent. */
async function sample(registry: Registry, series: string): Promise<number> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}

/** A request whose client goes away once `when` resolves. */
function abandon(port: number, host: string, path: string, when: Promise<unknown>): Promise<void> {
  const req = request({
    host: '127.0.0.1',
    port,
    path,
    headers: { host, authorization: AUTHORIZATION },
    agent: false,
  });
  req.on('error', () => {});
  req.end();
  return when.then(() => {
    req.destroy();
  });
}

/**
 * A running endpoint whose one worker answers each request with `answer(req)` (what reached the worker), and each
 * upgrade, when `upgraded` is given, with a 101 after calling it.
 */
async function routedToEcho(
  h: Harness,
  answer: (req: IncomingMessage) => string,
  upgraded?: (req: IncomingMessage) => void,
): Promise<Endpoint> {
  const echo = createServer((req, res) => res.end(answer(req)));
  if (upgraded) {
    echo.on('upgrade', (req: IncomingMessage, socket: Socket) => {
      upgraded(req);
      socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    });
  }
  const port = await listen(echo);
  cleanups.push(() => {
    echo.closeAllConnections();
    echo.close();
  });
  const endpoint = runningEndpoint();
  h.routing.endpoints.set(endpoint.id, endpoint);
  h.routing.workers.set(endpoint.id, [{ id: 'w-echo', address: { host: '127.0.0.1', port } }]);
  return endpoint;
}

function runningEndpoint(maxConcurrent = 2): Endpoint {
  return sampleEndpoint({ patch: { workers: { minWorkers: 0, maxWorkers: 3, maxConcurrent } } });
}

function hostOf(endpoint: Endpoint): string {
  return `${endpoint.spec.appName}.localhost:8000`;
}

describe('Gateway', () => {
  it('answers 404 ENDPOINT_NOT_FOUND for a host no endpoint serves, and for a host outside the domain', async () => {
    const h = await startGateway();
    for (const host of ['nobody.localhost', 'example.com']) {
      const answer = await get(h.port, host);
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 404, reason: 'ENDPOINT_NOT_FOUND' });
    }
  });

  it('routes an absolute-form target by the host it names and forwards its path; refuses two Host headers and a target naming another host', async () => {
    const h = await startGateway();
    const endpoint = await routedToEcho(h, (req) => req.url ?? '');
    const absolute = await get(h.port, hostOf(endpoint), `http://${hostOf(endpoint)}/v1/models?x=1`);
    expect([absolute.status, absolute.body]).toEqual([200, '/v1/models?x=1']);
    const elsewhere = await get(h.port, hostOf(endpoint), 'http://other.localhost:8000/admin');
    expect(elsewhere.status).toBe(400);
    expect(JSON.parse(elsewhere.body)).toMatchObject({ reason: 'INVALID_REQUEST' });
    const client = connect(h.port, '127.0.0.1');
    client.write(
      `GET /v1 HTTP/1.1\r\nHost: ${hostOf(endpoint)}\r\nHost: other.localhost:8000\r\nAuthorization: ${AUTHORIZATION}\r\nConnection: close\r\n\r\n`,
    );
    let raw = '';
    client.on('data', (chunk: Buffer) => {
      raw += chunk.toString('latin1');
    });
    await once(client, 'close');
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toContain('more than one Host header');
  });

  it('serves an endpoint under /e/{appName}/ on a Host that names none: prefix stripped, X-Forwarded-Prefix set', async () => {
    const h = await startGateway();
    const endpoint = await routedToEcho(h, (req) =>
      JSON.stringify({ url: req.url, prefix: req.headers['x-forwarded-prefix'] ?? null }),
    );
    const gatewayHost = `127.0.0.1:${h.port}`;
    const { appName } = endpoint.spec;
    const viaPath = await get(h.port, gatewayHost, `/e/${appName}/v1/models?x=1`, {
      'x-forwarded-prefix': '/spoofed',
    });
    expect(viaPath.status).toBe(200);
    expect(JSON.parse(viaPath.body)).toEqual({ url: '/v1/models?x=1', prefix: `/e/${appName}` });
    // A Host that names an endpoint wins: its path is forwarded as it is.
    const viaHost = await get(h.port, hostOf(endpoint), `/e/${appName}/v1`);
    expect(JSON.parse(viaHost.body)).toEqual({ url: `/e/${appName}/v1`, prefix: null });
    const unknown = await get(h.port, gatewayHost, '/e/nobody/v1');
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body).message).toBe('no endpoint serves /e/nobody');
    const bare = await get(h.port, gatewayHost, '/v1');
    expect(JSON.parse(bare.body).message).toContain('/e/{appName}/');
  });

  it('sends a request naming a worker in X-Runpod-Worker-Id or X-Corral-Worker-Id to it (soft affinity)', async () => {
    const h = await startGateway();
    const workers = [await track(startWorker('w-1')), await track(startWorker('w-2'))];
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, workers);
    const host = hostOf(endpoint);
    // Light traffic stays on one worker; the header moves it to the other, whose id the answer names.
    const plain = (await get(h.port, host)).body;
    const other = plain === 'w-1' ? 'w-2' : 'w-1';
    expect((await get(h.port, host)).body).toBe(plain);
    const runpod = await get(h.port, host, '/work', { 'x-runpod-worker-id': other });
    expect(runpod).toMatchObject({ status: 200, body: other });
    expect(runpod.headers['x-runpod-worker-id']).toBe(other);
    expect((await get(h.port, host, '/work', { 'x-corral-worker-id': other })).body).toBe(other);
    // A worker that is not there: any worker serves it.
    expect((await get(h.port, host, '/work', { 'x-corral-worker-id': 'w-9' })).status).toBe(200);
  });

  it('keeps a strict request on its worker: it waits for a slot there, 404 when the worker is gone, 400 at the queue timeout', async () => {
    const stored = new Map([
      ['w-1', 'running'],
      ['w-3', 'frozen'],
      ['w-4', 'failed'],
    ] as const);
    const h = await startGateway({
      queueTimeoutMs: 1_000,
      findWorker: async (id) => {
        const state = stored.get(id as 'w-1');
        return state && { endpointId: endpoint.id, state };
      },
    });
    const workers = [await track(startWorker('w-1')), await track(startWorker('w-2'))];
    const endpoint = runningEndpoint(1);
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, workers);
    const host = hostOf(endpoint);
    const [w1] = workers as [TestWorker, TestWorker];
    const holding = get(h.port, host, '/hold', { 'x-corral-worker-id': 'strict w-1' });
    await w1.received(1);
    // w-1 is full: RunPod's header waits for it while w-2 is free, and a plain request goes to w-2 meanwhile.
    const waiting = get(h.port, host, '/work', { 'x-runpod-worker-id': 'strict w-1' });
    await h.whenQueued(1);
    // The autoscaler sees w-1 awaited, and no queue a new worker could serve.
    const signal = h.gateway.queueSignal(endpoint.id, () => true);
    expect(signal?.queueLength).toBe(0);
    expect(signal?.awaited?.('w-1')).toBe('strict');
    expect((await get(h.port, host)).body).toBe('w-2');
    w1.release();
    expect(await holding).toMatchObject({ status: 200, body: 'w-1' });
    const served = await waiting;
    expect(served).toMatchObject({ status: 200, body: 'w-1' });
    expect(served.headers['x-runpod-worker-id']).toBe('w-1');
    // A worker that does not exist, or failed: RunPod's affinity_worker_gone; soft with it: any worker serves.
    for (const gone of ['w-9', 'w-4']) {
      const answer = await get(h.port, host, '/work', { 'x-corral-worker-id': `strict-resume ${gone}` });
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 404, reason: 'AFFINITY_WORKER_GONE' });
      expect(JSON.parse(answer.body).message).toMatch(/^affinity_worker_gone: worker w-[49]/);
    }
    expect((await get(h.port, host, '/work', { 'x-corral-worker-id': 'w-9' })).status).toBe(200);
    // A frozen worker strict does not wake: the wait ends at the queue timeout with RunPod's 400.
    const frozen = get(h.port, host, '/work', { 'x-corral-worker-id': 'strict w-3' });
    await h.whenQueued(2);
    h.timers.advance(1_000);
    const timedOut = await frozen;
    expect(timedOut.status).toBe(400);
    expect(JSON.parse(timedOut.body)).toMatchObject({ reason: 'AFFINITY_TIMEOUT' });
    // A frozen worker removed while a strict-resume request waits for it (stopped for another endpoint's GPUs): 404
    // at the next routing change, not at the timeout.
    const resumed = get(h.port, host, '/work', { 'x-corral-worker-id': 'strict-resume w-3' });
    await h.whenQueued(3);
    h.routing.changed();
    await flushIo();
    stored.delete('w-3');
    h.routing.changed();
    expect((await resumed).status).toBe(404);
    // Its worker removed while a strict request waits for it: 404.
    const held = get(h.port, host, '/hold', { 'x-corral-worker-id': 'strict w-1' });
    await w1.received(3);
    const behind = get(h.port, host, '/work', { 'x-corral-worker-id': 'strict w-1' });
    await h.whenQueued(4);
    stored.delete('w-1');
    h.routing.workers.set(endpoint.id, [workers[1] as TestWorker]);
    h.routing.changed();
    const left = await behind;
    expect(left.status).toBe(404);
    w1.release();
    expect((await held).status).toBe(200);
  });

  it('takes no queue place for a strict request whose client left while its worker was looked up', async () => {
    let looked: () => void = () => {};
    const lookedUp = new Promise<void>((resolve) => {
      looked = resolve;
    });
    let answerLookup: () => void = () => {};
    const h = await startGateway({
      findWorker: () => {
        looked();
        return new Promise((resolve) => {
          answerLookup = () => resolve({ endpointId: endpoint.id, state: 'frozen' });
        });
      },
    });
    const endpoint = runningEndpoint(1);
    h.routing.endpoints.set(endpoint.id, endpoint);
    const req = request({
      host: '127.0.0.1',
      port: h.port,
      path: '/work',
      headers: { host: hostOf(endpoint), authorization: AUTHORIZATION, 'x-corral-worker-id': 'strict w-3' },
      agent: false,
    });
    req.on('error', () => {});
    req.end();
    await lookedUp;
    req.destroy();
    await h.whenClosed(1);
    answerLookup();
    await flushIo();
    expect(h.gateway.stats()[0]?.queueLength ?? 0).toBe(0);
  });

  it('never sends a strict request to another worker when its own cannot be reached: 502', async () => {
    const h = await startGateway();
    const w2 = await track(startWorker('w-2'));
    const endpoint = runningEndpoint(1);
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [{ id: 'w-1', address: await deadAddress() }, w2]);
    const answer = await get(h.port, hostOf(endpoint), '/work', { 'x-corral-worker-id': 'strict w-1' });
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body)).toMatchObject({
      reason: 'WORKER_ERROR',
      message: 'worker w-1 could not be reached (strict affinity)',
    });
    // Soft: the same request goes on to w-2.
    const soft = await get(h.port, hostOf(endpoint), '/work', { 'x-corral-worker-id': 'w-1' });
    expect(soft).toMatchObject({ status: 200, body: 'w-2' });
  });

  it('waits through the thaw of the frozen worker a strict-resume request names while others serve, and says so', async () => {
    const h = await startGateway({
      findWorker: async (id) => (id === 'w-3' ? { endpointId: endpoint.id, state: 'frozen' } : undefined),
    });
    const [w1, w3] = [await track(startWorker('w-1')), await track(startWorker('w-3'))];
    const endpoint = runningEndpoint(1);
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [w1]);
    const host = hostOf(endpoint);
    const waiting = get(h.port, host, '/work', { 'x-runpod-worker-id': 'strict-resume w-3' });
    await h.whenQueued(1);
    expect(h.gateway.queueSignal(endpoint.id, () => true)?.awaited?.('w-3')).toBe('resume');
    h.timers.advance(40);
    const wake = { tier: 'thaw' as const, phases: [{ name: 'thaw', ms: 15 }], at: h.timers.now };
    h.routing.workers.set(endpoint.id, [w1, { ...w3, wake }]);
    h.routing.changed();
    const answer = await waiting;
    expect(answer).toMatchObject({ status: 200, body: 'w-3' });
    expect(answer.headers['server-timing']).toBe('queue;dur=40, thaw;dur=15');
    expect(answer.headers['x-corral-cold-start-ms']).toBe('40');
  });

  it('proxies to a routable worker and says which worker answered and how long the request queued', async () => {
    const h = await startGateway();
    const worker = await track(startWorker('w-1'));
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    const answer = await get(h.port, hostOf(endpoint));
    expect(answer).toMatchObject({ status: 200, body: 'w-1' });
    expect(answer.headers['x-corral-worker']).toBe('w-1');
    // RunPod's affinity names too, where a client written for RunPod reads its worker's id.
    expect(answer.headers['x-corral-worker-id']).toBe('w-1');
    expect(answer.headers['x-runpod-worker-id']).toBe('w-1');
    expect(answer.headers['x-corral-queue-ms']).toBe('0');
    expect(answer.headers['x-corral-cold-start-ms']).toBeUndefined();
  });

  it('refuses a Content-Length over the limit with 413 before it takes a slot or reaches a worker', async () => {
    const h = await startGateway();
    const worker = await track(startWorker('w-1'));
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    const answer = await new Promise<Answer>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: h.port,
          method: 'POST',
          path: '/work',
          headers: { host: hostOf(endpoint), authorization: AUTHORIZATION, 'content-length': '2048' },
          agent: false,
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(16));
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({
      reason: 'BODY_TOO_LARGE',
      metadata: { limitBytes: 1024 },
    });
    expect(worker.maxInFlight).toBe(0);
  });

  it('answers 503 ENDPOINT_STOPPED for a stopped endpoint', async () => {
    const h = await startGateway();
    const endpoint: Endpoint = { ...runningEndpoint(), desired: 'stopped' };
    h.routing.endpoints.set(endpoint.id, endpoint);
    const answer = await get(h.port, hostOf(endpoint));
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).reason).toBe('ENDPOINT_STOPPED');
  });

  it('queues requests beyond the slots and never gives a worker more than maxConcurrent at once', async () => {
    const h = await startGateway();
    const worker = await track(startWorker('w-1'));
    const endpoint = runningEndpoint(2);
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    const pending = Array.from({ length: 6 }, () => get(h.port, hostOf(endpoint), '/hold'));
    // Two at the worker, four waiting; then each 200 ms the worker answers the two it holds.
    await Promise.all([worker.received(2), h.whenQueued(4)]);
    for (let round = 1; round <= 3; round++) {
      h.timers.advance(200);
      worker.release();
      if (round < 3) await worker.received(2 + 2 * round);
    }
    const answers = await Promise.all(pending);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(worker.maxInFlight).toBe(2);
    // Requests 3 and 4 wait for one round of 200 ms, requests 5 and 6 for two.
    const queued = answers.map((a) => Number(a.headers['x-corral-queue-ms']));
    expect(queued.sort((a, b) => a - b)).toEqual([0, 0, 200, 200, 400, 400]);
    // Each request that had to wait was signalled to the autoscaler.
    expect(h.queued).toEqual(Array(4).fill(endpoint.id));
  });

  it('serves an endpoint created since the last controller pass once a worker comes, as a cold start', async () => {
    const h = await startGateway();
    const endpoint = runningEndpoint();
    h.lookUp.answer = async (appName) => (appName === endpoint.spec.appName ? endpoint : undefined);
    const pending = get(h.port, hostOf(endpoint));
    await h.whenQueued(1);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    // The routing view is asked for a fresh look (the controller's pass), and the wait is signalled.
    expect(h.routing.refreshes).toBeGreaterThanOrEqual(1);
    expect(h.queued).toEqual([endpoint.id]);
    h.timers.advance(250);
    const worker = await track(startWorker('w-new'));
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    h.routing.changed();
    const answer = await pending;
    expect(answer).toMatchObject({ status: 200, body: 'w-new' });
    expect(answer.headers['x-corral-cold-start-ms']).toBe('250');
    expect(answer.headers['x-corral-queue-ms']).toBe('250');
    // No wake reported for its worker (another replica's, say): only what it waited.
    expect(answer.headers['server-timing']).toBe('queue;dur=250');
  });

  it('an answer that waited for a thaw says so in Server-Timing, and the wake is counted by tier', async () => {
    const registry = new Registry();
    const h = await startGateway({ registry });
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    const pending = get(h.port, hostOf(endpoint));
    await h.whenQueued(1);
    h.timers.advance(4);
    const worker = await track(startWorker('w-thawed'));
    const wake = { tier: 'thaw' as const, phases: [{ name: 'thaw', ms: 2.5 }], at: h.timers.now };
    h.routing.workers.set(endpoint.id, [Object.assign(worker, { wake })]);
    h.routing.changed();
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(answer.headers['server-timing']).toBe('queue;dur=4, thaw;dur=2.5');
    // A request that found it routable paid no wake: no Server-Timing.
    expect((await get(h.port, hostOf(endpoint))).headers['server-timing']).toBeUndefined();
    const text = await registry.metrics();
    expect(text).toMatch(
      new RegExp(`^corral_gateway_wake_seconds_count\\{endpoint="${endpoint.id}",tier="thaw"\\} 1$`, 'm'),
    );
    expect(h.metrics?.summary(endpoint.id)).toMatchObject({
      thaws: { count: 1, meanMs: 4 },
      coldStarts: { count: 0, meanMs: null },
    });
  });

  it('counts one cold start per wake, from the first waiting request to the first routable worker', async () => {
    const registry = new Registry();
    const h = await startGateway({ registry });
    const endpoint = runningEndpoint(2);
    h.routing.endpoints.set(endpoint.id, endpoint);
    const herd = Array.from({ length: 5 }, () => get(h.port, hostOf(endpoint)));
    await h.whenQueued(5);
    expect(h.gateway.stats()[0]?.queueLength).toBe(5);
    h.timers.advance(800);
    const worker = await track(startWorker('w-1'));
    h.routing.workers.set(endpoint.id, [worker]);
    h.routing.changed();
    const answers = await Promise.all(herd);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    // Every request that waited through the wake says how long it waited for it.
    expect(answers.map((a) => a.headers['x-corral-cold-start-ms'])).toEqual(Array(5).fill('800'));
    const coldStarts = async () => {
      const text = await registry.metrics();
      const count = new RegExp(
        `^corral_gateway_cold_start_seconds_count\\{endpoint="${endpoint.id}"\\} (\\d+)$`,
        'm',
      );
      const sum = new RegExp(
        `^corral_gateway_cold_start_seconds_sum\\{endpoint="${endpoint.id}"\\} ([\\d.]+)$`,
        'm',
      );
      return { count: Number(count.exec(text)?.[1]), sum: Number(sum.exec(text)?.[1]) };
    };
    expect(await coldStarts()).toEqual({ count: 1, sum: 0.8 });
    // Scaled to zero and woken again: a second cold start.
    h.routing.workers.set(endpoint.id, []);
    h.routing.changed();
    const again = get(h.port, hostOf(endpoint));
    await h.whenQueued(6);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    h.timers.advance(300);
    h.routing.workers.set(endpoint.id, [worker]);
    h.routing.changed();
    expect((await again).status).toBe(200);
    expect(await coldStarts()).toEqual({ count: 2, sum: 1.1 });
  });

  it('asks the store about an unknown host at most once a second, and again once the controller reports', async () => {
    const h = await startGateway();
    const asked: string[] = [];
    const created = runningEndpoint();
    let exists = false;
    h.lookUp.answer = async (appName) => {
      asked.push(appName);
      return exists && appName === created.spec.appName ? created : undefined;
    };
    const host = hostOf(created);
    const flood = await Promise.all(Array.from({ length: 20 }, () => get(h.port, host)));
    expect(flood.map((a) => a.status)).toEqual(Array(20).fill(404));
    for (let i = 0; i < 5; i++) expect((await get(h.port, host)).status).toBe(404);
    expect(asked).toHaveLength(1);
    h.timers.advance(999);
    await get(h.port, host);
    expect(asked).toHaveLength(1);
    h.timers.advance(1);
    await get(h.port, host);
    expect(asked).toHaveLength(2);
    // Created since: the controller's report after its creation clears the remembered "none".
    exists = true;
    h.routing.changed();
    const pending = get(h.port, host);
    // It waits once the store has been asked again.
    await h.whenQueued(1);
    expect(asked).toHaveLength(3);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    const worker = await track(startWorker('w-1'));
    h.routing.endpoints.set(created.id, created);
    h.routing.workers.set(created.id, [worker]);
    h.routing.changed();
    expect((await pending).status).toBe(200);
  });

  it('does not take an endpoint found in the store for deleted when a pass that predates it reports', async () => {
    // A queue timeout longer than the grace below, so that the orphan's wait is ended by a report, not by it.
    const h = await startGateway({ queueTimeoutMs: 60_000 });
    const [fresh, gone] = [runningEndpoint(), runningEndpoint()];
    h.lookUp.answer = async (appName) => [fresh, gone].find((e) => e.spec.appName === appName);
    const waiting = get(h.port, hostOf(fresh));
    await h.whenQueued(1);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    // A pass that read the endpoints before `fresh` was created ends now.
    h.routing.changed();
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    const worker = await track(startWorker('w-1'));
    h.routing.endpoints.set(fresh.id, fresh);
    h.routing.workers.set(fresh.id, [worker]);
    h.routing.changed();
    expect((await waiting).status).toBe(200);
    // One deleted before any pass saw it: taken for deleted once no pass has reported it for 10 s.
    const orphan = get(h.port, hostOf(gone));
    await h.whenQueued(2);
    expect(h.gateway.stats().find((s) => s.endpointId === gone.id)?.queueLength).toBe(1);
    h.timers.advance(10_000);
    h.routing.changed();
    expect(JSON.parse((await orphan).body)).toMatchObject({ code: 404, reason: 'ENDPOINT_NOT_FOUND' });
  });

  it('answers 503 ROUTING_UNAVAILABLE when the store cannot be asked about an unknown host', async () => {
    const h = await startGateway();
    h.lookUp.answer = async () => {
      throw new Error('connection refused');
    };
    const answer = await get(h.port, 'fresh.localhost');
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).reason).toBe('ROUTING_UNAVAILABLE');
    expect(h.warnings.map((w) => w.message)).toContain('endpoint lookup failed');
  });

  it('retries a request that never reached a worker on another one, and stops sending to the dead one', async () => {
    const h = await startGateway();
    const good = await track(startWorker('w-good'));
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    // The dead worker comes first: with equal load the dispatcher tries it first.
    h.routing.workers.set(endpoint.id, [{ id: 'w-dead', address: await deadAddress() }, good]);
    const first = await get(h.port, hostOf(endpoint));
    expect(first).toMatchObject({ status: 200, body: 'w-good' });
    expect(h.warnings).toContainEqual(
      expect.objectContaining({ fields: expect.objectContaining({ workerId: 'w-dead' }) }),
    );
    const later = await Promise.all(Array.from({ length: 4 }, () => get(h.port, hostOf(endpoint))));
    expect(later.map((a) => a.body)).toEqual(['w-good', 'w-good', 'w-good', 'w-good']);
  });

  it('answers 502 WORKER_ERROR when no worker can be reached in three attempts', async () => {
    const h = await startGateway();
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [
      { id: 'w-dead-1', address: await deadAddress() },
      { id: 'w-dead-2', address: await deadAddress() },
      { id: 'w-dead-3', address: await deadAddress() },
    ]);
    const answer = await get(h.port, hostOf(endpoint));
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body)).toMatchObject({ reason: 'WORKER_ERROR', metadata: { attempts: 3 } });
  });

  it('takes a queued request out of the queue when its client disconnects', async () => {
    const h = await startGateway();
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    const req = request({
      host: '127.0.0.1',
      port: h.port,
      path: '/work',
      headers: { host: hostOf(endpoint), authorization: AUTHORIZATION },
      agent: false,
    });
    req.on('error', () => {});
    req.end();
    await h.whenQueued(1);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    req.destroy();
    await h.whenClosed(1);
    expect(h.gateway.stats()[0]?.queueLength).toBe(0);
  });

  it('counts requests per endpoint on /metrics, and forgets a deleted endpoint', async () => {
    const registry = new Registry();
    const h = await startGateway({ registry });
    const worker = await track(startWorker('w-1'));
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    await get(h.port, hostOf(endpoint));
    await get(h.port, hostOf(endpoint));
    let text = await registry.metrics();
    expect(text).toContain(`corral_gateway_requests_total{endpoint="${endpoint.id}",status="200"} 2`);
    expect(text).toContain(`corral_gateway_request_duration_seconds_count{endpoint="${endpoint.id}"} 2`);
    expect(text).toContain(
      `corral_gateway_queue_wait_seconds_bucket{le="0.001",endpoint="${endpoint.id}"} 2`,
    );
    h.routing.endpoints.delete(endpoint.id);
    h.routing.workers.delete(endpoint.id);
    h.routing.changed();
    text = await registry.metrics();
    expect(text).not.toContain(endpoint.id);
  });

  it('counts what a stopped endpoint is refused, and forgets it once the endpoint is deleted', async () => {
    const registry = new Registry();
    const h = await startGateway({ registry });
    const endpoint: Endpoint = { ...runningEndpoint(), desired: 'stopped' };
    h.routing.endpoints.set(endpoint.id, endpoint);
    expect((await get(h.port, hostOf(endpoint))).status).toBe(503);
    expect(
      await sample(registry, `corral_gateway_requests_total{endpoint="${endpoint.id}",status="503"}`),
    ).toBe(1);
    h.routing.endpoints.delete(endpoint.id);
    h.routing.changed();
    expect(await registry.metrics()).not.toContain(endpoint.id);
  });

  it("awaitDrained resolves when the worker's requests end, or at the timeout", async () => {
    const h = await startGateway();
    const worker = await track(startWorker('w-1'));
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    await get(h.port, hostOf(endpoint)); // makes the endpoint's dispatcher
    const slow = get(h.port, hostOf(endpoint), '/hold');
    await worker.received(2);
    expect(h.gateway.workerLoad(endpoint.id, 'w-1').inFlight).toBe(1);
    // The timeout passes with the request still at the worker.
    const timedOut = h.gateway.awaitDrained(endpoint.id, 'w-1', 20);
    h.timers.advance(20);
    await timedOut;
    expect(h.gateway.workerLoad(endpoint.id, 'w-1').inFlight).toBe(1);
    // The request ends long before the timeout: no time passes.
    const drained = h.gateway.awaitDrained(endpoint.id, 'w-1', 10_000);
    worker.release();
    await drained;
    expect(h.gateway.workerLoad(endpoint.id, 'w-1')).toEqual({ requests: 2, inFlight: 0 });
    expect((await slow).status).toBe(200);
  });

  it.each([
    ['deleted', (h: Harness, endpoint: Endpoint) => h.routing.endpoints.delete(endpoint.id)],
    [
      'stopped',
      (h: Harness, endpoint: Endpoint) =>
        h.routing.endpoints.set(endpoint.id, { ...endpoint, desired: 'stopped' }),
    ],
  ])(
    'a request in flight when its endpoint is %s is drained: awaitDrained waits for it',
    async (_, leave) => {
      const h = await startGateway();
      const worker = await track(startWorker('w-1'));
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      h.routing.workers.set(endpoint.id, [worker]);
      const slow = get(h.port, hostOf(endpoint), '/hold');
      await worker.received(1);
      expect(h.gateway.workerLoad(endpoint.id, 'w-1').inFlight).toBe(1);
      leave(h, endpoint);
      h.routing.workers.delete(endpoint.id);
      h.routing.changed();
      let drained = false;
      const draining = h.gateway.awaitDrained(endpoint.id, 'w-1', 10_000).then(() => {
        drained = true;
      });
      await flushIo();
      expect(drained).toBe(false);
      worker.release();
      await draining;
      expect(await slow).toMatchObject({ status: 200, body: 'w-1' });
    },
  );

  it("keeps a connection pool only for workers it can still send to, and closes a departed worker's", async () => {
    const h = await startGateway();
    const [one, two] = [await track(startWorker('w-1')), await track(startWorker('w-2'))];
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [one]);
    await get(h.port, hostOf(endpoint));
    expect(h.pools.has(one.address)).toBe(true);
    h.routing.workers.set(endpoint.id, [two]);
    h.routing.changed();
    expect((await get(h.port, hostOf(endpoint))).body).toBe('w-2');
    expect(h.pools.has(one.address)).toBe(false);
    expect(h.pools.size).toBe(1);
    h.routing.endpoints.delete(endpoint.id);
    h.routing.workers.delete(endpoint.id);
    h.routing.changed();
    expect(h.pools.size).toBe(0);
  });

  it('records a client that leaves in flight or while queued as 499, with its latency', async () => {
    const registry = new Registry();
    const h = await startGateway({ registry });
    const worker = await track(startWorker('w-1'));
    const endpoint = runningEndpoint(1);
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    const load = () => h.gateway.stats()[0] ?? { inFlight: 0, queueLength: 0 };
    // Twice a client leaves while its request is at the worker; then one leaves while queued behind another.
    for (let i = 1; i <= 2; i++) {
      await abandon(
        h.port,
        hostOf(endpoint),
        '/hold',
        worker.received(i).then(() => expect(load().inFlight).toBe(1)),
      );
      // The gateway aborts the worker's request once it sees its client go, after freeing the slot.
      await worker.left(i);
      await flushIo();
      expect(load().inFlight).toBe(0);
    }
    const held = get(h.port, hostOf(endpoint), '/hold');
    await worker.received(3);
    expect(load().inFlight).toBe(1);
    await abandon(
      h.port,
      hostOf(endpoint),
      '/work',
      h.whenQueued(1).then(() => expect(load().queueLength).toBe(1)),
    );
    // The two clients gone before, then this one.
    await h.whenClosed(3);
    expect(load().queueLength).toBe(0);
    worker.release();
    expect((await held).status).toBe(200);
    const requests = (status: number) =>
      sample(registry, `corral_gateway_requests_total{endpoint="${endpoint.id}",status="${status}"}`);
    expect(await requests(499)).toBe(3);
    expect(await requests(200)).toBe(1);
    expect(
      await sample(registry, `corral_gateway_request_duration_seconds_count{endpoint="${endpoint.id}"}`),
    ).toBe(4);
  });

  it('records a gateway error with its real latency and queue wait', async () => {
    const registry = new Registry();
    const timers = new ManualTimers(1_000_000);
    const h = await startGateway({ registry, timers, queueTimeoutMs: 5_000 });
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    const answer = get(h.port, hostOf(endpoint));
    await h.whenQueued(1);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    timers.advance(5_000);
    expect((await answer).status).toBe(504);
    const series = (name: string) => sample(registry, `${name}{endpoint="${endpoint.id}"}`);
    expect(
      await sample(registry, `corral_gateway_requests_total{endpoint="${endpoint.id}",status="504"}`),
    ).toBe(1);
    expect(await series('corral_gateway_request_duration_seconds_sum')).toBe(5);
    expect(await series('corral_gateway_queue_wait_seconds_sum')).toBe(5);
  });

  it("puts X-Corral-Queue-Ms on the gateway's own errors for an endpoint, 0 where the request never queued", async () => {
    const timers = new ManualTimers(1_000_000);
    const h = await startGateway({ timers, queueTimeoutMs: 5_000 });
    expect((await get(h.port, 'nobody.localhost')).headers['x-corral-queue-ms']).toBeUndefined();
    const stopped: Endpoint = { ...runningEndpoint(), desired: 'stopped' };
    h.routing.endpoints.set(stopped.id, stopped);
    const refused = await get(h.port, hostOf(stopped));
    expect([refused.status, refused.headers['x-corral-queue-ms']]).toEqual([503, '0']);
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    const tooLarge = await get(h.port, hostOf(endpoint), '/work', { 'content-length': '4096' });
    expect([tooLarge.status, tooLarge.headers['x-corral-queue-ms']]).toEqual([413, '0']);
    const queued = Array.from({ length: 10 }, () => get(h.port, hostOf(endpoint)));
    const queueLength = () => h.gateway.stats().find((s) => s.endpointId === endpoint.id)?.queueLength;
    await h.whenQueued(10);
    expect(queueLength()).toBe(10);
    const full = await get(h.port, hostOf(endpoint));
    expect([full.status, full.headers['x-corral-queue-ms']]).toEqual([429, '0']);
    expect(full.headers['retry-after']).toBeDefined();
    timers.advance(5_000);
    for (const answer of await Promise.all(queued)) {
      expect([answer.status, answer.headers['x-corral-queue-ms']]).toEqual([504, '5000']);
    }
  });

  it('rejects queued requests with 503 NO_CAPACITY as soon as the status says the endpoint can never be placed', async () => {
    const timers = new ManualTimers(1_000_000);
    const h = await startGateway({ timers });
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    const queued = get(h.port, hostOf(endpoint));
    await h.whenQueued(1);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    const message = 'each worker needs 16 GPU(s); this server has 8 GPU(s) in all';
    h.routing.endpoints.set(endpoint.id, {
      ...endpoint,
      status: { state: 'failed', error: 'INSUFFICIENT_GPU', message },
    });
    h.routing.changed();
    // No time passes: the queue timeout is not what ends it.
    const answer = await queued;
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ reason: 'NO_CAPACITY', message });
  });

  it('with a placement rule, refuses and rejects at the first sight of an unplaceable spec, and queues again once it fits', async () => {
    const timers = new ManualTimers(1_000_000);
    const h = await startGateway({
      timers,
      neverPlaceable: (e) =>
        e.spec.workers.gpusPerWorker > 8 ? 'needs more GPUs than there are' : undefined,
    });
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    const queued = get(h.port, hostOf(endpoint));
    await h.whenQueued(1);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    // Updated to 16 GPUs per worker; its status still says what the last pass found.
    const huge: Endpoint = {
      ...endpoint,
      spec: { ...endpoint.spec, workers: { ...endpoint.spec.workers, gpusPerWorker: 16 } },
    };
    h.routing.endpoints.set(endpoint.id, huge);
    h.routing.changed();
    expect(JSON.parse((await queued).body)).toMatchObject({ code: 503, reason: 'NO_CAPACITY' });
    expect((await get(h.port, hostOf(endpoint))).status).toBe(503);
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.changed();
    const again = get(h.port, hostOf(endpoint));
    await h.whenQueued(2);
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    timers.advance(5_000);
    expect((await again).status).toBe(504);
  });

  it('answers 504 QUEUE_TIMEOUT when no slot frees within the queue timeout', async () => {
    const h = await startGateway({ queueTimeoutMs: 150 });
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    const pending = get(h.port, hostOf(endpoint));
    await h.whenQueued(1);
    h.timers.advance(149);
    await flushIo();
    expect(h.gateway.stats()[0]?.queueLength).toBe(1);
    h.timers.advance(1);
    const answer = await pending;
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body).reason).toBe('QUEUE_TIMEOUT');
  });

  it('a busy worker quarantined for a moment keeps its last busy time in the queue signal', async () => {
    const h = await startGateway({ timers: new ManualTimers(1_000_000) });
    const [busy, other] = [await track(startWorker('w-busy')), await track(startWorker('w-other'))];
    const endpoint = sampleEndpoint({
      patch: { workers: { minWorkers: 0, maxWorkers: 3, maxConcurrent: 1, idleTimeoutSeconds: 60 } },
    });
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [busy]);
    // w-busy has been running since t=0 and has just served a request.
    expect((await get(h.port, hostOf(endpoint))).body).toBe('w-busy');
    // One connection to it fails (a keep-alive race, say): the request goes to w-other, w-busy is quarantined.
    h.routing.workers.set(endpoint.id, [{ id: 'w-busy', address: await deadAddress() }, other]);
    h.routing.changed();
    expect((await get(h.port, hostOf(endpoint))).body).toBe('w-other');
    expect(h.warnings.map((w) => w.message)).toContain(
      'worker connection failed; no new requests to it for now',
    );
    const busySince = h.timers.now;
    h.timers.advance(10_000);
    // Its queue signal keeps the busy time it had before the quarantine (the autoscaler's idle clock), not none.
    const signal = h.gateway.queueSignal(endpoint.id, () => true);
    expect(signal?.lastBusyAt('w-busy')).toBe(busySince);
    expect(signal?.inFlight('w-busy')).toBe(0);
    // Once the controller no longer has it, it is forgotten.
    expect(h.gateway.queueSignal(endpoint.id, (id) => id !== 'w-busy')?.lastBusyAt('w-busy')).toBeUndefined();
  });

  describe('upgrades', () => {
    /** A raw client that has sent an upgrade request and reads whatever comes back. */
    async function upgradeClient(
      port: number,
      host: string,
      authorization: string | null = AUTHORIZATION,
      extraLines = '',
    ): Promise<{ socket: Socket; received: () => string; closed: Promise<unknown> }> {
      const authorizationLine = `${authorization === null ? '' : `Authorization: ${authorization}\r\n`}${extraLines}`;
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
      });
      socket.on('error', () => {});
      const closed = once(socket, 'close');
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: ${host}\r\n${authorizationLine}Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
      );
      return { socket, received: () => text, closed };
    }

    /** The whole answer to an upgrade, once the gateway has closed the connection. */
    async function upgradeAnswer(
      port: number,
      host: string,
      before?: () => Promise<void>,
      authorization: string | null = AUTHORIZATION,
      extraLines = '',
    ) {
      const client = await upgradeClient(port, host, authorization, extraLines);
      await before?.();
      await client.closed;
      const [head = '', body = ''] = client.received().split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => {
          const colon = line.indexOf(':');
          return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
        }),
      );
      return { statusLine, headers, body };
    }

    it('refuses in the JSON error format: unknown host 404, stopped endpoint 503, with X-Corral-Queue-Ms', async () => {
      const registry = new Registry();
      const h = await startGateway({ registry });
      const unknown = await upgradeAnswer(h.port, 'nobody.localhost');
      expect(unknown.statusLine).toBe('HTTP/1.1 404 Not Found');
      expect(unknown.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(unknown.headers['content-length'])).toBe(Buffer.byteLength(unknown.body));
      expect(unknown.headers['x-corral-queue-ms']).toBeUndefined();
      expect(JSON.parse(unknown.body)).toMatchObject({ code: 404, reason: 'ENDPOINT_NOT_FOUND' });

      const endpoint: Endpoint = { ...runningEndpoint(), desired: 'stopped' };
      h.routing.endpoints.set(endpoint.id, endpoint);
      const stopped = await upgradeAnswer(h.port, hostOf(endpoint));
      expect(stopped.statusLine).toBe('HTTP/1.1 503 Service Unavailable');
      expect(stopped.headers['x-corral-queue-ms']).toBe('0');
      expect(JSON.parse(stopped.body)).toMatchObject({ code: 503, reason: 'ENDPOINT_STOPPED' });
      const refused = `corral_gateway_requests_total{endpoint="${endpoint.id}",status="503"}`;
      expect(await sample(registry, refused)).toBe(1);
    });

    it('answers 504 QUEUE_TIMEOUT after the wait, with the wait in X-Corral-Queue-Ms, and counts it', async () => {
      const registry = new Registry();
      const timers = new ManualTimers(1_000_000);
      const h = await startGateway({ registry, timers, queueTimeoutMs: 5_000 });
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      const answer = await upgradeAnswer(h.port, hostOf(endpoint), async () => {
        await h.whenQueued(1);
        expect(h.gateway.stats()[0]?.queueLength).toBe(1);
        timers.advance(5_000);
      });
      expect(answer.statusLine).toBe('HTTP/1.1 504 Gateway Timeout');
      expect(answer.headers['x-corral-queue-ms']).toBe('5000');
      expect(JSON.parse(answer.body)).toMatchObject({ reason: 'QUEUE_TIMEOUT' });
      const timedOut = `corral_gateway_requests_total{endpoint="${endpoint.id}",status="504"}`;
      expect(await sample(registry, timedOut)).toBe(1);
      expect(await sample(registry, `corral_gateway_queue_wait_seconds_sum{endpoint="${endpoint.id}"}`)).toBe(
        5,
      );
    });

    it('an upgrade at an endpoint with no worker waits through the wake, which is counted once', async () => {
      const registry = new Registry();
      const h = await startGateway({ registry });
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      const worker = await track(startWorker('w-1'));
      const answer = upgradeAnswer(h.port, hostOf(endpoint), async () => {
        await h.whenQueued(1);
        expect(h.gateway.stats()[0]?.queueLength).toBe(1);
        h.timers.advance(400);
        h.routing.workers.set(endpoint.id, [worker]);
        h.routing.changed();
      });
      expect((await answer).statusLine).toBe('HTTP/1.1 101 Switching Protocols');
      const series = (name: string) => sample(registry, `${name}{endpoint="${endpoint.id}"}`);
      expect(await series('corral_gateway_cold_start_seconds_count')).toBe(1);
      expect(await series('corral_gateway_cold_start_seconds_sum')).toBe(0.4);
    });

    it("passes the worker's 101 with X-Corral-Worker and X-Corral-Queue-Ms, and counts it", async () => {
      const registry = new Registry();
      const h = await startGateway({ registry });
      const worker = await track(startWorker('w-1'));
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      h.routing.workers.set(endpoint.id, [worker]);
      const answer = await upgradeAnswer(h.port, hostOf(endpoint));
      expect(answer.statusLine).toBe('HTTP/1.1 101 Switching Protocols');
      expect(answer.headers).toMatchObject({
        'x-corral-worker': 'w-1',
        'x-corral-worker-id': 'w-1',
        'x-runpod-worker-id': 'w-1',
        'x-corral-queue-ms': '0',
      });
      const switched = `corral_gateway_requests_total{endpoint="${endpoint.id}",status="101"}`;
      expect(await sample(registry, switched)).toBe(1);
    });

    it('opens on the worker an affinity header names (soft), and refuses a strict one whose worker is gone: 404', async () => {
      const h = await startGateway({
        findWorker: async (id) =>
          id === 'w-1' || id === 'w-2' ? { endpointId: endpoint.id, state: 'running' } : undefined,
      });
      const workers = [await track(startWorker('w-1')), await track(startWorker('w-2'))];
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      h.routing.workers.set(endpoint.id, workers);
      const host = hostOf(endpoint);
      const plain = (await upgradeAnswer(h.port, host)).headers['x-corral-worker'];
      const other = plain === 'w-1' ? 'w-2' : 'w-1';
      for (const header of ['X-Corral-Worker-Id', 'X-Runpod-Worker-Id']) {
        const named = await upgradeAnswer(h.port, host, undefined, AUTHORIZATION, `${header}: ${other}\r\n`);
        expect(named.statusLine).toBe('HTTP/1.1 101 Switching Protocols');
        expect(named.headers['x-corral-worker']).toBe(other);
      }
      const strict = await upgradeAnswer(
        h.port,
        host,
        undefined,
        AUTHORIZATION,
        `X-Corral-Worker-Id: strict ${other}\r\n`,
      );
      expect(strict.headers['x-corral-worker']).toBe(other);
      const gone = await upgradeAnswer(
        h.port,
        host,
        undefined,
        AUTHORIZATION,
        'X-Corral-Worker-Id: strict w-9\r\n',
      );
      expect(gone.statusLine).toBe('HTTP/1.1 404 Not Found');
      expect(JSON.parse(gone.body)).toMatchObject({ reason: 'AFFINITY_WORKER_GONE' });
    });

    it('survives a client that resets its upgrade while queued, and takes it out of the queue', async () => {
      const h = await startGateway();
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      const client = await upgradeClient(h.port, hostOf(endpoint));
      await h.whenQueued(1);
      expect(h.gateway.stats()[0]?.queueLength).toBe(1);
      client.socket.resetAndDestroy();
      await h.whenClosed(1);
      expect(h.gateway.stats()[0]?.queueLength).toBe(0);
      // The gateway still serves.
      expect((await get(h.port, 'nobody.localhost')).status).toBe(404);
    });

    it('survives a reset while the endpoint is looked up, and never queues the departed client', async () => {
      const registry = new Registry();
      const h = await startGateway({ registry });
      const endpoint = runningEndpoint();
      let answer: ((value: Endpoint | undefined) => void) | undefined;
      let lookingUp: () => void = () => {};
      const asked = new Promise<void>((resolve) => {
        lookingUp = resolve;
      });
      h.lookUp.answer = async (appName) =>
        appName !== endpoint.spec.appName
          ? undefined
          : new Promise((resolve) => {
              answer = resolve;
              lookingUp();
            });
      const client = await upgradeClient(h.port, hostOf(endpoint));
      await asked;
      client.socket.resetAndDestroy();
      // The gateway has seen the reset before the lookup answers...
      await h.whenClosed(1);
      expect(await h.connections()).toBe(0);
      answer?.(endpoint);
      // ...and, once it has, counts the upgrade as a client that left instead of queueing it.
      await flushIo();
      const gone = `corral_gateway_requests_total{endpoint="${endpoint.id}",status="499"}`;
      expect(await sample(registry, gone)).toBe(1);
      expect(h.gateway.stats().map((s) => s.queueLength)).not.toContain(1);
      expect((await get(h.port, 'nobody.localhost')).status).toBe(404);
    });

    it('survives a reset while queued for a retry after an unreachable worker', async () => {
      const h = await startGateway();
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      h.routing.workers.set(endpoint.id, [{ id: 'w-dead', address: await deadAddress() }]);
      const client = await upgradeClient(h.port, hostOf(endpoint));
      await h.whenQueued(1);
      expect(h.gateway.stats()[0]?.queueLength).toBe(1);
      client.socket.resetAndDestroy();
      await h.whenClosed(1);
      expect(h.gateway.stats()[0]?.queueLength).toBe(0);
      expect((await get(h.port, 'nobody.localhost')).status).toBe(404);
    });

    it('refuses an upgrade without a key with 401 UNAUTHENTICATED before any worker, and passes one with the key without it', async () => {
      const h = await startGateway();
      let seen: string | null | undefined;
      const echo = createServer();
      echo.on('upgrade', (req: IncomingMessage, socket: Socket) => {
        seen = req.headers.authorization ?? null;
        socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      });
      const port = await listen(echo);
      cleanups.push(() => {
        echo.closeAllConnections();
        echo.close();
      });
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      h.routing.workers.set(endpoint.id, [{ id: 'w-ws', address: { host: '127.0.0.1', port } }]);
      const keyless = await upgradeAnswer(h.port, hostOf(endpoint), undefined, null);
      expect(keyless.statusLine).toBe('HTTP/1.1 401 Unauthorized');
      expect(keyless.headers['www-authenticate']).toBe('Bearer');
      expect(JSON.parse(keyless.body)).toMatchObject({ code: 401, reason: 'UNAUTHENTICATED' });
      expect(seen).toBeUndefined();
      const keyed = await upgradeAnswer(h.port, hostOf(endpoint));
      expect(keyed.statusLine).toBe('HTTP/1.1 101 Switching Protocols');
      expect(seen).toBeNull();
    });

    // The lease-and-retry loop is one (lease-attempts.ts): an upgrade retries as a request does (above).
    it('tries another worker when one cannot be reached, and answers 502 WORKER_ERROR after three, as a request does', async () => {
      const h = await startGateway();
      const accepting = createServer();
      accepting.on('upgrade', (_req: IncomingMessage, socket: Socket) => {
        socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      });
      const port = await listen(accepting);
      cleanups.push(() => {
        accepting.closeAllConnections();
        accepting.close();
      });
      const endpoint = runningEndpoint();
      h.routing.endpoints.set(endpoint.id, endpoint);
      h.routing.workers.set(endpoint.id, [
        { id: 'w-dead-1', address: await deadAddress() },
        { id: 'w-dead-2', address: await deadAddress() },
        { id: 'w-live', address: { host: '127.0.0.1', port } },
      ]);
      const served = await upgradeAnswer(h.port, hostOf(endpoint));
      expect(served.statusLine).toBe('HTTP/1.1 101 Switching Protocols');
      expect(served.headers['x-corral-worker']).toBe('w-live');
      const dead = runningEndpoint();
      h.routing.endpoints.set(dead.id, dead);
      h.routing.workers.set(dead.id, [
        { id: 'w-dead-3', address: await deadAddress() },
        { id: 'w-dead-4', address: await deadAddress() },
        { id: 'w-dead-5', address: await deadAddress() },
      ]);
      const unreached = await upgradeAnswer(h.port, hostOf(dead));
      expect(unreached.statusLine).toBe('HTTP/1.1 502 Bad Gateway');
      expect(JSON.parse(unreached.body)).toMatchObject({ reason: 'WORKER_ERROR', metadata: { attempts: 3 } });
    });
  });
});

describe('Gateway: keys on endpoint URLs', () => {
  /** A running endpoint whose worker answers with the Authorization header that reached it (null: none). */
  const authorizationEcho = (h: Harness) =>
    routedToEcho(h, (req) => JSON.stringify(req.headers.authorization ?? null));

  it('answers 401 UNAUTHENTICATED with WWW-Authenticate: Bearer to a request without a key, before any worker', async () => {
    const h = await startGateway();
    const worker = await track(startWorker('w-1'));
    const endpoint = runningEndpoint();
    h.routing.endpoints.set(endpoint.id, endpoint);
    h.routing.workers.set(endpoint.id, [worker]);
    for (const path of ['/work', `/e/${endpoint.spec.appName}/work`]) {
      const host = path.startsWith('/e/') ? `127.0.0.1:${h.port}` : hostOf(endpoint);
      const answer = await get(h.port, host, path, { authorization: undefined });
      expect(answer.status).toBe(401);
      expect(answer.headers['www-authenticate']).toBe('Bearer');
      expect(JSON.parse(answer.body)).toMatchObject({ code: 401, reason: 'UNAUTHENTICATED' });
    }
    const empty = await get(h.port, hostOf(endpoint), '/work', { authorization: 'Bearer ' });
    expect(empty.status).toBe(401);
    expect(worker.maxInFlight).toBe(0);
  });

  it("answers 401 to another owner's key, an unknown key and an invoke key of another endpoint; 200 to the owner's, an admin's and the endpoint's invoke key", async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    h.keys.set('sk-owner-b', { ownerId: 'owner-b', admin: false });
    h.keys.set('sk-admin-b', { ownerId: 'owner-b', admin: true });
    h.keys.set('ik-this', { ownerId: 'owner-a', admin: false, endpointId: endpoint.id });
    h.keys.set('ik-other', { ownerId: 'owner-a', admin: false, endpointId: 'ep-other' });
    const status = async (key: string) =>
      (await get(h.port, hostOf(endpoint), '/work', { authorization: `Bearer ${key}` })).status;
    expect(await status('sk-owner-b')).toBe(401);
    expect(await status('sk-nobody')).toBe(401);
    expect(await status('ik-other')).toBe(401);
    expect(await status(OWNER_KEY)).toBe(200);
    expect(await status('sk-admin-b')).toBe(200);
    expect(await status('ik-this')).toBe(200);
    // A bare key (no "Bearer "), as some clients send it, is read as the API reads it.
    expect((await get(h.port, hostOf(endpoint), '/work', { authorization: OWNER_KEY })).status).toBe(200);
    const wrong = await get(h.port, hostOf(endpoint), '/work', { authorization: 'Bearer sk-owner-b' });
    expect(JSON.parse(wrong.body).message).toBe("the key is not one of the endpoint's owner");
  });

  it('never hands the Authorization header to the worker', async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    h.keys.set('ik-this', { ownerId: 'owner-a', admin: false, endpointId: endpoint.id });
    const viaHost = await get(h.port, hostOf(endpoint));
    expect([viaHost.status, viaHost.body]).toEqual([200, 'null']);
    const viaPath = await get(h.port, `127.0.0.1:${h.port}`, `/e/${endpoint.spec.appName}/work`, {
      authorization: 'Bearer ik-this',
    });
    expect([viaPath.status, viaPath.body]).toEqual([200, 'null']);
  });

  it("leaves the incoming request as it came: the check reads the key, and the worker's headers leave it out", async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    const server = createServer();
    let seen: IncomingMessage | undefined;
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      seen = req;
      h.gateway.handleRequest(req, res);
    });
    const port = await listen(server);
    cleanups.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const answer = await get(port, hostOf(endpoint));
    expect([answer.status, answer.body]).toEqual([200, 'null']);
    expect(seen?.headers.authorization).toBe(AUTHORIZATION);
    expect(seen?.rawHeaders).toContain(AUTHORIZATION);
  });

  it('refuses two Authorization headers', async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    const client = connect(h.port, '127.0.0.1');
    client.write(
      `GET /work HTTP/1.1\r\nHost: ${hostOf(endpoint)}\r\nAuthorization: ${AUTHORIZATION}\r\nAuthorization: Bearer x\r\nConnection: close\r\n\r\n`,
    );
    let raw = '';
    client.on('data', (chunk: Buffer) => {
      raw += chunk.toString('latin1');
    });
    await once(client, 'close');
    expect(raw).toMatch(/^HTTP\/1\.1 401 /);
    expect(raw).toContain('more than one Authorization header');
  });

  it('asks the store about a key once per cache period, so a revoked key is refused once its check expires', async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    h.keys.set('ik-this', { ownerId: 'owner-a', admin: false, endpointId: endpoint.id });
    const call = async () =>
      (await get(h.port, hostOf(endpoint), '/work', { authorization: 'Bearer ik-this' })).status;
    expect(await Promise.all([call(), call(), call()])).toEqual([200, 200, 200]);
    expect(await call()).toBe(200);
    expect(h.keyQueries()).toBe(1);
    h.keys.delete('ik-this');
    h.timers.advance(KEY_CACHE_TTL_MS - 1);
    expect(await call()).toBe(200);
    h.timers.advance(1);
    expect(await call()).toBe(401);
    expect(h.keyQueries()).toBe(2);
    // A wrong key is remembered too: a flood of it does not query the store once per request.
    expect(await call()).toBe(401);
    expect(h.keyQueries()).toBe(2);
  });

  it('answers 503 ROUTING_UNAVAILABLE when the store cannot check the key, and asks again next time', async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    h.keyStore.answer = async () => {
      throw new Error('database is down');
    };
    const down = await get(h.port, hostOf(endpoint));
    expect(down.status).toBe(503);
    expect(JSON.parse(down.body)).toMatchObject({ reason: 'ROUTING_UNAVAILABLE' });
    h.keyStore.answer = async (key) => h.keys.get(key);
    expect((await get(h.port, hostOf(endpoint))).status).toBe(200);
  });

  it("keeps a key's last answer while the store cannot check it again (PostgreSQL lost), and asks again once it can", async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    h.keys.set('ik-this', { ownerId: 'owner-a', admin: false, endpointId: endpoint.id });
    const call = async (key: string) =>
      (await get(h.port, hostOf(endpoint), '/work', { authorization: `Bearer ${key}` })).status;
    expect(await call('ik-this')).toBe(200);
    expect(await call('sk-nobody')).toBe(401);
    h.keyStore.answer = async () => {
      throw new Error('database is down');
    };
    h.timers.advance(KEY_CACHE_TTL_MS * 3);
    // Known keys keep their answers, allowed or refused; a key never checked cannot be served.
    expect(await call('ik-this')).toBe(200);
    expect(await call('sk-nobody')).toBe(401);
    expect(await call('ik-never-seen')).toBe(503);
    // Back: the expired check is asked again, and a key revoked meanwhile is refused.
    h.keys.delete('ik-this');
    h.keyStore.answer = async (key) => h.keys.get(key);
    expect(await call('ik-this')).toBe(401);
  });

  it("waits at most STALE_CHECK_WAIT_MS for a store that hangs (a network cut) before a key's last answer stands", async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    h.keys.set('ik-this', { ownerId: 'owner-a', admin: false, endpointId: endpoint.id });
    const call = (key: string) => get(h.port, hostOf(endpoint), '/work', { authorization: `Bearer ${key}` });
    expect((await call('ik-this')).status).toBe(200);
    let asked: () => void = () => undefined;
    const askedAgain = new Promise<void>((resolve) => {
      asked = resolve;
    });
    h.keyStore.answer = () => {
      asked();
      return new Promise(() => undefined);
    };
    h.timers.advance(KEY_CACHE_TTL_MS);
    let answered: number | undefined;
    const waiting = call('ik-this').then((answer) => {
      answered = answer.status;
    });
    await askedAgain;
    expect(h.keyQueries()).toBe(2);
    h.timers.advance(STALE_CHECK_WAIT_MS - 1);
    // Turns of the event loop, not time: an answer already written would have been read by now.
    await loopTurns(20);
    expect(answered).toBeUndefined();
    h.timers.advance(1);
    await waiting;
    expect(answered).toBe(200);
  });

  it('serves a public endpoint without a key; its own Authorization passes through, a Corral key does not', async () => {
    const h = await startGateway();
    const endpoint = await authorizationEcho(h);
    endpoint.spec.public = true;
    const keyless = await get(h.port, hostOf(endpoint), '/work', { authorization: undefined });
    expect([keyless.status, keyless.body]).toEqual([200, 'null']);
    const own = await get(h.port, hostOf(endpoint), '/work', { authorization: 'Bearer app-token' });
    expect([own.status, own.body]).toEqual([200, '"Bearer app-token"']);
    const corral = await get(h.port, hostOf(endpoint), '/work', {
      authorization: 'Bearer ik_abcdefghijkl_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345',
    });
    expect([corral.status, corral.body]).toEqual([200, 'null']);
    expect(h.keyQueries()).toBe(0);
  });
});

describe('Gateway: no Corral key reaches a worker', () => {
  const SK = 'sk_ownera000000_ownerAkeyOwnerAkeyOwnerAkeyOwnerA';
  const IK = 'ik_abcdefghijkl_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345';

  /** The Authorization values a request or upgrade reached the worker with, as its raw headers had them. */
  const authorizations = (req: IncomingMessage) =>
    req.rawHeaders.filter((_, i, raw) => i % 2 === 1 && raw[i - 1]?.toLowerCase() === 'authorization');

  /** An endpoint whose worker answers requests and upgrades with the Authorization values that reached it. */
  async function rawEcho(h: Harness, isPublic: boolean): Promise<{ endpoint: Endpoint; seen: string[][] }> {
    const seen: string[][] = [];
    const endpoint = await routedToEcho(
      h,
      (req) => {
        seen.push(authorizations(req));
        return JSON.stringify(authorizations(req));
      },
      (req) => seen.push(authorizations(req)),
    );
    endpoint.spec.public = isPublic;
    return { endpoint, seen };
  }

  /** Sends `lines` (header lines) in a request or an upgrade, written as is; resolves with the whole answer. */
  async function exchange(port: number, host: string, lines: string[], upgrade = false): Promise<string> {
    const client = connect(port, '127.0.0.1');
    let text = '';
    client.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    client.on('error', () => {});
    const closed = once(client, 'close');
    const upgrading = upgrade ? 'Connection: Upgrade\r\nUpgrade: websocket\r\n' : 'Connection: close\r\n';
    client.write(
      `GET /work HTTP/1.1\r\nHost: ${host}\r\n${lines.map((l) => `${l}\r\n`).join('')}${upgrading}\r\n`,
    );
    await closed;
    return text;
  }

  /** Every shape of a Corral key in Authorization seen in the attack: each is taken off whole. */
  const SHAPES: [string, string[]][] = [
    ['an API key then an invoke key', [`Authorization: Bearer ${SK}`, `Authorization: Bearer ${IK}`]],
    ['two credentials in one value', [`Authorization: Bearer ${SK}, Bearer x`]],
    ['a raw key', [`Authorization: ${IK}`]],
    ['other cases', [`AUTHORIZATION: BEARER ${SK}`, `authorization: bearer ${IK.toUpperCase()}`]],
    ['a key behind a value of its own', [`Authorization: Bearer x`, `Authorization: Basic ${SK}`]],
  ];

  it.each(SHAPES)(
    'a public endpoint: %s never reaches the worker, by request or upgrade',
    async (_, lines) => {
      const h = await startGateway();
      const { endpoint, seen } = await rawEcho(h, true);
      const answer = await exchange(h.port, hostOf(endpoint), lines);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      const upgraded = await exchange(h.port, hostOf(endpoint), lines, true);
      expect(upgraded).toMatch(/^HTTP\/1\.1 101 /);
      expect(seen).toHaveLength(2);
      for (const values of seen) {
        expect(values.filter((value) => /(sk|ik)_[a-z0-9]{12}_/i.test(value))).toEqual([]);
      }
      expect(h.keyQueries()).toBe(0);
    },
  );

  it("a public endpoint's worker gets the Authorization values that hold no Corral key, in order", async () => {
    const h = await startGateway();
    const { endpoint, seen } = await rawEcho(h, true);
    await exchange(h.port, hostOf(endpoint), [
      'Authorization: Bearer app-token',
      `Authorization: Bearer ${SK}`,
      'Authorization: Basic dXNlcjpwYXNz',
    ]);
    expect(seen).toEqual([['Bearer app-token', 'Basic dXNlcjpwYXNz']]);
  });

  it.each(SHAPES)(
    'an endpoint with keys: %s is refused or served, never seen by the worker',
    async (_, lines) => {
      const h = await startGateway();
      const { endpoint, seen } = await rawEcho(h, false);
      h.keys.set(IK, { ownerId: 'owner-a', admin: false, endpointId: endpoint.id });
      await exchange(h.port, hostOf(endpoint), lines);
      await exchange(h.port, hostOf(endpoint), lines, true);
      for (const values of seen) expect(values).toEqual([]);
    },
  );
});
