/**
 * The stack of figures 5 and 6: the real Controller + Gateway in this process, wired as `corral serve` wires
 * them (src/main.ts `buildTraffic`), with the `local` runtime running the test worker and a SQLite store; and
 * the endpoints the runs add and delete on it.
 */
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { buildTraffic } from '../../src/app/build-traffic.js';
import type { ScalingDecision } from '../../src/autoscaler/autoscaler.js';
import { ScalerMetrics } from '../../src/autoscaler/metrics.js';
import type { Config } from '../../src/config/config.js';
import type { Controller } from '../../src/controller/controller.js';
import type { RoutingTable } from '../../src/controller/routing-table.js';
import { apiKeyId, hashApiKey } from '../../src/crypto/api-keys.js';
import type { Endpoint, ScalingPolicy, WorkerSettings } from '../../src/domain/endpoint.js';
import type { Gateway } from '../../src/gateway/gateway.js';
import { LocalRuntime } from '../../src/runtime/local/local-runtime.js';
import { LABELS } from '../../src/runtime/types.js';
import { connectSqlite } from '../../src/store/sqlite/connect.js';
import { Store } from '../../src/store/store.js';
import { deleteEndpoint, sampleEndpoint } from '../../test/support/fixtures.js';
import { WORKER_SCRIPT } from '../../test/support/test-image.js';
import { listenLoopback, waitFor } from './http.js';
import { BENCH_KEY, devNullLogger, REMOVE_GRACE_S, serveDefaults } from './settings.js';

/** ScalerMetrics that also keeps each threshold crossing's decision, to report them one by one. */
export class RecordingScalerMetrics extends ScalerMetrics {
  readonly decisions: { endpointId: string; crossedAt: number; decidedAt: number; desired: number }[] = [];

  override observeScaleDecision(endpoint: string, decision: ScalingDecision, now: number): void {
    const crossed = decision.thresholdCrossedAt;
    if (
      crossed !== null &&
      crossed <= now &&
      !this.decisions.some((d) => d.endpointId === endpoint && d.crossedAt === crossed)
    ) {
      this.decisions.push({
        endpointId: endpoint,
        crossedAt: crossed,
        decidedAt: now,
        desired: decision.desired,
      });
    }
    super.observeScaleDecision(endpoint, decision, now);
  }
}

export interface Stack {
  store: Store;
  runtime: LocalRuntime;
  controller: Controller;
  gateway: Gateway;
  metrics: RecordingScalerMetrics;
  routes: RoutingTable;
  registry: Registry;
  port: number;
  config: Config;
  close(): Promise<void>;
}

const BENCH_OWNER = 'bench';

/** Controller + gateway (src/main.ts `buildTraffic`, as `corral serve` builds them) + local runtime + SQLite. */
export async function startStack(dir: string): Promise<Stack> {
  const config = serveDefaults();
  const store = new Store({ connection: connectSqlite(join(dir, 'corral.db')) });
  await store.migrate();
  // The key the bench's requests send: an API key of the owner of its endpoints (localEndpoint).
  await store.apiKeys.insert({
    id: apiKeyId(BENCH_KEY),
    ownerId: BENCH_OWNER,
    name: 'bench',
    secretHash: hashApiKey(BENCH_KEY),
    admin: false,
    createdAt: Date.now(),
  });
  const runtime = new LocalRuntime({ stateDir: join(dir, 'local'), graceSeconds: REMOVE_GRACE_S });
  const registry = new Registry();
  const metrics = new RecordingScalerMetrics({ registry });
  const traffic = buildTraffic({
    config,
    store,
    runtime,
    gpus: [],
    logger: devNullLogger(),
    registry,
    scalerMetrics: () => metrics,
  });
  const { controller, gateway, routes } = traffic;
  const port = await listenLoopback(traffic.server);
  traffic.start();
  return {
    store,
    runtime,
    controller,
    gateway,
    metrics,
    routes,
    registry,
    port,
    config,
    async close() {
      await traffic.close();
      const left = await runtime.list({ [LABELS.managed]: 'true' });
      await Promise.all(
        left.map((w) => runtime.remove(w.workerId, { graceSeconds: REMOVE_GRACE_S }).catch(() => undefined)),
      );
      await runtime.close();
      await store.close();
    },
  };
}

/** An endpoint whose worker is the test worker run by the local runtime with this node. */
export function localEndpoint(
  appName: string,
  workers: Partial<WorkerSettings>,
  scaling?: Partial<ScalingPolicy>,
) {
  const quote = (s: string) => `'${s.replaceAll("'", `'"'"'`)}'`;
  return sampleEndpoint({
    ownerId: BENCH_OWNER,
    at: Date.now(),
    patch: {
      appName,
      image: {
        ref: 'corral-test-worker:local',
        command: `${quote(process.execPath)} ${quote(WORKER_SCRIPT)}`,
      },
      port: 8000,
      env: [
        { key: 'HOST', value: '127.0.0.1' },
        { key: 'GRACE_MS', value: '1000' },
      ],
      workers: { gpusPerWorker: 0, ...workers },
      health: { path: '/health' },
      ...(scaling ? { scaling } : {}),
    },
  });
}

export async function addEndpoint(stack: Stack, endpoint: Endpoint): Promise<void> {
  const at = Date.now();
  await stack.store.endpoints.create(
    { ...endpoint, createdAt: at, updatedAt: at },
    [{ at, type: 'created', message: 'endpoint created', data: { revision: 1 } }],
    { at, ownerId: endpoint.ownerId, actor: 'bench', action: 'endpoint.create', targetId: endpoint.id },
  );
  stack.controller.poke();
  await waitFor(`the controller to see ${endpoint.spec.appName}`, () =>
    stack.routes.endpointByAppName(endpoint.spec.appName) ? true : undefined,
  );
}

/** Deletes the endpoint (as the API does) and waits until its workers' processes are gone. */
export async function removeEndpoint(stack: Stack, endpoint: Endpoint): Promise<void> {
  await deleteEndpoint(stack.store, endpoint);
  stack.controller.poke();
  await waitFor(
    `the workers of ${endpoint.spec.appName} to be removed`,
    async () => {
      const left = await stack.runtime.list({ [LABELS.endpoint]: endpoint.id });
      return left.length === 0 && stack.controller.workersOf(endpoint.id).length === 0 ? true : undefined;
    },
    { intervalMs: 20 },
  );
}
