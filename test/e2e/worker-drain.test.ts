/**
 * An owner's drain end to end in one process: the API (drain and undrain through inject), the controller, the
 * gateway on a real port and the `local` runtime running the test worker as node processes, over SQLite, wired
 * by src/main.ts as `corral serve` wires them. A drained worker gets no new request through the gateway; an undrain
 * before its removal brings it back.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApi } from '../../src/app/build-api.js';
import { buildTraffic, type Traffic } from '../../src/app/build-traffic.js';
import { loadConfig } from '../../src/config/config.js';
import { SecretBox } from '../../src/crypto/secret-box.js';
import type { GatewayMetrics } from '../../src/gateway/metrics.js';
import { LocalRuntime } from '../../src/runtime/local/local-runtime.js';
import { LABELS } from '../../src/runtime/types.js';
import { ApiKeyService } from '../../src/service/api-key-service.js';
import { connectSqlite } from '../../src/store/sqlite/connect.js';
import { Store } from '../../src/store/store.js';
import { sampleEndpoint } from '../support/fixtures.js';
import { WORKER_SCRIPT } from '../support/test-image.js';
import { fillIds, WAVERLESS } from '../support/wire-fixtures.js';

const APP = 'drain-me';

describe('an owner drains a worker through the API; the gateway stops and resumes sending it requests', () => {
  let dir: string;
  let store: Store;
  let runtime: LocalRuntime;
  let traffic: Traffic<GatewayMetrics> | undefined;
  let api: FastifyInstance;
  let key: string;
  let gatewayPort: number;
  const endpoint = sampleEndpoint({
    patch: {
      appName: APP,
      image: { ref: 'corral-test-worker:local', command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
      env: [
        { key: 'HOST', value: '127.0.0.1' },
        { key: 'GRACE_MS', value: '1000' },
      ],
      workers: { minWorkers: 2, maxWorkers: 2, maxConcurrent: 1, gpusPerWorker: 0 },
      health: { path: '/health' },
    },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'corral-drain-'));
    const config = loadConfig({
      flags: { config: join(dir, 'corral.yaml'), dataDir: dir },
      env: {},
      readFile: () => 'controller: { reconcileIntervalMs: 100 }\n',
    });
    store = new Store({ connection: connectSqlite(join(dir, 'corral.db')) });
    await store.migrate();
    runtime = new LocalRuntime({ stateDir: join(dir, 'local'), graceSeconds: 1 });
    const logger = pino({ level: 'silent' });
    const built = buildTraffic({ config, store, runtime, gpus: [], logger, registry: new Registry() });
    traffic = built;
    await new Promise<void>((resolve) => built.server.listen(0, '127.0.0.1', resolve));
    gatewayPort = (built.server.address() as AddressInfo).port;
    api = await buildApi({
      config,
      store,
      gpus: [],
      logger,
      secrets: new SecretBox({ key: randomBytes(32) }),
      onEndpointsChanged: () => built.controller.poke(),
    });
    key = (
      await new ApiKeyService({ store, clock: Date.now }).create({
        ownerId: 'owner-a',
        name: 'a',
        admin: false,
      })
    ).key;
    await store.endpoints.create(endpoint, [], {
      at: 0,
      ownerId: endpoint.ownerId,
      actor: 't',
      action: 'endpoint.create',
      targetId: endpoint.id,
    });
    built.start();
  }, 60_000);

  afterAll(async () => {
    await api?.close();
    await traffic?.close();
    if (runtime) {
      for (const w of await runtime.list({ [LABELS.managed]: 'true' })) {
        await runtime.remove(w.workerId, { graceSeconds: 1 }).catch(() => undefined);
      }
      await runtime.close();
    }
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const routable = () => traffic?.routes.routableWorkers(endpoint.id).map((w) => w.id) ?? [];
  /** GET through the gateway; resolves with the worker that answered (X-Corral-Worker). */
  const viaGateway = (path: string) =>
    new Promise<{ status: number; worker: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: gatewayPort,
          path,
          headers: { host: `${APP}.localhost:${gatewayPort}`, authorization: `Bearer ${key}` },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, worker: String(res.headers['x-corral-worker'] ?? '') }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
  const drain = async (workerId: string, on: boolean) => {
    const payload = on
      ? fillIds(WAVERLESS.drain, { workerId })
      : JSON.stringify({ workerID: workerId, drain: false });
    const answer = await api.inject({
      method: 'POST',
      url: '/gpu-instance/openapi/v1/endpoint/worker/drain',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload,
    });
    expect(answer.statusCode, answer.body).toBe(200);
  };
  const until = <T>(check: () => T | Promise<T>, timeout = 15_000) =>
    vi.waitFor(check, { timeout, interval: 50 });

  it('sends a drained worker no new request, and an undrained one requests again', async () => {
    await until(() => expect(routable()).toHaveLength(2));
    const [a] = routable() as [string, string];
    // One slow request on each worker (one slot each): the drained one has a request in flight to finish.
    const slow = [viaGateway('/work?ms=5000'), viaGateway('/work?ms=5000')];
    await until(() => expect(traffic?.gateway.workerLoad(endpoint.id, a).inFlight).toBe(1));

    await drain(a, true);
    await until(() => expect(routable()).not.toContain(a));
    // Replaced: a new worker serves beside the other one while the drained one finishes its request.
    await until(() => expect(routable()).toHaveLength(2));
    const served = await Promise.all([
      viaGateway('/work?ms=0'),
      viaGateway('/work?ms=0'),
      viaGateway('/work?ms=0'),
    ]);
    expect(served.map((s) => s.status)).toEqual([200, 200, 200]);
    expect(served.map((s) => s.worker)).not.toContain(a);
    expect(traffic?.gateway.workerLoad(endpoint.id, a).inFlight).toBe(1);

    // Undrained before its request ended: back in routing, and its drain ending later removes nothing.
    await drain(a, false);
    await until(() => expect(routable()).toContain(a));
    expect((await Promise.all(slow)).map((s) => s.status)).toEqual([200, 200]);
    // The surplus replacement goes (two workers wanted); the undrained one stays and serves.
    await until(() => expect(routable()).toHaveLength(2));
    expect(routable()).toContain(a);
    await until(async () => {
      const both = await Promise.all([viaGateway('/work?ms=200'), viaGateway('/work?ms=200')]);
      expect(both.map((s) => s.worker)).toContain(a);
    });
    expect((await runtime.list({ [LABELS.endpoint]: endpoint.id })).map((w) => w.workerId)).toContain(a);
  }, 60_000);
});
