/**
 * Two real gateways (two replicas' gateways, in process, on port 0) in front of one real worker whose one slot
 * (maxConcurrent 1) belongs to replica `a` (cluster/slot-shares.ts `shareOf`): replica `b`'s gateway, holding no
 * slot, forwards the endpoint's requests to `a`'s (cluster/forwarding.ts decides where). Only the routing views are
 * set by hand; sockets are real. Time in the gateways is ManualTimers (queue timeouts). The worker also accepts
 * WebSockets (its handshake by hand, then an echo of the bytes), which hold its slot while open.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import type { Socket } from 'node:net';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { testServers } from '../../test/support/test-servers.js';
import { forwardTarget } from '../cluster/forwarding.js';
import { shareOf } from '../cluster/slot-shares.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { RoutableWorker, RoutingView } from '../ports/routing-view.js';
import { CallerKeys } from '../service/caller-keys.js';
import { Gateway } from './gateway.js';
import { GatewayMetrics } from './metrics.js';
import { WorkerPools } from './pools.js';

const OWNER_KEY = 'sk_ownera000000_ownerAkeyOwnerAkeyOwnerAkeyOwnerA';
const MEMBERS = ['a', 'b'];

class StaticRouting implements RoutingView {
  endpoint: Endpoint | undefined;
  workers: RoutableWorker[] = [];
  readonly #listeners = new Set<() => void>();
  endpointByAppName(appName: string): Endpoint | undefined {
    return this.endpoint?.spec.appName === appName ? this.endpoint : undefined;
  }
  endpointById(endpointId: string): Endpoint | undefined {
    return this.endpoint?.id === endpointId ? this.endpoint : undefined;
  }
  routableWorkers(): readonly RoutableWorker[] {
    return this.workers;
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
  requestRefresh(): void {}
}

const { cleanups, listen } = testServers();

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
}

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/**
 * The worker: answers `/hold...` once released, anything else on the next turn; counts its peak in flight, open
 * WebSockets included (each accepted by hand, then echoing what it is sent).
 */
