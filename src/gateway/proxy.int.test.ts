import { createHash } from 'node:crypto';
import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { WorkerPools } from './pools.js';
import { type ProxyOutcome, proxyRequest } from './proxy.js';

// --- the worker: one node:http server with a route per behaviour -------------------------------------------------

interface UpstreamEvents {
  /** Resolved when a /hang request's connection closes (the gateway aborted it). */
  hangClosed: Promise<number> | undefined;
  /** Bytes /slow-read has received so far. */
  slowReadBytes: number;
  /** Lets /slow-read start reading. */
  releaseSlowRead: (() => void) | undefined;
  /** Bytes /big-response has written and whether its last write was refused (backpressure). */
  bigWritten: number;
}

const events: UpstreamEvents = {
  hangClosed: undefined,
  slowReadBytes: 0,
  releaseSlowRead: undefined,
  bigWritten: 0,
};

function upstreamHandler(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://worker');
  switch (url.pathname) {
    case '/headers': {
      res.setHeader('Content-Type', 'application/json');
      res.setHeader('X-Up-Secret', 'secret');
      res.setHeader('Connection', 'X-Up-Secret');
      res.setHeader('Proxy-Authenticate', 'Basic');
      res.setHeader('Upgrade', 'h2c');
      res.setHeader('Set-Cookie', ['a=1', 'b=2']);
      res.setHeader('X-Corral-Worker', 'forged');
      res.end(JSON.stringify({ headers: req.headers, method: req.method, url: req.url }));
      return;
    }
    case '/echo':
      res.writeHead(200, { 'Content-Type': req.headers['content-type'] ?? 'application/octet-stream' });
      req.pipe(res);
      return;
    case '/count': {
      const hash = createHash('sha256');
      let bytes = 0;
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        hash.update(chunk);
      });
      req.on('end', () => res.end(JSON.stringify({ bytes, sha256: hash.digest('hex') })));
      return;
    }
    case '/sse': {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      res.flushHeaders(); // node:http would otherwise hold them until the first event
      let n = 0;
      const tick = setInterval(() => {
        res.write(`id: ${n}\ndata: event ${n}\n\n`);
        n += 1;
        if (n === 10) {
          clearInterval(tick);
          res.end();
        }
      }, 50);
      res.on('close', () => clearInterval(tick));
      return;
    }
    case '/slow': {
      const timer = setTimeout(() => res.end('late'), Number(url.searchParams.get('ms') ?? 1000));
      res.on('close', () => clearTimeout(timer));
      return;
    }
    case '/hang': {
      const started = Date.now();
      events.hangClosed = new Promise((resolve) => res.on('close', () => resolve(Date.now() - started)));
      if (url.searchParams.has('partial')) res.write('partial');
      return;
    }
    case '/die-before':
      req.socket.destroy();
      return;
    case '/die-mid': {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('first part;');
      setTimeout(() => req.socket.destroy(), 50);
      return;
    }
    case '/slow-read': {
      events.slowReadBytes = 0;
      req.pause();
      events.releaseSlowRead = () => {
        req.on('data', (chunk: Buffer) => {
          events.slowReadBytes += chunk.length;
        });
        req.resume();
      };
      req.on('end', () => res.end(JSON.stringify({ bytes: events.slowReadBytes })));
      return;
    }
    case '/big-response': {
      const total = Number(url.searchParams.get('bytes'));
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      events.bigWritten = 0;
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(total) });
      const pump = () => {
        while (events.bigWritten < total) {
          const piece = chunk.subarray(0, Math.min(chunk.length, total - events.bigWritten));
          events.bigWritten += piece.length;
          if (!res.write(piece)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
      return;
    }
    default:
      res.writeHead(404).end();
  }
}

// --- the gateway under test: node:http + proxyRequest, retrying `not-sent` on the next target ---------------------

interface GatewayConfig {
  targets: string[];
  requestTimeoutMs: number;
  bodyLimitBytes?: number;
}

let upstream: Server;
let upstreamAddress: string;
let deadAddress: string;
let gateway: Server;
let gatewayPort: number;
let pools: WorkerPools;
let config: GatewayConfig;
let outcomes: ProxyOutcome[];
let outcomeWaiters: ((outcome: ProxyOutcome) => void)[] = [];

function nextOutcome(): Promise<ProxyOutcome> {
  return new Promise((resolve) => outcomeWaiters.push(resolve));
}

