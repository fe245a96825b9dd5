/**
 * Issue 31: who may call an endpoint is one rule (service/endpoint-access.ts) over one cache of key checks
 * (service/caller-keys.ts), for both of its callers: the gateway's endpoint URLs and the jobs routes
 * (`/v2/{endpoint}/run`), as `corral serve` wires them (build-jobs.ts `callerKeyChecks`: the store's keys and the
 * delivery keys). A real gateway in front of the real jobs routes, a real worker server, an in-memory SQLite store
 * and real keys; time is a manual clock.
 */
import { createServer, request } from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import { sampleEndpoint, storeEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { startStoreGateway } from '../../test/support/store-gateway.js';
import { testServers } from '../../test/support/test-servers.js';
import { RoutingTable } from '../controller/routing-table.js';
import { generateInvokeKey } from '../crypto/invoke-keys.js';
import type { Endpoint } from '../domain/endpoint.js';
import { JobClientRoutes } from '../jobs/client-routes.js';
import { JobEvents } from '../jobs/job-events.js';
import { JobService } from '../jobs/job-service.js';
import { Wakeups } from '../jobs/wakeups.js';
import { ApiKeyService } from '../service/api-key-service.js';
import { KEY_CACHE_TTL_MS } from '../service/caller-keys.js';
import { DeliveryKeys } from '../service/delivery-keys.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { callerKeyChecks } from './build-jobs.js';

const servers = testServers();
const { cleanups, listen } = servers;

describe("an endpoint's callers: one rule and one cache for its URL and its jobs", () => {
  let store: Store;
  let timers: ManualTimers;
  let port: number;
  let endpoint: Endpoint;
  let other: Endpoint;
  let open: Endpoint;
  let invokeKeys: InvokeKeyService;
  let deliveryKeys: DeliveryKeys;
  /** The store's key checks so far (the cache in front asks once per key per KEY_CACHE_TTL_MS). */
  let storeChecks: number;

  const apiKeyOf = async (ownerId: string): Promise<string> =>
    (
      await new ApiKeyService({ store, clock: () => timers.now }).create({
        ownerId,
        name: ownerId,
        admin: false,
      })
    ).key;

  const invokeKeyOf = async (of: Endpoint): Promise<{ id: string; key: string }> => {
    const made = await invokeKeys.create({ ownerId: of.ownerId, keyId: 'k', admin: false }, of.id, 'caller');
    return { id: made.id, key: made.key };
  };

  /** A call's status: GET of the endpoint's URL (path form), or POST of a job to `/v2/{id}/run`. */
  const call = (path: string, key: string | undefined): Promise<number> =>
    new Promise((resolve, reject) => {
      const post = path.startsWith('/v2/');
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path,
          method: post ? 'POST' : 'GET',
          headers: {
            ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
            ...(post ? { 'content-type': 'application/json' } : {}),
          },
          agent: false,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(post ? '{"input":{"prompt":"hi"}}' : undefined);
    });
  /** The status of the same key at the endpoint's URL and at its jobs' `run`. */
  const both = async (of: Endpoint, key: string | undefined): Promise<{ url: number; jobs: number }> => ({
    url: await call(`/e/${of.spec.appName}/work`, key),
    jobs: await call(`/v2/${of.id}/run`, key),
  });

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    cleanups.push(() => store.close());
    timers = new ManualTimers(1_000_000);
    const clock = () => timers.now;
    endpoint = sampleEndpoint({ ownerId: 'owner-a', patch: { appName: 'a-app' } });
    other = sampleEndpoint({ ownerId: 'owner-a', patch: { appName: 'a-other' } });
    open = sampleEndpoint({ ownerId: 'owner-a', patch: { appName: 'a-open', public: true } });
    for (const e of [endpoint, other, open]) await storeEndpoint(store, e);
    const worker = createServer((req, res) => {
      req.resume();
      res.end('served');
    });
    const workerPort = await listen(worker);
    const routes = new RoutingTable();
    routes.publish(
      [endpoint, other, open],
      new Map(
        [endpoint, open].map((e) => [
          e.id,
          [{ id: `w-${e.id}`, address: { host: '127.0.0.1', port: workerPort } }],
        ]),
      ),
    );
    invokeKeys = new InvokeKeyService({ store, clock });
    deliveryKeys = new DeliveryKeys({ secret: 'the server secret of these tests' });
    storeChecks = 0;
    const keys = callerKeyChecks({
      deliveryKeys,
      verifyKey: (key) => {
        storeChecks += 1;
        return invokeKeys.grant(key);
      },
      store,
      clock,
      timers,
    });
    const service = new JobService({
      jobs: store.jobs,
      clock,
      wakeups: new Wakeups({ timers, recheckMs: 500 }),
      events: new JobEvents(),
      findEndpoints: (ref, reach, limit) => store.endpoints.matching(ref, reach, limit),
      findModelEndpoints: (reach, limit) => store.endpoints.withOpenAIModel(reach, limit),
      keys,
      retention: { asyncMs: 60_000, syncMs: 60_000 },
    });
    const logger = { warn: () => {}, error: () => {} };
    port = await startStoreGateway(servers, {
      store,
      routing: routes,
      timers,
      keys,
      routes: [new JobClientRoutes({ service, clock, domain: 'localhost', logger })],
    });
  });

  it("lets the owner's key and the endpoint's invoke key call both", async () => {
    expect(await both(endpoint, await apiKeyOf('owner-a'))).toEqual({ url: 200, jobs: 200 });
    expect(await both(endpoint, (await invokeKeyOf(endpoint)).key)).toEqual({ url: 200, jobs: 200 });
  });

  it("refuses another owner's key on both (the jobs routes do not say the endpoint exists)", async () => {
    expect(await both(endpoint, await apiKeyOf('owner-b'))).toEqual({ url: 401, jobs: 404 });
  });

  it('refuses an invoke key of another endpoint on both', async () => {
    expect(await both(endpoint, (await invokeKeyOf(other)).key)).toEqual({ url: 401, jobs: 404 });
  });

  it("refuses, on both, an invoke key made for the endpoint whose owner is not the endpoint's", async () => {
    const made = generateInvokeKey();
    await store.invokeKeys.insert({
      id: made.id,
      endpointId: endpoint.id,
      ownerId: 'owner-b',
      name: 'foreign',
      createdAt: 1,
      secretHash: made.secretHash,
    });
    expect(await both(endpoint, made.key)).toEqual({ url: 401, jobs: 404 });
  });

  it("takes a job delivery's key at its endpoint's URL alone, never at its jobs routes", async () => {
    expect(await both(endpoint, deliveryKeys.keyFor(endpoint.id))).toEqual({ url: 200, jobs: 401 });
  });

  it('checks a key once for both, and refuses a revoked key on both once the check is older than the bound', async () => {
    const invoke = await invokeKeyOf(endpoint);
    expect(await both(endpoint, invoke.key)).toEqual({ url: 200, jobs: 200 });
    expect(storeChecks).toBe(1);
    await invokeKeys.revoke({ ownerId: 'owner-a', keyId: 'k', admin: false }, endpoint.id, invoke.id);
    timers.advance(KEY_CACHE_TTL_MS - 1);
    // Within the bound: the cached check stands on both, the store not asked again.
    expect(await both(endpoint, invoke.key)).toEqual({ url: 200, jobs: 200 });
    expect(storeChecks).toBe(1);
    timers.advance(1);
    expect(await both(endpoint, invoke.key)).toEqual({ url: 401, jobs: 401 });
    expect(storeChecks).toBe(2);
  });

  it("opens a public endpoint's URL without a key, and never its jobs", async () => {
    expect(await both(open, undefined)).toEqual({ url: 200, jobs: 401 });
    expect(await both(open, await apiKeyOf('owner-b'))).toEqual({ url: 200, jobs: 404 });
    expect(await both(open, await apiKeyOf('owner-a'))).toEqual({ url: 200, jobs: 200 });
  });
});
