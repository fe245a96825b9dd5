/**
 * Issue 29: an http job's delivery stays inside its endpoint, over real sockets. The real delivery (HttpDelivery and
 * its node http request) goes through a real gateway whose key check is `corral serve`'s (build-jobs.ts
 * `callerKeyChecks`, the store's endpoints and keys) to real worker servers of two owners' endpoints. No time passes:
 * each test awaits the event that makes its state true (a job finished, a connection closed).
 */
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { writeMany } from '../../test/support/endless-answer.js';
import { sampleEndpoint, storeEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { startStoreGateway } from '../../test/support/store-gateway.js';
import { testServers } from '../../test/support/test-servers.js';
import { RoutingTable } from '../controller/routing-table.js';
import type { Endpoint } from '../domain/endpoint.js';
import { DEFAULT_JOB_POLICY, type Job } from '../domain/job.js';
import { HttpDelivery } from '../jobs/http-delivery.js';
import { JobEvents } from '../jobs/job-events.js';
import { Wakeups } from '../jobs/wakeups.js';
import { DeliveryKeys } from '../service/delivery-keys.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { callerKeyChecks } from './build-jobs.js';

interface TestServer {
  url: string;
  address: { host: string; port: number };
  /** Requests received so far, with their paths and Authorization headers. */
  seen: { path: string; authorization: string | undefined }[];
}

const servers = testServers();
const { cleanups, listen: listenOn } = servers;

const listen = async (server: Server) => ({ host: '127.0.0.1', port: await listenOn(server) });

/** A worker (or any server) that records each request and answers it with `answer`. */
async function startServer(answer: (res: ServerResponse, path: string) => void): Promise<TestServer> {
  const seen: TestServer['seen'] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => answer(res, req.url ?? ''));
  });
  const address = await listen(server);
  return { url: `http://${address.host}:${address.port}`, address, seen };
}

