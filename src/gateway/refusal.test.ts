/**
 * The gateway's answers for an endpoint that cannot serve, from what the controller publishes to the routing table:
 * a 503 at once naming the endpoint's reason and last worker message, queued requests rejected the moment it is
 * published, workers that still serve left serving, and a QUEUE_TIMEOUT that says what the workers waited for.
 * A real gateway on a real socket; time is ManualTimers'.
 */
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { testServers } from '../../test/support/test-servers.js';
import { RoutingTable } from '../controller/routing-table.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { EndpointCondition } from '../ports/routing-view.js';
import { CallerKeys } from '../service/caller-keys.js';
import { Gateway } from './gateway.js';
import { WorkerPools } from './pools.js';

const { cleanups, listen } = testServers();

const ADMIN_KEY = 'refusal-test-admin-key';

async function startGateway() {
  const timers = new ManualTimers(1_000_000);
  const routes = new RoutingTable();
  const pools = new WorkerPools({ connectTimeoutMs: 1_000 });
  const queued: string[] = [];
  const gateway = new Gateway({
    routing: routes,
    pools,
    domain: 'localhost',
    clock: () => timers.now,
    timers,
    logger: { info: () => {}, warn: () => {} },
    bodyLimitBytes: 1024,
    maxQueueLength: 10,
    queueTimeoutMs: 5_000,
    findEndpoint: async () => undefined,
    // Every request here carries an admin key: what is under test is what happens after the key check.
    keys: new CallerKeys({
      verify: async (key) => (key === ADMIN_KEY ? { ownerId: 'admin', admin: true } : undefined),
      clock: () => timers.now,
      timers,
    }),
  });
  gateway.onQueued((id) => queued.push(id));
  const port = await listen(createServer(gateway.handleRequest).on('upgrade', gateway.handleUpgrade));
  cleanups.push(async () => {
    gateway.close();
    await pools.close();
  });
  return { gateway, routes, timers, port, queued };
}

