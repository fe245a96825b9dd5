import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import { ManualTimers, settle } from '../../../test/support/manual-timers.js';
import { storeTargets } from '../../../test/support/stores.js';
import { SecretBox } from '../../crypto/secret-box.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { simulatedInventory } from '../../gpu/inventory.js';
import { FakeRuntime } from '../../runtime/fake/fake-runtime.js';
import type { WorkerSpec } from '../../runtime/types.js';
import { SecretService } from '../../service/secret-service.js';
import type { Store } from '../../store/store.js';
import { Controller } from '../controller.js';
import { answered } from '../health/probe-result.js';
import { RoutingTable } from '../routing-table.js';

describe('a starting worker gets its secrets resolved, and only then', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let timers: ManualTimers;
  let runtime: FakeRuntime;
  let controller: Controller;
  let secrets: SecretService;
  const started: WorkerSpec[] = [];
  const logged: string[] = [];
  const owner = { ownerId: 'owner-a', keyId: 'k', admin: false };

  beforeEach(async () => {
    const target = storeTargets()[0];
    if (!target) throw new Error('no store');
    ({ store, dispose } = await target.open());
    timers = new ManualTimers(1_000_000);
    runtime = new FakeRuntime({ clock: () => timers.now, timers });
    const create = runtime.create.bind(runtime);
    runtime.create = (spec, onProgress) => {
      started.push(spec);
      return create(spec, onProgress);
    };
    secrets = new SecretService({
      store,
      clock: () => timers.now,
      secrets: new SecretBox({ key: randomBytes(32) }),
    });
    const log = (fields: object, message: string) => logged.push(`${message} ${JSON.stringify(fields)}`);
    controller = new Controller({
      store,
      runtime,
      gpus: simulatedInventory([{ productId: 'h100-80g', count: 2, cudaVersion: '12.4' }]),
      probe: async () => answered(200),
      logger: { info: log, warn: log, error: log },
      clock: () => timers.now,
      timers,
      routes: new RoutingTable(),
      storagePaths: new Map(),
      revealCredentials: async () => undefined,
      resolveEnv: (ownerId, env) => secrets.resolveEnv(ownerId, env),
      intervalMs: 20,
      backoff: { baseMs: 10, capMs: 50, crashLoopAfter: 3 },
    });
  });
  afterEach(async () => {
    await controller.stop();
    await runtime.close();
    await dispose();
    started.length = 0;
    logged.length = 0;
  });

  const create = async (value: string, env = [{ key: 'HF_TOKEN', value }]): Promise<Endpoint> => {
    const endpoint = sampleEndpoint({
      patch: { workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 }, env },
    });
    await store.endpoints.create(endpoint, [], {
      at: 0,
      ownerId: endpoint.ownerId,
      actor: 't',
      action: 'c',
      targetId: endpoint.id,
    });
    return endpoint;
  };
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 5) {
      await timers.advanceSettling(5);
      await controller.passes.settled();
      await settle();
    }
  };

  it('the runtime gets the value, the store keeps the reference, and no log line holds the value', async () => {
    await secrets.save(owner, { name: 'hf', value: 'hf_value_7f3a' });
    const endpoint = await create('Bearer {{ CORRAL_SECRET_hf }}');
    controller.start();
    await run(200);
    expect(started[0]?.env.HF_TOKEN).toBe('Bearer hf_value_7f3a');
    expect((await store.endpoints.get('owner-a', endpoint.id))?.spec.env).toEqual([
      { key: 'HF_TOKEN', value: 'Bearer {{ CORRAL_SECRET_hf }}' },
    ]);
    expect(logged.join('\n')).toMatch(/worker \S+ started/);
    expect(logged.join('\n')).not.toContain('hf_value_7f3a');
  });

  it('a reference to a missing secret fails the worker, naming the env and the secret', async () => {
    const endpoint = await create('{{ CORRAL_SECRET_gone }}');
    controller.start();
    await run(200);
    expect(started).toEqual([]);
    const failed = (await store.workers.listByEndpoint(endpoint.id)).find((w) => w.status.state === 'failed');
    expect(failed?.status).toEqual({
      state: 'failed',
      error: 'RUNTIME_ERROR',
      message: 'environment variable HF_TOKEN references secret "gone", which does not exist',
    });
  });

  const failure = async (endpoint: Endpoint) =>
    (await store.workers.listByEndpoint(endpoint.id)).find((w) => w.status.state === 'failed')?.status;

  it('a secret grown past the bound on the resolved env fails the start, naming the limit, before the env is built', async () => {
    // Within the bound when the spec was checked (16 x 30 KB), past it once the secret is 32 KiB (16 x 32 KiB).
    await secrets.save(owner, { name: 'cert', value: 'c'.repeat(32 * 1024) });
    const env = Array.from({ length: 16 }, (_, i) => ({
      key: `CERT_${i}`,
      value: '{{ CORRAL_SECRET_cert }}',
    }));
    const endpoint = await create('', env);
    controller.start();
    await run(200);
    expect(started).toEqual([]);
    expect(await failure(endpoint)).toEqual({
      state: 'failed',
      error: 'RUNTIME_ERROR',
      message: expect.stringMatching(
        /^cannot start the worker: the env with its secrets resolved is 5\d{5} bytes; at most 524288 \(512 KiB, the resolvedEnvBytes limit\) are allowed/,
      ),
    });
  });

  it('thousands of references to one large secret are refused by their count, never resolved', async () => {
    await secrets.save(owner, { name: 'big', value: 'b'.repeat(32 * 1024) });
    // 2,142 references in 45 KB of spec: about 70 MB once resolved.
    const value = '{{CORRAL_SECRET_big}}'.repeat(102);
    const env = Array.from({ length: 21 }, (_, i) => ({ key: `E${i}`, value }));
    const endpoint = await create('', env);
    controller.start();
    await run(200);
    expect(started).toEqual([]);
    expect((await failure(endpoint))?.message).toContain(
      'the env has 2142 secret references; at most 1000 are allowed (the secretReferences limit)',
    );
  });
});
