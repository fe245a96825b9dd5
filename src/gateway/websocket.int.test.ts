import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { proxyUpgrade, type UpgradeOutcome, type UpgradeTarget } from './websocket.js';

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A worker that completes a WebSocket handshake by hand and then echoes raw bytes back. */
let upstream: Server;
let upstreamTarget: UpgradeTarget;
let deadTarget: UpgradeTarget;
let seenUpgrade: IncomingMessage | undefined;
let upstreamSocket: Duplex | undefined;
let upstreamSocketClosed: Promise<void> | undefined;
let handshakeTimeoutMs = 2000;

let gateway: Server;
let gatewayPort: number;
let targets: UpgradeTarget[];
let outcomes: UpgradeOutcome[] = [];
let outcomeWaiter: ((outcome: UpgradeOutcome) => void) | undefined;

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  upstream = createServer((_req, res) => res.writeHead(426).end());
  upstream.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    seenUpgrade = req;
    upstreamSocket = socket;
    upstreamSocketClosed = new Promise((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    if (req.url === '/refuse') {
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno');
      return;
    }
    if (req.url === '/silent') {
      // Read (and drop) so that the gateway closing its side is seen; node:http sockets are half-open.
      socket.resume();
      socket.on('end', () => socket.end());
      return;
    }
    if (req.url === '/die') {
      socket.destroy();
      return;
    }
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}${WS_GUID}`)
      .digest('base64');
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${accept}\r\nX-Corral-Worker: forged\r\n\r\n`,
    );
    if (head.length > 0) socket.write(head);
    socket.pipe(socket);
  });
  const upstreamPort = await listen(upstream);
  upstreamTarget = { host: '127.0.0.1', port: upstreamPort };
  const dead = createServer();
  deadTarget = { host: '127.0.0.1', port: await listen(dead) };
  dead.close();

  gateway = createServer((_req, res) => res.writeHead(404).end());
  gateway.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void (async () => {
      let outcome: UpgradeOutcome = 'not-sent';
      for (const [index, target] of targets.entries()) {
        outcome = await proxyUpgrade(
          req,
          socket,
          head,
          target,
          { 'X-Corral-Worker': `w${index}` },
          {
            workerId: `w${index}`,
            handshakeTimeoutMs,
          },
        );
        if (outcome !== 'not-sent') break;
      }
      if (outcome === 'not-sent') socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n');
      outcomes.push(outcome);
      outcomeWaiter?.(outcome);
    })();
  });
  gatewayPort = await listen(gateway);
});

afterAll(async () => {
  gateway.closeAllConnections();
  upstream.closeAllConnections();
  await Promise.all([
    new Promise((resolve) => gateway.close(resolve)),
    new Promise((resolve) => upstream.close(resolve)),
  ]);
});

function nextOutcome(): Promise<UpgradeOutcome> {
  return new Promise((resolve) => {
    outcomeWaiter = resolve;
  });
}

interface Upgraded {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  socket: Socket | undefined;
  body: string;
}

