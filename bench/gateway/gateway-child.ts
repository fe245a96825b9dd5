/** The `gateway` role: the gateway as `corral serve` wires it, routing to the one bench worker through a stub. */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Registry } from 'prom-client';
import type { Gateway } from '../../src/gateway/gateway.js';
import { systemClock } from '../../src/ports/clock.js';
import type { RoutingView } from '../../src/ports/routing-view.js';
import { listenLoopback } from './http.js';
import { UPSTREAM_ENV } from './processes.js';
import { serveUntilStopped } from './proxy-child.js';
import { APP_NAME, BENCH_KEY, benchEndpoint, devNullLogger, REPO_ROOT, serveDefaults } from './settings.js';

/**
 * The gateway's modules as `corral serve` runs them: compiled by `npm run build` into dist/ (the suite builds it
 * first). Not through tsx: tsx compiles with esbuild's keepNames, which wraps every function the gateway makes per
 * request in a `__name(...)` call that the shipped code does not pay.
 */
async function compiledGatewayModules() {
  const dist = (file: string) => pathToFileURL(join(REPO_ROOT, 'dist', 'gateway', file)).href;
  const [gateway, pools, metrics, server, keys] = await Promise.all([
    import(dist('gateway.js')) as Promise<typeof import('../../src/gateway/gateway.js')>,
    import(dist('pools.js')) as Promise<typeof import('../../src/gateway/pools.js')>,
    import(dist('metrics.js')) as Promise<typeof import('../../src/gateway/metrics.js')>,
    import(dist('server.js')) as Promise<typeof import('../../src/gateway/server.js')>,
    import(pathToFileURL(join(REPO_ROOT, 'dist', 'service', 'caller-keys.js')).href) as Promise<
      typeof import('../../src/service/caller-keys.js')
    >,
  ]);
  return {
    Gateway: gateway.Gateway,
    WorkerPools: pools.WorkerPools,
    GatewayMetrics: metrics.GatewayMetrics,
    createGatewayServer: server.createGatewayServer,
    CallerKeys: keys.CallerKeys,
  };
}

/** Runs in the child, until the parent says stop. */
export async function gatewayChild(): Promise<void> {
  const upstreamPort = Number(process.env[UPSTREAM_ENV]);
  const config = serveDefaults();
  const endpoint = benchEndpoint();
  const workers = [{ id: 'bench-worker', address: { host: '127.0.0.1', port: upstreamPort } }];
  const routing: RoutingView = {
    endpointByAppName: (appName) => (appName === APP_NAME ? endpoint : undefined),
    endpointById: (endpointId) => (endpointId === endpoint.id ? endpoint : undefined),
    routableWorkers: (endpointId) => (endpointId === endpoint.id ? workers : []),
    conditionOf: () => undefined,
    onChange: () => () => {},
    requestRefresh: () => {},
  };
  const compiled = await compiledGatewayModules();
  const registry = new Registry();
  // Its load is read at scrape time, from the gateway made next.
  const metrics = new compiled.GatewayMetrics({ registry, load: () => gateway.stats() });
  const pools = new compiled.WorkerPools({ keepAliveTimeoutMs: config.gateway.workerKeepAliveMs });
  const gateway: Gateway = new compiled.Gateway({
    routing,
    pools,
    metrics,
    domain: config.domain,
    clock: systemClock,
    logger: devNullLogger(),
    bodyLimitBytes: config.gateway.bodyLimitBytes,
    maxQueueLength: config.gateway.maxQueueLength,
    queueTimeoutMs: config.gateway.queueTimeoutSeconds * 1000,
    findEndpoint: async (appName) => (appName === APP_NAME ? endpoint : undefined),
    keys: new compiled.CallerKeys({
      verify: async (key) => (key === BENCH_KEY ? { ownerId: endpoint.ownerId, admin: false } : undefined),
      clock: systemClock,
    }),
  });
  const started = gateway;
  const server = compiled.createGatewayServer(gateway, {
    maxRequestTimeoutSeconds: config.limits.requestTimeoutSeconds.max,
    queueTimeoutSeconds: config.gateway.queueTimeoutSeconds,
  });
  const port = await listenLoopback(server);
  serveUntilStopped(port, async () => {
    started.close();
    server.close();
    server.closeAllConnections();
    await pools.close(1_000);
    process.exit(0);
  });
}
