import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { clientKey, guardConnections, REFUSAL_LOG_INTERVAL_MS } from './connection-guard.js';

// A real http server on port 0, real client sockets from two loopback addresses (127.0.0.1 and 127.0.0.2).

const open: Socket[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const socket of open.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function guarded(maxConnections: number, maxConnectionsPerClient: number) {
  const server = createServer((_req, res) => res.end('ok'));
  servers.push(server);
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  let now = 0;
  const guard = guardConnections(server, {
    listener: 'api',
    maxConnections,
    maxConnectionsPerClient,
    logger: {
      warn: (fields, message) => warnings.push({ fields: fields as Record<string, unknown>, message }),
    },
    clock: () => now,
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return { server, guard, warnings, port, advance: (ms: number) => (now += ms) };
}

/** A connection from `from` sending one request: its socket, and whether it was answered (false: closed unanswered). */
function oneRequest(port: number, from: string): { socket: Socket; answered: Promise<boolean> } {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  open.push(socket);
  socket.on('error', () => {});
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  const answered = new Promise<boolean>((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('ok')) resolve(true);
    });
    socket.on('close', () => resolve(text.includes('ok')));
  });
  return { socket, answered };
}

/** A connection from `from`, resolved once it answers a request (true) or is closed without an answer (false). */
const served = (port: number, from = '127.0.0.1') => oneRequest(port, from).answered;

/** An idle connection from `from` that has sent half a request head, once the server has seen it. */
async function idle(port: number, from = '127.0.0.1'): Promise<Socket> {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  open.push(socket);
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
  return socket;
}

/** A keep-alive connection from `from` that was answered once and stays open, waiting for its next request. */
async function answeredOnce(port: number, from = '127.0.0.1'): Promise<Socket> {
  const { socket, answered } = oneRequest(port, from);
  expect(await answered).toBe(true);
  return socket;
}

const connections = (server: Server) =>
  new Promise<number>((resolve, reject) => server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

describe('guardConnections', () => {
  it("refuses a client's connections over its cap, while another client is served", async () => {
    const g = await guarded(100, 3);
    for (let i = 0; i < 3; i++) await idle(g.port);
    await vi.waitFor(() => expect(g.guard.clients().get('127.0.0.1')).toBe(3));
    expect(await served(g.port)).toBe(false);
    expect(await served(g.port, '127.0.0.2')).toBe(true);
    expect(g.guard.refused()).toEqual({ overListener: 0, overClient: 1 });
    // A closed connection frees its client's place.
    open[0]?.destroy();
    await vi.waitFor(() => expect(g.guard.clients().get('127.0.0.1')).toBe(2));
    expect(await served(g.port)).toBe(true);
  });

  it("closes a client's longest-idle keep-alive connection for its new one, never one in the middle of a request", async () => {
    const g = await guarded(100, 3);
    const first = await answeredOnce(g.port);
    const second = await answeredOnce(g.port);
    const halfWay = await idle(g.port);
    await vi.waitFor(() => expect(g.guard.clients().get('127.0.0.1')).toBe(3));
    const closed = (socket: Socket) => socket.destroyed || socket.readyState === 'closed';
    const firstClosed = once(first, 'close');
    expect(await served(g.port)).toBe(true);
    await firstClosed;
    expect([closed(second), closed(halfWay)]).toEqual([false, false]);
    expect(g.guard.idleClosed()).toBe(1);
    // Used again, the second is no longer idle the longest: the next new connection takes the place of the one
    // the previous test request left idle, and the half-sent request is never cut.
    second.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await once(second, 'data');
    expect(await served(g.port)).toBe(true);
    expect([closed(second), closed(halfWay)]).toEqual([false, false]);
    expect(g.guard.refused()).toEqual({ overListener: 0, overClient: 0 });
  });

  it("refuses connections over the listener's cap at accept, whoever they are from", async () => {
    const g = await guarded(4, 4);
    for (let i = 0; i < 2; i++) await idle(g.port);
    for (let i = 0; i < 2; i++) await idle(g.port, '127.0.0.3');
    await vi.waitFor(async () => expect(await connections(g.server)).toBe(4));
    expect(await served(g.port, '127.0.0.2')).toBe(false);
    expect(g.guard.refused()).toEqual({ overListener: 1, overClient: 0 });
    for (const socket of open.splice(0, 4)) socket.destroy();
    await vi.waitFor(async () => expect(await connections(g.server)).toBe(0));
    expect(await served(g.port, '127.0.0.2')).toBe(true);
  });

  it('logs refusals once a minute at most, with their counts since the last line', async () => {
    const g = await guarded(100, 1);
    await idle(g.port);
    await vi.waitFor(() => expect(g.guard.clients().get('127.0.0.1')).toBe(1));
    for (let i = 0; i < 3; i++) expect(await served(g.port)).toBe(false);
    expect(g.warnings).toEqual([
      {
        message: 'connections refused at their caps',
        fields: {
          listener: 'api',
          overListener: 0,
          overClient: 1,
          maxConnections: 100,
          maxConnectionsPerClient: 1,
        },
      },
    ]);
    g.advance(REFUSAL_LOG_INTERVAL_MS);
    expect(await served(g.port)).toBe(false);
    expect(g.warnings).toHaveLength(2);
    expect(g.warnings[1]?.fields).toMatchObject({ overClient: 3 });
  });
});

describe('clientKey', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:aaaa::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:0:0:9', '2001:db8:1:2::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    [undefined, ''],
  ])('%s counts as %s', (address, key) => {
    expect(clientKey(address)).toBe(key);
  });
});