async function gatewayHandler(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let outcome: ProxyOutcome = 'not-sent';
  for (const [index, address] of config.targets.entries()) {
    outcome = await proxyRequest({
      req,
      res,
      pool: pools.get(address, 4),
      target: { id: `w${index}` },
      requestTimeoutMs: config.requestTimeoutMs,
      responseHeaders: { 'X-Corral-Worker': `w${index}`, 'X-Corral-Queue-Ms': '0' },
      bodyLimitBytes: config.bodyLimitBytes,
    });
    if (outcome !== 'not-sent') break;
  }
  if (outcome === 'not-sent') res.writeHead(503).end('no worker reachable');
  outcomes.push(outcome);
  for (const waiter of outcomeWaiters.splice(0)) waiter(outcome);
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  upstream = createServer(upstreamHandler);
  upstreamAddress = `127.0.0.1:${await listen(upstream)}`;
  const dead = createServer();
  deadAddress = `127.0.0.1:${await listen(dead)}`;
  dead.close();
  pools = new WorkerPools({ keepAliveTimeoutMs: 1000, connectTimeoutMs: 1000 });
  gateway = createServer((req, res) => {
    void gatewayHandler(req, res);
  });
  gatewayPort = await listen(gateway);
});

afterEach(() => {
  outcomeWaiters = [];
});

afterAll(async () => {
  await pools.close(1000);
  gateway.closeAllConnections();
  upstream.closeAllConnections();
  await Promise.all([
    new Promise((resolve) => gateway.close(resolve)),
    new Promise((resolve) => upstream.close(resolve)),
  ]);
});

function configure(overrides: Partial<GatewayConfig> = {}): void {
  config = { targets: [upstreamAddress], requestTimeoutMs: 5000, ...overrides };
  outcomes = [];
}

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  complete: boolean;
}

/** One request through the gateway with node:http (no keep-alive), resolving even when the response aborts. */
function call(
  method: string,
  path: string,
  options: { headers?: Record<string, string | string[]>; body?: Buffer | Readable } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: gatewayPort,
        method,
        path,
        headers: { Host: `app.localhost:${gatewayPort}`, ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const done = () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: Buffer.concat(chunks),
            complete: res.complete,
          });
        res.on('error', () => undefined);
        res.on('close', done);
      },
    );
    req.on('error', reject);
    if (options.body instanceof Readable) options.body.pipe(req);
    else req.end(options.body);
  });
}

const json = (reply: Reply) => JSON.parse(reply.body.toString('utf8'));