/** Sends a WebSocket handshake to the gateway; resolves with the 101 and its socket, or the refusal. */
function upgrade(path: string): Promise<Upgraded> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: gatewayPort,
      path,
      agent: false,
      headers: {
        Host: `app.localhost:${gatewayPort}`,
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    req.on('upgrade', (res, socket: Socket) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers, socket, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        body += text;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, socket: undefined, body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function read(socket: Socket, bytes: number): Promise<string> {
  let text = '';
  socket.setEncoding('utf8');
  while (text.length < bytes) {
    const [chunk] = (await once(socket, 'data')) as [string];
    text += chunk;
  }
  return text;
}

describe('proxyUpgrade', () => {
  it('tunnels a WebSocket handshake and echoes bytes both ways, then tears both sides down', async () => {
    targets = [upstreamTarget];
    outcomes = [];
    const done = nextOutcome();
    const reply = await upgrade('/chat?room=1');
    expect(reply.status).toBe(101);
    expect(reply.headers['sec-websocket-accept']).toBe('s3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    expect(reply.headers['x-corral-worker']).toBe('w0');

    expect(seenUpgrade?.url).toBe('/chat?room=1');
    expect(seenUpgrade?.headers.upgrade).toBe('websocket');
    expect(seenUpgrade?.headers.connection).toBe('Upgrade');
    expect(seenUpgrade?.headers['x-forwarded-for']).toMatch(/127\.0\.0\.1$/);
    expect(seenUpgrade?.headers['x-forwarded-host']).toBe(`app.localhost:${gatewayPort}`);

    const socket = reply.socket as Socket;
    socket.write('hello');
    expect(await read(socket, 5)).toBe('hello');
    const big = 'x'.repeat(1024 * 1024);
    socket.write(big);
    expect((await read(socket, big.length)).length).toBe(big.length);

    const closed = upstreamSocketClosed;
    socket.destroy();
    await closed;
    expect(await done).toBe('ok');
  });

  it("tries the next worker when one refuses the connection ('not-sent')", async () => {
    targets = [deadTarget, upstreamTarget];
    outcomes = [];
    const done = nextOutcome();
    const reply = await upgrade('/chat');
    expect(reply.status).toBe(101);
    expect(reply.headers['x-corral-worker']).toBe('w1');
    const socket = reply.socket as Socket;
    socket.write('ping');
    expect(await read(socket, 4)).toBe('ping');
    socket.end();
    expect(await done).toBe('ok');
  });

  it("passes a worker's refusal through", async () => {
    targets = [upstreamTarget];
    const done = nextOutcome();
    const reply = await upgrade('/refuse');
    expect(reply.status).toBe(403);
    expect(reply.body).toBe('no');
    expect(reply.headers['x-corral-worker']).toBe('w0');
    expect(await done).toBe('ok');
  });

  it("answers 502 WORKER_ERROR when the worker closes without answering ('worker-error')", async () => {
    targets = [upstreamTarget];
    const done = nextOutcome();
    const reply = await upgrade('/die');
    expect(reply.status).toBe(502);
    expect(JSON.parse(reply.body)).toMatchObject({
      code: 502,
      reason: 'WORKER_ERROR',
      metadata: { workerId: 'w0' },
    });
    expect(await done).toBe('worker-error');
  });

  it('closes the client when the worker closes the tunnel', async () => {
    targets = [upstreamTarget];
    const done = nextOutcome();
    const reply = await upgrade('/chat');
    const socket = reply.socket as Socket;
    const clientClosed = once(socket, 'close');
    socket.resume();
    await sleep(20);
    upstreamSocket?.destroy();
    await clientClosed;
    expect(await done).toBe('ok');
  });

  it("answers 504 REQUEST_TIMEOUT when the worker does not answer the handshake in time ('timeout')", async () => {
    targets = [upstreamTarget];
    handshakeTimeoutMs = 200;
    try {
      const done = nextOutcome();
      const started = Date.now();
      const reply = await upgrade('/silent');
      expect(reply.status).toBe(504);
      expect(JSON.parse(reply.body)).toMatchObject({ code: 504, reason: 'REQUEST_TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(1000);
      expect(await done).toBe('timeout');
      await upstreamSocketClosed;
    } finally {
      handshakeTimeoutMs = 2000;
    }
  });

  it("closes the worker's side when the client leaves during the handshake ('client-gone')", async () => {
    targets = [upstreamTarget];
    const done = nextOutcome();
    const req = request({
      host: '127.0.0.1',
      port: gatewayPort,
      path: '/silent',
      agent: false,
      headers: { Connection: 'Upgrade', Upgrade: 'websocket' },
    });
    req.on('error', () => undefined);
    req.end();
    upstreamSocketClosed = undefined;
    await vi.waitFor(() => expect(upstreamSocketClosed).toBeDefined());
    req.destroy();
    expect(await done).toBe('client-gone');
    await upstreamSocketClosed;
  });
});
