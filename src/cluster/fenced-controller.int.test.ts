/**
 * A deposed leader's controller acts on nothing: once another replica holds the lease, its runtime creates and
 * removes and its writes to the workers table are refused by the fencing token on the database, even while its own
 * clock still believes the term runs (a process resumed from a pause before its timers ran). Real store (SQLite,
 * PostgreSQL when configured), the fake runtime, real timers with short intervals.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import { Controller } from '../controller/controller.js';
import { answered } from '../controller/health/probe-result.js';
import { RoutingTable } from '../controller/routing-table.js';
import { simulatedInventory } from '../gpu/inventory.js';
import { FakeRuntime } from '../runtime/fake/fake-runtime.js';
import { LABELS } from '../runtime/types.js';
import { type LeaseClaim, LeaseLostError } from '../store/cluster/leases.js';
import type { Store } from '../store/store.js';
import { FencedRuntime } from './fenced-runtime.js';

async function until(what: string, check: () => Promise<boolean>, withinMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms: ${what}`);
    await sleep(10);
  }
}

describe.each(storeTargets())('a deposed leader on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let runtime: FakeRuntime;
  let controller: Controller | undefined;
  const errors: unknown[] = [];

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    runtime = new FakeRuntime({ clock: Date.now });
    errors.length = 0;
  });
  afterEach(async () => {
    await controller?.stop();
    await runtime.close();
    await dispose();
  });

  /** A controller acting under `claim`, whose own clock never ends the term: only the database can refuse it. */
  function leaderUnder(claim: LeaseClaim): Controller {
    const fence = { claim: () => claim };
    return new Controller({
      store,
      runtime: new FencedRuntime({ runtime, fence, leases: store.leases }),
      fence,
      gpus: simulatedInventory([{ productId: 'h100-80g', count: 4, cudaVersion: '12.4' }]),
      probe: async () => answered(200),
      logger: {
        info: () => undefined,
        warn: (fields) => 'err' in fields && errors.push(fields.err),
        error: (fields) => 'err' in fields && errors.push(fields.err),
      },
      clock: Date.now,
      routes: new RoutingTable(),
      storagePaths: new Map(),
      revealCredentials: async () => undefined,
      intervalMs: 20,
      startingProbeIntervalMs: 5,
    });
  }

  const containers = async () => (await runtime.list({ [LABELS.managed]: 'true' })).length;
  const rows = async () => (await store.workers.listAll()).length;

  it('creates, removes and writes worker rows no more once another replica took the lease', async () => {
    const claim = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    if (!claim) throw new Error('not acquired');
    const endpoint = sampleEndpoint({
      patch: { workers: { minWorkers: 1, maxWorkers: 3, gpusPerWorker: 1 } },
    });
    await store.endpoints.create(endpoint, [], {
      at: 0,
      ownerId: endpoint.ownerId,
      actor: 't',
      action: 'c',
      targetId: endpoint.id,
    });
    controller = leaderUnder(claim);
    controller.start();
    await until(
      'one running worker with its row',
      async () => (await containers()) === 1 && (await rows()) === 1,
    );

    // Another replica takes over (this one's lease released as if expired), under the next token.
    await store.leases.release(claim);
    const next = await store.leases.tryAcquire('controller', 'rep-b', 60_000);
    expect(next?.token).toBe(claim.token + 1);
    // Every write of the old term landed before the takeover returned (FOR SHARE on PostgreSQL, serial SQLite):
    // from here on the row must not change.
    const rowBefore = (await store.workers.listAll())[0];
    expect(rowBefore).toBeDefined();

    // The deposed controller is asked for two workers: no create reaches the runtime, no row is written.
    await store.endpoints.mutate(
      endpoint.ownerId,
      endpoint.id,
      (current) => ({
        next: {
          ...current,
          spec: { ...current.spec, workers: { ...current.spec.workers, minWorkers: 2 } },
          updatedAt: Date.now(),
        },
        events: [],
      }),
      () => ({ at: Date.now(), ownerId: endpoint.ownerId, actor: 't', action: 'u', targetId: endpoint.id }),
    );
    controller.poke();
    await until('a refusal', async () => errors.some((e) => e instanceof LeaseLostError));
    await sleep(200);
    expect(await containers()).toBe(1);
    expect(await store.workers.listAll()).toEqual([rowBefore]);

    // Nor does a deletion make it remove the worker it has.
    await deleteEndpoint(store, endpoint);
    controller.poke();
    await sleep(300);
    expect(await containers()).toBe(1);
    expect(await store.workers.listAll()).toEqual([rowBefore]);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e instanceof LeaseLostError)).toBe(true);
  }, 20_000);
});