describe('proxyRequest', () => {
  it('proxies a GET and passes the status, headers and body', async () => {
    configure();
    const reply = await call('GET', '/headers?x=1');
    expect(reply.status).toBe(200);
    expect(json(reply)).toMatchObject({ method: 'GET', url: '/headers?x=1' });
    expect(reply.headers['x-corral-worker']).toBe('w0');
    expect(reply.headers['x-corral-queue-ms']).toBe('0');
    expect(outcomes).toEqual(['ok']);
  });

  it('echoes a POST body', async () => {
    configure();
    const body = Buffer.from(JSON.stringify({ hello: 'world', n: [1, 2, 3] }));
    const reply = await call('POST', '/echo', { headers: { 'Content-Type': 'application/json' }, body });
    expect(reply.status).toBe(200);
    expect(reply.body.equals(body)).toBe(true);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(outcomes).toEqual(['ok']);
  });

  it('echoes a chunked POST body and an empty one', async () => {
    configure();
    const chunked = await call('POST', '/echo', { body: Readable.from(['a', 'bc', 'def']) });
    expect(chunked.body.toString()).toBe('abcdef');
    const empty = await call('POST', '/count', { body: Buffer.alloc(0) });
    expect(json(empty)).toMatchObject({ bytes: 0 });
  });

  it('strips hop-by-hop headers both ways and sets X-Forwarded-*', async () => {
    configure();
    const reply = await call('GET', '/headers', {
      headers: {
        Connection: 'keep-alive, X-Secret',
        'X-Secret': 'do not pass',
        'Keep-Alive': 'timeout=5',
        TE: 'trailers',
        'Proxy-Authorization': 'Basic eA==',
        'X-Forwarded-For': '203.0.113.7',
        'X-Forwarded-Proto': 'https',
        'X-Custom': 'kept',
      },
    });
    const seen = json(reply).headers as IncomingHttpHeaders;
    expect(seen['x-secret']).toBeUndefined();
    expect(seen['keep-alive']).toBeUndefined();
    expect(seen.te).toBeUndefined();
    expect(seen['proxy-authorization']).toBeUndefined();
    expect(seen['x-custom']).toBe('kept');
    expect(seen['x-forwarded-for']).toMatch(/^203\.0\.113\.7, (::ffff:)?127\.0\.0\.1$/);
    expect(seen['x-forwarded-proto']).toBe('http');
    expect(seen['x-forwarded-host']).toBe(`app.localhost:${gatewayPort}`);
    expect(seen.host).toBe(upstreamAddress);

    expect(reply.headers['x-up-secret']).toBeUndefined();
    expect(reply.headers['proxy-authenticate']).toBeUndefined();
    expect(reply.headers.upgrade).toBeUndefined();
    expect(reply.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(reply.headers['x-corral-worker']).toBe('w0');
    expect(reply.rawHeaders.filter((name) => name.toLowerCase() === 'x-corral-worker')).toHaveLength(1);
  });

  it('passes SSE events through one by one, as they are produced', async () => {
    configure();
    const started = Date.now();
    const arrivals: { at: number; text: string }[] = [];
    let headersAt = 0;
    await new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: gatewayPort, path: '/sse', headers: { Accept: 'text/event-stream' } },
        (res) => {
          headersAt = Date.now() - started;
          expect(res.headers['content-type']).toBe('text/event-stream');
          res.setEncoding('utf8');
          res.on('data', (text: string) => arrivals.push({ at: Date.now() - started, text }));
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
    // Headers as soon as the worker sends them, not held back until the first event (50 ms later).
    const first = arrivals[0]?.at ?? 0;
    expect(first - headersAt).toBeGreaterThan(10);
    // Each event when the worker writes it: one arrival per event, spread over ~450 ms, not bunched at the end.
    const eventTimes = arrivals.flatMap((a) => (a.text.match(/^data: /gm) ?? []).map(() => a.at));
    expect(eventTimes).toHaveLength(10);
    const gaps = eventTimes.slice(1).map((at, i) => at - (eventTimes[i] ?? 0));
    expect(gaps.filter((gap) => gap > 20).length).toBeGreaterThanOrEqual(8); // one may coalesce on a busy box
    expect((eventTimes[9] ?? 0) - (eventTimes[0] ?? 0)).toBeGreaterThan(350);
  });

  it('streams a 20 MB request body to the worker intact', async () => {
    configure();
    const total = 20 * 1024 * 1024;
    const hash = createHash('sha256');
    const chunks = (function* () {
      const chunk = Buffer.alloc(256 * 1024);
      for (let sent = 0; sent < total; sent += chunk.length) {
        chunk.fill(sent % 251);
        hash.update(chunk);
        yield Buffer.from(chunk);
      }
    })();
    const reply = await call('POST', '/count', { body: Readable.from(chunks) });
    expect(json(reply)).toEqual({ bytes: total, sha256: hash.digest('hex') });
    expect(outcomes).toEqual(['ok']);
  });

  it('propagates backpressure to the client when the worker reads slowly', async () => {
    configure({ requestTimeoutMs: 20_000 });
    const total = 64 * 1024 * 1024;
    let sent = 0;
    const body = new Readable({
      read() {
        if (sent >= total) {
          this.push(null);
          return;
        }
        sent += 256 * 1024;
        this.push(Buffer.alloc(256 * 1024, 1));
      },
    });
    const pending = call('POST', '/slow-read', { body, headers: { 'Content-Length': String(total) } });
    // Wait until the client cannot write any more while the worker reads nothing.
    let last = -1;
    while (sent !== last) {
      last = sent;
      await sleep(150);
    }
    expect(events.slowReadBytes).toBe(0);
    // Socket buffers on two hops hold some; the gateway itself holds no more than its stream buffers.
    expect(sent).toBeLessThan(total / 2);
    events.releaseSlowRead?.();
    const reply = await pending;
    expect(json(reply)).toEqual({ bytes: total });
  });

  it('propagates backpressure to the worker when the client reads slowly', async () => {
    configure({ requestTimeoutMs: 20_000 });
    const total = 64 * 1024 * 1024;
    let received = 0;
    const done = new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: gatewayPort, path: `/big-response?bytes=${total}`, agent: false },
        (res) => {
          res.pause();
          void (async () => {
            let last = -1;
            while (events.bigWritten !== last) {
              last = events.bigWritten;
              await sleep(150);
            }
            try {
              expect(events.bigWritten).toBeLessThan(total / 2);
            } catch (error) {
              reject(error);
              return;
            }
            res.on('data', (chunk: Buffer) => {
              received += chunk.length;
            });
            res.on('end', resolve);
            res.resume();
          })();
        },
      );
      req.on('error', reject);
      req.end();
    });
    await done;
    expect(received).toBe(total);
  });

  it("retries a worker that refuses the connection: 'not-sent', body not consumed", async () => {
    configure({ targets: [deadAddress, upstreamAddress] });
    const body = Buffer.from('x'.repeat(100_000));
    const reply = await call('POST', '/count', { body });
    expect(reply.status).toBe(200);
    expect(json(reply)).toMatchObject({ bytes: body.length });
    expect(reply.headers['x-corral-worker']).toBe('w1');
    expect(outcomes).toEqual(['ok']);

    configure({ targets: [deadAddress] });
    const outcome = nextOutcome();
    const failed = await call('GET', '/headers');
    expect(failed.status).toBe(503);
    expect(await outcome).toBe('not-sent');
  });

  it("answers 502 WORKER_ERROR when the worker dies before answering: 'worker-error'", async () => {
    configure({ targets: [upstreamAddress, upstreamAddress] });
    const reply = await call('GET', '/die-before');
    expect(reply.status).toBe(502);
    expect(json(reply)).toMatchObject({
      code: 502,
      reason: 'WORKER_ERROR',
      message: expect.any(String),
      metadata: { workerId: 'w0' },
    });
    expect(reply.headers['x-corral-worker']).toBe('w0');
    // Not retried on the second target: the worker had the request.
    expect(outcomes).toEqual(['worker-error']);
  });

  it("aborts the client's response when the worker dies mid-response: 'worker-error'", async () => {
    configure();
    const reply = await call('GET', '/die-mid');
    expect(reply.status).toBe(200);
    expect(reply.complete).toBe(false);
    expect(reply.body.toString()).toBe('first part;');
    expect(outcomes).toEqual(['worker-error']);
  });

  it("answers 504 REQUEST_TIMEOUT and aborts the worker's request when it is too slow: 'timeout'", async () => {
    configure({ requestTimeoutMs: 200 });
    const started = Date.now();
    const reply = await call('GET', '/hang');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(reply.status).toBe(504);
    expect(json(reply)).toEqual({
      code: 504,
      reason: 'REQUEST_TIMEOUT',
      message: expect.any(String),
      metadata: { workerId: 'w0', timeoutMs: 200 },
    });
    expect(outcomes).toEqual(['timeout']);
    expect(await events.hangClosed).toBeLessThan(1000);
  });

  it('aborts a started response at the request timeout', async () => {
    configure({ requestTimeoutMs: 200 });
    const reply = await call('GET', '/hang?partial=1');
    expect(reply.status).toBe(200);
    expect(reply.complete).toBe(false);
    expect(outcomes).toEqual(['timeout']);
  });

  it("aborts the worker's request at once when the client disconnects: 'client-gone'", async () => {
    configure({ requestTimeoutMs: 10_000 });
    events.hangClosed = undefined;
    const outcome = nextOutcome();
    const req = request({ host: '127.0.0.1', port: gatewayPort, path: '/hang', agent: false });
    req.on('error', () => undefined);
    req.end();
    await vi.waitFor(() => expect(events.hangClosed).toBeDefined());
    const disconnectedAt = Date.now();
    req.destroy();
    expect(await outcome).toBe('client-gone');
    expect(Date.now() - disconnectedAt).toBeLessThan(200);
    await events.hangClosed;
    expect(Date.now() - disconnectedAt).toBeLessThan(300);
  });

  it("answers 413 at once for a Content-Length over the limit: 'body-too-large'", async () => {
    configure({ bodyLimitBytes: 1000 });
    const reply = await call('POST', '/count', { body: Buffer.alloc(2000) });
    expect(reply.status).toBe(413);
    expect(json(reply)).toMatchObject({
      code: 413,
      reason: 'BODY_TOO_LARGE',
      metadata: { limitBytes: 1000 },
    });
    expect(reply.headers['x-corral-worker']).toBe('w0');
    expect(outcomes).toEqual(['body-too-large']);

    const fits = await call('POST', '/count', { body: Buffer.alloc(1000) });
    expect(json(fits)).toMatchObject({ bytes: 1000 });
  });

  it('cuts off a chunked body when it passes the limit', async () => {
    configure({ bodyLimitBytes: 1000 });
    const body = Readable.from(
      (async function* () {
        for (let i = 0; i < 10; i++) {
          yield Buffer.alloc(300);
          await sleep(10);
        }
      })(),
    );
    // The gateway answers and closes while the client still writes: the client may see EPIPE instead.
    const reply = await call('POST', '/count', { body }).catch(() => undefined);
    if (reply) {
      expect(reply.status).toBe(413);
      expect(json(reply)).toMatchObject({ reason: 'BODY_TOO_LARGE' });
    }
    expect(outcomes).toEqual(['body-too-large']);
  });

  it('proxies HEAD without a body', async () => {
    configure();
    const reply = await call('HEAD', '/headers');
    expect(reply.status).toBe(200);
    expect(reply.body.length).toBe(0);
    expect(outcomes).toEqual(['ok']);
  });

  it('keeps connections to the worker alive across requests', async () => {
    configure();
    const ports = new Set<number>();
    const onConnection = (socket: import('node:net').Socket) => ports.add(socket.remotePort ?? 0);
    upstream.on('connection', onConnection);
    try {
      for (let i = 0; i < 5; i++) expect((await call('GET', '/headers')).status).toBe(200);
    } finally {
      upstream.off('connection', onConnection);
    }
    expect(ports.size).toBeLessThanOrEqual(1);
  });
});