async function startWorker() {
  const state = { inFlight: 0, peak: 0, seen: [] as Seen[], held: [] as (() => void)[], sockets: 0 };
  const server = createServer((req, res) => {
    state.inFlight += 1;
    state.peak = Math.max(state.peak, state.inFlight);
    state.seen.push({ url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders });
    const answer = () => {
      state.inFlight -= 1;
      res.end(`worker saw ${req.url}`);
    };
    if (req.url?.startsWith('/hold')) state.held.push(answer);
    else setImmediate(answer);
  });
  server.on('upgrade', (req, socket: Socket, head: Buffer) => {
    state.inFlight += 1;
    state.sockets += 1;
    state.peak = Math.max(state.peak, state.inFlight);
    state.seen.push({ url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      state.inFlight -= 1;
    });
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}${WS_GUID}`)
      .digest('base64');
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    if (head.length > 0) socket.write(head);
    socket.pipe(socket);
  });
  const port = await listen(server);
  return { state, address: { host: '127.0.0.1', port } };
}

interface Replica {
  id: string;
  gateway: Gateway;
  routing: StaticRouting;
  timers: ManualTimers;
  port: number;
  /** The other replica's gateway URL, as its heartbeat row would say it. */
  peers: Map<string, string>;
  queued: number;
  registry: Registry;
}

async function startReplica(id: string): Promise<Replica> {
  const routing = new StaticRouting();
  const timers = new ManualTimers(1_000);
  const pools = new WorkerPools({ connectTimeoutMs: 1_000 });
  const peerPools = new WorkerPools({ connectTimeoutMs: 1_000 });
  const peers = new Map<string, string>();
  const registry = new Registry();
  const gateway = new Gateway({
    metrics: new GatewayMetrics({ registry }),
    routing,
    pools,
    domain: 'localhost',
    clock: () => timers.now,
    timers,
    logger: { info: () => {}, warn: () => {} },
    bodyLimitBytes: 1 << 20,
    maxQueueLength: 100,
    queueTimeoutMs: 5_000,
    findEndpoint: async () => undefined,
    keys: new CallerKeys({
      verify: async (key) => (key === OWNER_KEY ? { ownerId: 'owner-a', admin: false } : undefined),
      clock: () => timers.now,
      timers,
    }),
    forwarding: {
      self: id,
      target: (workers, capacity) =>
        forwardTarget({
          self: id,
          members: MEMBERS,
          gatewayUrls: peers,
          workers: workers.map((w) => ({ id: w.id, slots: w.slots ?? capacity })),
          capacity,
        }),
      pools: peerPools,
    },
  });
  const replica: Replica = { id, gateway, routing, timers, port: 0, peers, queued: 0, registry };
  gateway.onQueued(() => {
    replica.queued += 1;
  });
  replica.port = await listen(createServer(gateway.handleRequest).on('upgrade', gateway.handleUpgrade));
  cleanups.push(async () => {
    gateway.close();
    await pools.close();
    await peerPools.close();
  });
  return replica;
}

/** A worker id whose one slot goes to replica `owner` of a and b. */
function workerOwnedBy(owner: string): string {
  for (let i = 0; ; i++) if (shareOf(1, MEMBERS, owner, `w-${i}`) === 1) return `w-${i}`;
}

/** Both replicas route the endpoint to the worker, each with its share of the worker's one slot. */
async function twoReplicas() {
  const worker = await startWorker();
  const endpoint = sampleEndpoint({ patch: { workers: { minWorkers: 0, maxWorkers: 1, maxConcurrent: 1 } } });
  const workerId = workerOwnedBy('a');
  const a = await startReplica('a');
  const b = await startReplica('b');
  a.peers.set('b', `http://127.0.0.1:${b.port}`);
  b.peers.set('a', `http://127.0.0.1:${a.port}`);
  for (const replica of [a, b]) {
    replica.routing.endpoint = endpoint;
    replica.routing.workers = [
      { id: workerId, address: worker.address, slots: shareOf(1, MEMBERS, replica.id, workerId) },
    ];
    replica.routing.changed();
  }
  return { worker, endpoint, a, b, workerId, host: `${endpoint.spec.appName}.localhost:8000` };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function send(port: number, host: string, path: string, extra: Record<string, string> = {}): Promise<Answer> {
  const headers = { host, authorization: `Bearer ${OWNER_KEY}`, ...extra };
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

interface Opened {
  status: number;
  headers: IncomingHttpHeaders;
  /** The tunnel, after a 101. */
  socket: Socket | undefined;
  /** The refusal's body. */
  body: string;
}

/** Opens a WebSocket through the gateway on `port`: the 101 and its socket, or the refusal. */
function openSocket(
  port: number,
  host: string,
  path: string,
  extra: Record<string, string> = {},
): Promise<Opened> {
  const headers = {
    host,
    authorization: `Bearer ${OWNER_KEY}`,
    connection: 'Upgrade',
    upgrade: 'websocket',
    'sec-websocket-version': '13',
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    ...extra,
  };
  return new Promise<Opened>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false });
    req.on('upgrade', (res, socket: Socket) => {
      cleanups.push(() => {
        socket.destroy();
      });
      resolve({ status: res.statusCode ?? 0, headers: res.headers, socket, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, socket: undefined, body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** A masked WebSocket text frame (a client's), as it travels on the wire. */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const mask = Buffer.from([1, 2, 3, 4]);
  const masked = payload.map((byte, i) => byte ^ (mask[i % 4] as number));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

/** Sends a frame on the tunnel and resolves with the bytes the worker echoed. */
async function echo(socket: Socket, frame: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  socket.write(frame);
  while (bytes < frame.length) {
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    chunks.push(chunk);
    bytes += chunk.length;
  }
  return Buffer.concat(chunks);
}

async function sample(registry: Registry, series: string): Promise<number | undefined> {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Event-loop turns until `done()` holds (I/O between two real servers; no time is waited on). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !done(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(done()).toBe(true);
}

describe('forwarding between two replicas’ gateways', () => {
  it('serves a maxConcurrent 1 endpoint through both gateways, one request at a time on the worker', async () => {
    const { worker, a, b, host, workerId } = await twoReplicas();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send(i % 2 === 0 ? a.port : b.port, host, `/work/${i}`)),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(answers.map((r) => r.body)).toEqual(Array.from({ length: 12 }, (_, i) => `worker saw /work/${i}`));
    expect(answers.every((r) => r.headers['x-corral-worker'] === workerId)).toBe(true);
    // What b forwarded says so; a served its own.
    expect(answers.map((r) => r.headers['x-corral-forwarded-to'])).toEqual(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? undefined : 'a')),
    );
    expect(worker.state.peak).toBe(1);
    expect(worker.state.seen).toHaveLength(12);
    // Every request reached the worker with its original Host, without the forwarding header or the caller's key.
    for (const seen of worker.state.seen) {
      expect(seen.headers['x-forwarded-host']).toBe(host);
      expect(seen.headers['x-corral-forwarded-by']).toBeUndefined();
      expect(seen.headers.authorization).toBeUndefined();
    }
    // b queued nothing: what it could not serve went to a, which queued it under its own slot.
    expect(b.queued).toBe(0);
  });

  it("a public endpoint's request and WebSocket forwarded to the slot holder reach the worker without Corral keys", async () => {
    const { worker, b, host, endpoint } = await twoReplicas();
    endpoint.spec.public = true;
    const keys = `Bearer ${OWNER_KEY}, Bearer x`;
    const answer = await send(b.port, host, '/work/1', { authorization: keys });
    expect([answer.status, answer.headers['x-corral-forwarded-to']]).toEqual([200, 'a']);
    const opened = await openSocket(b.port, host, '/chat', { authorization: keys });
    expect([opened.status, opened.headers['x-corral-forwarded-to']]).toEqual([101, 'a']);
    opened.socket?.destroy();
    expect(worker.state.seen).toHaveLength(2);
    for (const seen of worker.state.seen) {
      expect(seen.rawHeaders.filter((h) => h.toLowerCase() === 'authorization')).toEqual([]);
    }
  });

  it("keeps the path form's path and the body through the forwarding", async () => {
    const { worker, b, endpoint } = await twoReplicas();
    const answer = await send(b.port, 'gateway.example:8000', `/e/${endpoint.spec.appName}/x?y=1`);
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('worker saw /x?y=1');
    expect(worker.state.seen[0]?.headers['x-forwarded-prefix']).toBe(`/e/${endpoint.spec.appName}`);
    expect(worker.state.seen[0]?.headers['x-forwarded-host']).toBe('gateway.example:8000');
  });

  it('the receiving gateway checks the key again', async () => {
    const { worker, b, host } = await twoReplicas();
    const answer = await send(b.port, host, '/work', {
      authorization: 'Bearer sk_ownera000000_wrongkeywrongkeywrongkeywrongkey',
    });
    expect(answer.status).toBe(401);
    expect(worker.state.seen).toHaveLength(0);
  });

  it('never forwards a forwarded request again (no loop)', async () => {
    const { worker, a, b, host, workerId } = await twoReplicas();
    // Each replica believes the other holds the slot (views of two different workers at one address): a forwards
    // to b, which must queue it, not send it back.
    a.routing.workers = [{ id: workerOwnedBy('b'), address: worker.address, slots: 0 }];
    b.routing.workers = [{ id: workerId, address: worker.address, slots: 0 }];
    a.routing.changed();
    b.routing.changed();
    const pending = send(a.port, host, '/work');
    await until(() => b.queued === 1);
    expect(a.queued).toBe(0);
    b.timers.advance(5_000);
    const answer = await pending;
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body)).toMatchObject({ reason: 'QUEUE_TIMEOUT' });
    expect(worker.state.seen).toHaveLength(0);
  });

  it('requests queued on a replica whose share falls to 0 leave its queue for the replica holding the slot', async () => {
    const { worker, a, b, host, workerId } = await twoReplicas();
    // b holds the slot first: one request takes it, a second queues on b.
    b.routing.workers = [{ id: workerId, address: worker.address, slots: 1 }];
    a.routing.workers = [{ id: workerId, address: worker.address, slots: 0 }];
    b.routing.changed();
    a.routing.changed();
    const first = send(b.port, host, '/hold/1');
    await until(() => worker.state.held.length === 1);
    const second = send(b.port, host, '/work/2');
    await until(() => b.queued === 1);
    // The shares move to a (as slot-shares.ts hands them over once b is within its new share).
    b.routing.workers = [{ id: workerId, address: worker.address, slots: 0 }];
    a.routing.workers = [{ id: workerId, address: worker.address, slots: 1 }];
    b.routing.changed();
    a.routing.changed();
    worker.state.held.shift()?.();
    const [one, two] = await Promise.all([first, second]);
    expect(one.status).toBe(200);
    // Forwarded with the caller's key (a checked it: not a 401).
    expect(two.status).toBe(200);
    expect(two.body).toBe('worker saw /work/2');
  });

  it('a strict request at a replica holding no slot of its worker goes to the one that does, also once queued', async () => {
    const [holder, other] = [await startWorker(), await startWorker()];
    const endpoint = sampleEndpoint({
      patch: { workers: { minWorkers: 0, maxWorkers: 2, maxConcurrent: 1 } },
    });
    // x's one slot is a's, y's is b's.
    const [x, y] = [workerOwnedBy('a'), workerOwnedBy('b')];
    const a = await startReplica('a');
    const b = await startReplica('b');
    a.peers.set('b', `http://127.0.0.1:${b.port}`);
    b.peers.set('a', `http://127.0.0.1:${a.port}`);
    const route = (ids: string[]) => {
      for (const replica of [a, b]) {
        replica.routing.endpoint = endpoint;
        replica.routing.workers = ids.map((id) => ({
          id,
          address: (id === x ? holder : other).address,
          slots: shareOf(1, MEMBERS, replica.id, id),
        }));
        replica.routing.changed();
      }
    };
    route([x, y]);
    const host = `${endpoint.spec.appName}.localhost:8000`;
    // At b, which holds y's slot and none of x's: served by x, through a.
    const strict = await send(b.port, host, '/work/1', { 'x-corral-worker-id': `strict ${x}` });
    expect(strict).toMatchObject({ status: 200, body: 'worker saw /work/1' });
    expect(holder.state.seen.map((s) => s.url)).toEqual(['/work/1']);
    // x frozen (not routable): strict-resume to it waits in b's queue; once x is routable again it goes to a.
    route([y]);
    const waiting = send(b.port, host, '/work/2', { 'x-runpod-worker-id': `strict-resume ${x}` });
    await until(() => b.queued === 1);
    route([x, y]);
    expect(await waiting).toMatchObject({ status: 200, body: 'worker saw /work/2' });
    expect(holder.state.seen.map((s) => s.url)).toEqual(['/work/1', '/work/2']);
    expect(other.state.seen).toEqual([]);
  });

  it('a request queued on a replica through a wake, then diverted to the slot holder, says what the wake cost', async () => {
    const { worker, a, b, host, workerId } = await twoReplicas();
    // No routable worker anywhere: the request waits in b's queue for a wake from zero.
    for (const replica of [a, b]) {
      replica.routing.workers = [];
      replica.routing.changed();
    }
    const pending = send(b.port, host, '/work/woken');
    await until(() => b.queued === 1);
    b.timers.advance(40);
    // The leader thawed the worker; both replicas' routes carry its wake, and a holds its slot.
    const wake = { tier: 'thaw' as const, phases: [{ name: 'thaw', ms: 2.5 }], at: b.timers.now };
    for (const replica of [a, b]) {
      replica.routing.workers = [
        { id: workerId, address: worker.address, slots: replica.id === 'a' ? 1 : 0, wake },
      ];
      replica.routing.changed();
    }
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(answer.headers['x-corral-forwarded-to']).toBe('a');
    expect(answer.headers['x-corral-cold-start-ms']).toBe('40');
    expect(answer.headers['server-timing']).toBe('queue;dur=40, thaw;dur=2.5');
  });

  it('forwards a WebSocket opened through the slot-less gateway, both ways, and the worker sees it as sent', async () => {
    const { worker, a, b, host, workerId, endpoint } = await twoReplicas();
    const opened = await openSocket(b.port, host, '/chat?room=1', { 'sec-websocket-protocol': 'echo' });
    expect(opened.status).toBe(101);
    expect(opened.headers['x-corral-forwarded-to']).toBe('a');
    expect(opened.headers['x-corral-worker']).toBe(workerId);
    expect(opened.headers['sec-websocket-accept']).toBe('s3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    const socket = opened.socket as Socket;
    for (const text of ['hello', 'and again']) {
      const frame = textFrame(text);
      expect(await echo(socket, frame)).toEqual(frame);
    }
    const seen = worker.state.seen[0];
    expect(seen?.url).toBe('/chat?room=1');
    expect(seen?.headers['x-forwarded-host']).toBe(host);
    expect(seen?.headers['sec-websocket-key']).toBe('dGhlIHNhbXBsZSBub25jZQ==');
    expect(seen?.headers['sec-websocket-protocol']).toBe('echo');
    expect(seen?.headers['x-corral-forwarded-by']).toBeUndefined();
    expect(seen?.headers.authorization).toBeUndefined();
    expect(b.queued).toBe(0);
    // Counted once, by the gateway that served it.
    const series = `corral_gateway_requests_total{endpoint="${endpoint.id}",status="101"}`;
    expect(await sample(a.registry, series)).toBe(1);
    expect(await sample(b.registry, series)).toBeUndefined();
    socket.destroy();
    await until(() => worker.state.inFlight === 0);
  });

  it("keeps a forwarded WebSocket's path form and Host", async () => {
    const { worker, b, endpoint } = await twoReplicas();
    const opened = await openSocket(b.port, 'gateway.example:8000', `/e/${endpoint.spec.appName}/x?y=1`);
    expect(opened.status).toBe(101);
    expect(opened.headers['x-corral-forwarded-to']).toBe('a');
    expect(worker.state.seen[0]?.url).toBe('/x?y=1');
    expect(worker.state.seen[0]?.headers['x-forwarded-prefix']).toBe(`/e/${endpoint.spec.appName}`);
    expect(worker.state.seen[0]?.headers['x-forwarded-host']).toBe('gateway.example:8000');
  });

  it('keeps the cap with a WebSocket through each gateway: the second waits in the slot holder’s queue', async () => {
    const { worker, a, b, host } = await twoReplicas();
    const first = await openSocket(a.port, host, '/one');
    expect(first.status).toBe(101);
    expect(first.headers['x-corral-forwarded-to']).toBeUndefined();
    const pending = openSocket(b.port, host, '/two');
    await until(() => a.queued === 1);
    expect(b.queued).toBe(0);
    expect(worker.state.sockets).toBe(1);
    (first.socket as Socket).destroy();
    const second = await pending;
    expect(second.status).toBe(101);
    expect(second.headers['x-corral-forwarded-to']).toBe('a');
    const frame = textFrame('second');
    expect(await echo(second.socket as Socket, frame)).toEqual(frame);
    expect(worker.state.sockets).toBe(2);
    expect(worker.state.peak).toBe(1);
  });

  it('the receiving gateway checks the key of a forwarded WebSocket again', async () => {
    const { worker, b, host } = await twoReplicas();
    const opened = await openSocket(b.port, host, '/chat', {
      authorization: 'Bearer sk_ownera000000_wrongkeywrongkeywrongkeywrongkey',
    });
    expect(opened.status).toBe(401);
    expect(opened.headers['x-corral-forwarded-to']).toBe('a');
    expect(JSON.parse(opened.body)).toMatchObject({ code: 401 });
    expect(worker.state.sockets).toBe(0);
  });

  it('never forwards a forwarded WebSocket again (no loop): it queues, and its timeout comes back', async () => {
    const { worker, a, b, host, workerId } = await twoReplicas();
    a.routing.workers = [{ id: workerOwnedBy('b'), address: worker.address, slots: 0 }];
    b.routing.workers = [{ id: workerId, address: worker.address, slots: 0 }];
    a.routing.changed();
    b.routing.changed();
    const pending = openSocket(a.port, host, '/chat');
    await until(() => b.queued === 1);
    expect(a.queued).toBe(0);
    b.timers.advance(5_000);
    const opened = await pending;
    expect(opened.status).toBe(504);
    expect(opened.headers['x-corral-forwarded-to']).toBe('b');
    expect(JSON.parse(opened.body)).toMatchObject({ reason: 'QUEUE_TIMEOUT' });
    expect(worker.state.sockets).toBe(0);
  });

  it('queues a WebSocket here when the replica holding the slot cannot be reached', async () => {
    const { worker, b, host, endpoint } = await twoReplicas();
    const dead = createServer();
    const deadPort = await listen(dead);
    dead.close();
    b.peers.set('a', `http://127.0.0.1:${deadPort}`);
    const pending = openSocket(b.port, host, '/chat');
    await until(() => b.queued === 1);
    b.timers.advance(5_000);
    const opened = await pending;
    // b's own answer, on the raw socket, in the JSON error format, counted by b.
    expect(opened.status).toBe(504);
    expect(opened.headers['x-corral-forwarded-to']).toBeUndefined();
    expect(opened.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(opened.body)).toMatchObject({ reason: 'QUEUE_TIMEOUT' });
    expect(
      await sample(b.registry, `corral_gateway_requests_total{endpoint="${endpoint.id}",status="504"}`),
    ).toBe(1);
    expect(worker.state.sockets).toBe(0);
  });

  it('a WebSocket queued on a replica whose share falls to 0 leaves its queue for the replica holding the slot', async () => {
    const { worker, a, b, host, workerId } = await twoReplicas();
    b.routing.workers = [{ id: workerId, address: worker.address, slots: 1 }];
    a.routing.workers = [{ id: workerId, address: worker.address, slots: 0 }];
    b.routing.changed();
    a.routing.changed();
    const first = await openSocket(b.port, host, '/one');
    expect(first.status).toBe(101);
    const pending = openSocket(b.port, host, '/two');
    await until(() => b.queued === 1);
    // The shares move to a once the first has closed (slot-shares.ts hands them over once b is within its new share).
    (first.socket as Socket).destroy();
    b.routing.workers = [{ id: workerId, address: worker.address, slots: 0 }];
    a.routing.workers = [{ id: workerId, address: worker.address, slots: 1 }];
    b.routing.changed();
    a.routing.changed();
    const second = await pending;
    // Forwarded with the caller's key (a checked it: not a 401).
    expect(second.status).toBe(101);
    expect(second.headers['x-corral-forwarded-to']).toBe('a');
    const frame = textFrame('diverted');
    expect(await echo(second.socket as Socket, frame)).toEqual(frame);
    expect(worker.state.seen.map((seen) => seen.url)).toEqual(['/one', '/two']);
  });
});
