/**
 * A real gateway in front of an in-memory store's endpoints, listening on 127.0.0.1 for a unit test: its routing
 * table and key checks are the test's, its logs are dropped, and it closes (its worker pools with it) after the test.
 */
import { createServer } from 'node:http';
import { Gateway } from '../../src/gateway/gateway.js';
import { WorkerPools } from '../../src/gateway/pools.js';
import type { GatewayRoute } from '../../src/gateway/router.js';
import type { RoutingView } from '../../src/ports/routing-view.js';
import type { CallerKeys } from '../../src/service/caller-keys.js';
import type { Store } from '../../src/store/store.js';
import type { ManualTimers } from './manual-timers.js';
import type { TestServers } from './test-servers.js';

/** Starts the gateway (the jobs API's `routes` in front of the endpoints', if any); its port. */
export async function startStoreGateway(
  servers: TestServers,
  o: { store: Store; routing: RoutingView; timers: ManualTimers; keys: CallerKeys; routes?: GatewayRoute[] },
): Promise<number> {
  const pools = new WorkerPools({ connectTimeoutMs: 1_000 });
  const gateway = new Gateway({
    routing: o.routing,
    pools,
    domain: 'localhost',
    clock: () => o.timers.now,
    timers: o.timers,
    logger: { info: () => {}, warn: () => {} },
    bodyLimitBytes: 1024 * 1024,
    maxQueueLength: 10,
    queueTimeoutMs: 5_000,
    findEndpoint: (appName) => o.store.endpoints.findByAppName(appName),
    keys: o.keys,
    ...(o.routes ? { routes: o.routes } : {}),
  });
  const port = await servers.listen(createServer(gateway.handleRequest));
  servers.cleanups.push(async () => {
    gateway.close();
    await pools.close();
  });
  return port;
}
