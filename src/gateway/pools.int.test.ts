import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WorkerPools } from './pools.js';

let server: Server;
let port: number;
let inFlight = 0;
let maxInFlight = 0;
const sockets = new Set<Socket>();

beforeAll(async () => {
  server = createServer((req, res) => {
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 0);
    setTimeout(() => {
      inFlight -= 1;
      res.end('ok');
    }, ms);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function get(pools: WorkerPools, path: string, connections?: number): Promise<string> {
  const { body } = await pools.get({ host: '127.0.0.1', port }, connections).request({ path, method: 'GET' });
  return body.text();
}

describe('WorkerPools', () => {
  it('keeps one pool per address, whatever the spelling of the address', async () => {
    const pools = new WorkerPools();
    const a = pools.get({ host: '127.0.0.1', port }, 2);
    expect(pools.get(`127.0.0.1:${port}`, 2)).toBe(a);
    expect(pools.get(`http://127.0.0.1:${port}/`, 2)).toBe(a);
    expect(pools.size).toBe(1);
    expect(pools.has(`127.0.0.1:${port}`)).toBe(true);
    await pools.close();
  });

  it('opens at most `connections` connections and sends one request at a time on each', async () => {
    const pools = new WorkerPools();
    maxInFlight = 0;
    const before = sockets.size;
    const replies = await Promise.all(Array.from({ length: 6 }, () => get(pools, '/?ms=50', 2)));
    expect(replies).toEqual(Array(6).fill('ok'));
    expect(maxInFlight).toBe(2);
    expect(sockets.size - before).toBe(2);
    await pools.close();
  });

  it('replaces a pool when the worker’s maxConcurrent changes', async () => {
    const pools = new WorkerPools();
    const one = pools.get({ host: '127.0.0.1', port }, 1);
    const three = pools.get({ host: '127.0.0.1', port }, 3);
    expect(three).not.toBe(one);
    expect(await get(pools, '/', 3)).toBe('ok');
    await pools.close();
    expect(one.closed).toBe(true);
    expect(three.closed).toBe(true);
  });

  it('closes idle connections before the worker would (keep-alive capped below its timeout)', async () => {
    const pools = new WorkerPools({ keepAliveTimeoutMs: 200, keepAliveMaxTimeoutMs: 200 });
    const opened: Socket[] = [];
    const onConnection = (socket: Socket) => opened.push(socket);
    server.on('connection', onConnection);
    try {
      expect(await get(pools, '/')).toBe('ok');
    } finally {
      server.off('connection', onConnection);
    }
    expect(opened).toHaveLength(1);
    const idleSince = Date.now();
    await once(opened[0] as Socket, 'close');
    // node:http's keep-alive is 5 s (its hint, `timeout=5`, would let undici wait 3 s): the gateway closed it.
    expect(Date.now() - idleSince).toBeLessThan(1000);
    await pools.close();
  });

  it('drop lets requests in flight finish, then closes; a later get makes a fresh pool', async () => {
    const pools = new WorkerPools();
    const old = pools.get({ host: '127.0.0.1', port });
    const pending = get(pools, '/?ms=100');
    await vi.waitFor(() => expect(old.stats.running).toBe(1));
    const dropped = pools.drop({ host: '127.0.0.1', port });
    expect(pools.has({ host: '127.0.0.1', port })).toBe(false);
    expect(await pending).toBe('ok');
    await dropped;
    expect(old.closed).toBe(true);
    expect(pools.get({ host: '127.0.0.1', port })).not.toBe(old);
    await pools.drop({ host: '127.0.0.1', port });
    await pools.drop('127.0.0.1:1'); // unknown: nothing to do
    await pools.close();
  });

  it('drop destroys the pool when its requests outlast the grace period', async () => {
    const pools = new WorkerPools();
    const pending = get(pools, '/?ms=2000').catch((error: Error) => error);
    await vi.waitFor(() => expect(pools.get({ host: '127.0.0.1', port }).stats.running).toBe(1));
    const started = Date.now();
    await pools.drop({ host: '127.0.0.1', port }, 100);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await pending).toBeInstanceOf(Error);
    await pools.close();
  });

  it('retainOnly closes the pools of workers not named, however their address is spelled', async () => {
    const pools = new WorkerPools();
    const kept = pools.get({ host: '127.0.0.1', port });
    const gone = pools.get('127.0.0.1:1');
    pools.retainOnly([`http://127.0.0.1:${port}/`]);
    expect(pools.size).toBe(1);
    expect(pools.get({ host: '127.0.0.1', port })).toBe(kept);
    await vi.waitFor(() => expect(gone.closed).toBe(true));
    await pools.close();
  });

  it('refuses new pools once closed', async () => {
    const pools = new WorkerPools();
    await pools.close();
    expect(() => pools.get({ host: '127.0.0.1', port })).toThrow(/closed/);
  });
});