function get(port: number, endpoint: Endpoint) {
  return new Promise<{ status: number; body: any; cause: string | undefined }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        headers: { host: `${endpoint.spec.appName}.localhost`, authorization: `Bearer ${ADMIN_KEY}` },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => {
          let parsed: unknown = body;
          try {
            parsed = JSON.parse(body);
          } catch {}
          const cause = res.headers['x-corral-cause'];
          resolve({
            status: res.statusCode ?? 0,
            body: parsed,
            cause: typeof cause === 'string' ? cause : undefined,
          });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Resolves once `count` requests in all have queued. */
async function whenQueued(queued: string[], count: number): Promise<void> {
  while (queued.length < count) await new Promise((resolve) => setImmediate(resolve));
}

const pullFailed: EndpointCondition = {
  refusal: {
    kind: 'failed',
    reason: 'IMAGE_PULL_FAILED',
    message: 'cannot pull image nope:1: manifest unknown',
    lastWorkerMessage: 'cannot pull image nope:1: manifest unknown',
  },
};

describe('an endpoint that cannot serve', () => {
  it('answers 503 ENDPOINT_FAILED at once, naming the reason and the last worker message', async () => {
    const g = await startGateway();
    const endpoint = sampleEndpoint({ patch: { appName: 'broken' } });
    const crashLoop: EndpointCondition = {
      refusal: {
        kind: 'failed',
        reason: 'CRASH_LOOP',
        message: '5 workers failed in a row',
        lastWorkerMessage: 'worker exited with code 3',
      },
    };
    g.routes.publish([endpoint], new Map(), new Map([[endpoint.id, crashLoop]]));
    const answer = await get(g.port, endpoint);
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({
      code: 503,
      reason: 'ENDPOINT_FAILED',
      message:
        'endpoint broken is failed (CRASH_LOOP): 5 workers failed in a row (last worker: worker exited with code 3)',
      metadata: {
        endpointId: endpoint.id,
        endpointError: 'CRASH_LOOP',
        endpointMessage: '5 workers failed in a row',
        lastWorkerMessage: 'worker exited with code 3',
      },
    });
    expect(g.queued).toEqual([]);
  });

  it.each([
    ['no-workers', 'NO_WORKERS'],
    ['runtime-unavailable', 'RUNTIME_UNAVAILABLE'],
    ['no-capacity', 'NO_CAPACITY'],
  ] as const)('a %s refusal is answered 503 %s', async (kind, reason) => {
    const g = await startGateway();
    const endpoint = sampleEndpoint();
    const refusal = { kind, reason: 'X', message: 'why', lastWorkerMessage: '' };
    g.routes.publish([endpoint], new Map(), new Map([[endpoint.id, { refusal }]]));
    const answer = await get(g.port, endpoint);
    expect([answer.status, answer.body.reason]).toEqual([503, reason]);
    expect(answer.body.message).toContain('why');
  });

  it('rejects the requests already queued the moment the failure is published, with no time passing', async () => {
    const g = await startGateway();
    const endpoint = sampleEndpoint();
    g.routes.publish([endpoint], new Map());
    const first = get(g.port, endpoint);
    const second = get(g.port, endpoint);
    await whenQueued(g.queued, 2);
    g.routes.publish([endpoint], new Map(), new Map([[endpoint.id, pullFailed]]));
    for (const answer of await Promise.all([first, second])) {
      expect([answer.status, answer.body.reason, answer.body.metadata.endpointError]).toEqual([
        503,
        'ENDPOINT_FAILED',
        'IMAGE_PULL_FAILED',
      ]);
    }
    // Once its owner fixes it (the refusal is gone), requests wait for a worker again.
    g.routes.publish([endpoint], new Map());
    const waiting = get(g.port, endpoint);
    await whenQueued(g.queued, 3);
    g.timers.advance(5_000);
    expect((await waiting).status).toBe(504);
  });

  it('tells queued requests why in their body and in X-Corral-Cause: a health path that answers 404', async () => {
    const g = await startGateway();
    const endpoint = sampleEndpoint({ patch: { appName: 'nginx' } });
    g.routes.publish([endpoint], new Map());
    const waiting = get(g.port, endpoint);
    await whenQueued(g.queued, 1);
    const cause =
      'GET /ready answered 404 on every probe for 10 s: set healthy.path to a path your app serves';
    const notFound: EndpointCondition = {
      refusal: { kind: 'failed', reason: 'HEALTH_TIMEOUT', message: cause, lastWorkerMessage: cause },
    };
    g.routes.publish([endpoint], new Map(), new Map([[endpoint.id, notFound]]));
    const answer = await waiting;
    expect([answer.status, answer.body.reason, answer.cause]).toEqual([503, 'ENDPOINT_FAILED', cause]);
    expect(answer.body.message).toBe(`endpoint nginx is failed (HEALTH_TIMEOUT): ${cause}`);
  });

  it("a request that timed out waiting says in X-Corral-Cause what the endpoint's worker waits for", async () => {
    const g = await startGateway();
    const endpoint = sampleEndpoint();
    const waitingFor = 'waiting for /health to pass; last probe: HTTP 404 from /health, HTTP 502 from /';
    g.routes.publish([endpoint], new Map(), new Map([[endpoint.id, { waitingFor }]]));
    const waiting = get(g.port, endpoint);
    await whenQueued(g.queued, 1);
    g.timers.advance(5_000);
    const answer = await waiting;
    expect([answer.status, answer.cause]).toEqual([504, `no worker is routable: ${waitingFor}`]);
  });

  it('keeps serving on a worker that still answers (an old revision during a failed rollout, an engine outage)', async () => {
    const g = await startGateway();
    const endpoint = sampleEndpoint();
    const workerPort = await listen(createServer((_req, res) => res.end('still here')));
    const routable = new Map([
      [endpoint.id, [{ id: 'w1', address: { host: '127.0.0.1', port: workerPort } }]],
    ]);
    g.routes.publish([endpoint], routable, new Map([[endpoint.id, pullFailed]]));
    expect(await get(g.port, endpoint)).toEqual({ status: 200, body: 'still here', cause: undefined });
    // The worker leaves routing (it failed its health check): now the refusal applies.
    g.routes.publishRoutable(endpoint.id, []);
    expect((await get(g.port, endpoint)).body.reason).toBe('ENDPOINT_FAILED');
  });

  it('a worker that cannot be reached, the last of an endpoint that can get no new one: 503 at once, not a wait', async () => {
    const g = await startGateway();
    const endpoint = sampleEndpoint();
    const dead = createServer();
    const deadPort = await listen(dead);
    dead.close();
    const routable = new Map([[endpoint.id, [{ id: 'w1', address: { host: '127.0.0.1', port: deadPort } }]]]);
    const outage: EndpointCondition = {
      refusal: {
        kind: 'runtime-unavailable',
        reason: 'RUNTIME_UNAVAILABLE',
        message: 'engine away',
        lastWorkerMessage: '',
      },
    };
    g.routes.publish([endpoint], routable, new Map([[endpoint.id, outage]]));
    const answer = await get(g.port, endpoint);
    expect([answer.status, answer.body.reason]).toEqual([503, 'RUNTIME_UNAVAILABLE']);
    expect(g.queued).toEqual([]);
    // An upgrade's retry is the same loop (lease-attempts.ts): answered at once too, never queued.
    const upgrade = connect(g.port, '127.0.0.1');
    upgrade.write(
      `GET /ws HTTP/1.1\r\nHost: ${endpoint.spec.appName}.localhost\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
    );
    let raw = '';
    upgrade.on('data', (chunk: Buffer) => {
      raw += chunk.toString('latin1');
    });
    await once(upgrade, 'close');
    expect(raw).toMatch(/^HTTP\/1\.1 503 /);
    expect(raw).toContain('RUNTIME_UNAVAILABLE');
    expect(g.queued).toEqual([]);
  });

  it('a request that times out in the queue says what the endpoint waited for', async () => {
    const g = await startGateway();
    const endpoint = sampleEndpoint();
    const waitingFor = 'needs 1 GPU of h100-80g, 0 free';
    g.routes.publish([endpoint], new Map(), new Map([[endpoint.id, { waitingFor }]]));
    const answer = get(g.port, endpoint);
    await whenQueued(g.queued, 1);
    g.timers.advance(5_000);
    const { status, body } = await answer;
    expect([status, body.reason]).toEqual([504, 'QUEUE_TIMEOUT']);
    expect(body.message).toBe(`no worker slot freed within 5000 ms: no worker is routable: ${waitingFor}`);
    expect(body.metadata).toMatchObject({ waitingFor: `no worker is routable: ${waitingFor}` });
  });
});