const json = (body: unknown) => (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** A GET through the gateway's path form with `key`: its status. */
function call(port: number, path: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${key}` }, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe("an http job's delivery, through a real gateway to two owners' endpoints", () => {
  let store: Store;
  let timers: ManualTimers;
  let routes: RoutingTable;
  let events: JobEvents;
  let delivery: HttpDelivery;
  let deliveryKeys: DeliveryKeys;
  let gatewayPort: number;
  let endpointA: Endpoint;
  let endpointB: Endpoint;
  let workerB: TestServer;

  /** Publishes the endpoints with one worker each, as the controller would. */
  const publish = (workers: Map<string, TestServer>) =>
    routes.publish(
      [endpointA, endpointB],
      new Map([...workers].map(([id, w]) => [id, [{ id: `w-${id}`, address: w.address }]])),
    );

  /** Queues a job on endpoint A, delivers it, and resolves with the job once it is finished. */
  const runOnA = async (id: string): Promise<Job> => {
    const finished = new Promise<Job>((resolve) =>
      events.on('finished', ({ job }) => {
        if (job.id === id) resolve(job);
      }),
    );
    await store.jobs.enqueue(
      {
        id,
        endpointId: endpointA.id,
        ownerId: endpointA.ownerId,
        input: '{"prompt":"hi"}',
        webhook: null,
        policy: DEFAULT_JOB_POLICY,
        sync: false,
        createdAt: timers.now,
      },
      60_000,
    );
    await delivery.drain(endpointA.id);
    return finished;
  };

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    cleanups.push(() => store.close());
    timers = new ManualTimers(1_000);
    endpointA = sampleEndpoint({ ownerId: 'owner-a', patch: { appName: 'a-app', jobsPath: '/run' } });
    endpointB = sampleEndpoint({ ownerId: 'owner-b', patch: { appName: 'b-app' } });
    await storeEndpoint(store, endpointA);
    await storeEndpoint(store, endpointB);
    routes = new RoutingTable();
    workerB = await startServer(json({ secret: 'of owner b' }));
    publish(new Map([[endpointB.id, workerB]]));
    deliveryKeys = new DeliveryKeys({ secret: 'the server secret of these tests' });
    const invokeKeys = new InvokeKeyService({ store, clock: () => timers.now });
    gatewayPort = await startStoreGateway(servers, {
      store,
      routing: routes,
      timers,
      keys: callerKeyChecks({
        deliveryKeys,
        verifyKey: (key) => invokeKeys.grant(key),
        store,
        clock: () => timers.now,
        timers,
      }),
    });
    events = new JobEvents();
    delivery = new HttpDelivery({
      jobs: store.jobs,
      events,
      wakeups: new Wakeups({ timers, recheckMs: 500 }),
      clock: () => timers.now,
      timers,
      logger: pino({ level: 'silent' }),
      deliveryWorkerId: 'gateway:r-1',
      findEndpoint: async (id) => (id === endpointA.id ? endpointA : undefined),
      gateway: () => ({
        url: `http://127.0.0.1:${gatewayPort}`,
        keyFor: (endpointId) => deliveryKeys.keyFor(endpointId),
      }),
      scanMs: 60_000,
      keepAliveMs: 60_000,
      stopCheckMs: 500,
      backstopMs: 30_000,
      maxAttempts: 1,
      answerLimitBytes: 1024 * 1024,
    });
    cleanups.push(() => delivery.close());
  });

  it("delivers to its own endpoint's worker, which never sees the key", async () => {
    const workerA = await startServer(json({ echo: 'from a' }));
    publish(
      new Map([
        [endpointA.id, workerA],
        [endpointB.id, workerB],
      ]),
    );
    const job = await runOnA('j-1');
    expect(job).toMatchObject({ status: 'COMPLETED', output: '{"echo":"from a"}' });
    expect(workerA.seen).toEqual([{ path: '/run', authorization: undefined }]);
    expect(workerB.seen).toEqual([]);
  });

  it("has a key good for its own endpoint's route alone: on another owner's route it is refused with 401", async () => {
    const workerA = await startServer(json({ echo: 'from a' }));
    publish(
      new Map([
        [endpointA.id, workerA],
        [endpointB.id, workerB],
      ]),
    );
    const keyOfA = deliveryKeys.keyFor(endpointA.id);
    expect(await call(gatewayPort, '/e/b-app/x', keyOfA)).toBe(401);
    expect(workerB.seen).toEqual([]);
    expect(await call(gatewayPort, '/e/a-app/x', keyOfA)).toBe(200);
    expect(await call(gatewayPort, '/e/b-app/x', deliveryKeys.keyFor(endpointB.id))).toBe(200);
    expect(
      await call(gatewayPort, '/e/b-app/x', new DeliveryKeys({ secret: 'guessed' }).keyFor(endpointB.id)),
    ).toBe(401);
  });

  it("FAILS a job of an endpoint stored with a climbing jobsPath, and another owner's worker gets nothing", async () => {
    for (const jobsPath of ['/../b-app/x', '/%2e%2e/b-app/x', '/.%2e/b-app/x', '/..\\b-app/x']) {
      endpointA = { ...endpointA, spec: { ...endpointA.spec, jobsPath } };
      const job = await runOnA(`j-${jobsPath}`);
      expect(job.status).toBe('FAILED');
      expect(job.error).toContain(`the endpoint's jobsPath ${JSON.stringify(jobsPath)} holds`);
    }
    expect(workerB.seen).toEqual([]);
  });

  it("FAILS a job whose endpoint answers a redirect, and the redirect's target gets no request", async () => {
    const target = await startServer(json({ healthz: 'ok' }));
    const workerA = await startServer((res) => {
      res.writeHead(302, { location: `${target.url}/healthz` });
      res.end();
    });
    publish(
      new Map([
        [endpointA.id, workerA],
        [endpointB.id, workerB],
      ]),
    );
    const job = await runOnA('j-1');
    expect(job).toMatchObject({
      status: 'FAILED',
      output: null,
      error: "HTTP 302: the endpoint answered a redirect, and a job's delivery follows no redirect",
    });
    expect(target.seen).toEqual([]);
  });

  it('FAILS a job whose answer is past the limit, naming it, and the worker sees its connection closed early', async () => {
    const total = 64 * 1024 * 1024;
    let closed: Promise<{ written: number; ended: boolean }> | undefined;
    const workerA = await startServer((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      closed = writeMany(res, total, 'x');
    });
    publish(
      new Map([
        [endpointA.id, workerA],
        [endpointB.id, workerB],
      ]),
    );
    const job = await runOnA('j-1');
    expect(job).toMatchObject({
      status: 'FAILED',
      output: null,
      error:
        "the endpoint's answer is larger than 1048576 bytes, the limit of a job's output; the request was closed",
    });
    const worker = await closed;
    expect(worker?.ended).toBe(false);
    expect(worker?.written).toBeLessThan(total / 2);
  });
});
