/**
 * A leader that stepped down ends its last reconcile pass quietly: the LeaseLostError its fence throws is expected
 * then, and is logged once at info without a stack, never at error. Real store (SQLite), the fake runtime, a pino
 * logger whose lines are captured.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import { simulatedInventory } from '../gpu/inventory.js';
import { FakeRuntime } from '../runtime/fake/fake-runtime.js';
import { LeaseLostError } from '../store/leases.js';
import { Controller } from './controller.js';
import { answered } from './probe-result.js';
import { RoutingTable } from './routing-table.js';

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0).reverse()) await dispose();
});

it('logs the lease lost on a step-down at info, once and without a stack, and nothing at error', async () => {
  const [sqlite] = storeTargets();
  if (!sqlite) throw new Error('no store target');
  const { store, dispose } = await sqlite.open();
  disposers.push(dispose);
  const runtime = new FakeRuntime({ clock: Date.now });
  disposers.push(() => runtime.close());
  const claim = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
  if (!claim) throw new Error('not acquired');
  const endpoint = sampleEndpoint({ patch: { workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } } });
  await store.endpoints.create(endpoint, [], {
    at: 0,
    ownerId: endpoint.ownerId,
    actor: 't',
    action: 'c',
    targetId: endpoint.id,
  });
  const lines: { level: number; msg: string; err?: unknown; lease?: string }[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  // The elector's fence after a graceful step-down: the term is over, so every write's claim throws.
  const fence = {
    claim: () => {
      throw new LeaseLostError(claim);
    },
  };
  const controller = new Controller({
    store,
    runtime,
    fence,
    gpus: simulatedInventory([{ productId: 'h100-80g', count: 1, cudaVersion: '12.4' }]),
    probe: async () => answered(200),
    logger,
    clock: Date.now,
    routes: new RoutingTable(),
    storagePaths: new Map(),
    revealCredentials: async () => undefined,
    intervalMs: 20,
  });
  controller.start();
  disposers.push(() => controller.stop());
  const started = Date.now();
  while (!lines.some((line) => line.lease === 'controller') && Date.now() - started < 10_000) await sleep(20);
  await sleep(200);

  const leaseLines = lines.filter((line) => line.lease === 'controller');
  expect(leaseLines).toHaveLength(1);
  expect(leaseLines[0]).toMatchObject({
    level: 30,
    msg: 'reconcile pass stopped: the lease is no longer held',
  });
  expect(leaseLines[0]).not.toHaveProperty('err');
  expect(lines.filter((line) => line.level >= 50)).toEqual([]);
  expect(JSON.stringify(lines)).not.toContain('LeaseLostError');
});
