/**
 * A controller over the fake runtime and a SQLite store, on manual timers (no real time passes): what the
 * controller suites beside controller.test.ts share. `flush` runs what is due now; `advance` lets simulated time
 * pass in steps, a pass and its probes running at each.
 */

import { Controller, type ControllerOptions } from '../../src/controller/controller.js';
import { answered } from '../../src/controller/health/probe-result.js';
import { RoutingTable } from '../../src/controller/routing-table.js';
import type { Endpoint } from '../../src/domain/endpoint.js';
import type { SpecPatch } from '../../src/domain/spec-patch.js';
import { simulatedInventory } from '../../src/gpu/inventory.js';
import { FakeRuntime } from '../../src/runtime/fake/fake-runtime.js';
import type { Store } from '../../src/store/store.js';
import { sampleEndpoint } from './fixtures.js';
import { ManualTimers, settle } from './manual-timers.js';
import { storeTargets } from './stores.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

export interface ControllerHarness {
  store: Store;
  runtime: FakeRuntime;
  timers: ManualTimers;
  routes: RoutingTable;
  /** Whether the worker on this (fake) port answers its health check. */
  healthy: (port: number) => boolean;
  controller(options?: Partial<ControllerOptions>): Controller;
  create(options?: { ownerId?: string; patch?: SpecPatch }): Promise<Endpoint>;
  /** Runs whatever is due now: timers, and the passes they start, until nothing is left at this time. */
  flush(): Promise<void>;
  /** Lets `ms` of simulated time pass in `stepMs` steps, flushing at each. */
  advance(ms: number, stepMs?: number): Promise<void>;
  /** Lets simulated time pass in 5 ms steps until `check` holds (`limitMs` of it at most). */
  eventually(check: () => Promise<void> | void, limitMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function controllerHarness(): Promise<ControllerHarness> {
  const [sqlite] = storeTargets();
  if (!sqlite) throw new Error('no sqlite target');
  const { store, dispose } = await sqlite.open();
  const timers = new ManualTimers(1_000_000);
  const runtime = new FakeRuntime({ clock: () => timers.now, timers });
  const routes = new RoutingTable();
  const controllers: Controller[] = [];

  const h: ControllerHarness = {
    store,
    runtime,
    timers,
    routes,
    healthy: () => true,
    controller(options = {}) {
      const c = new Controller({
        store,
        runtime,
        gpus: simulatedInventory([{ productId: 'h100-80g', count: 2, cudaVersion: '12.4' }]),
        probe: async (address) => answered(h.healthy(address.port) ? 200 : 503),
        logger: silent,
        clock: () => timers.now,
        timers,
        routes,
        storagePaths: new Map(),
        revealCredentials: async () => undefined,
        intervalMs: 20,
        // An endpoint's changes are reconciled on the next turn, as flush() runs it (the default waits 20 ms).
        coalesceMs: 0,
        startingProbeIntervalMs: 5,
        ...options,
      });
      controllers.push(c);
      return c;
    },
    async create(options = {}) {
      const endpoint = sampleEndpoint({
        ...(options.ownerId ? { ownerId: options.ownerId } : {}),
        patch: { workers: { minWorkers: 1, maxWorkers: 3, gpusPerWorker: 1 }, ...options.patch },
      });
      await store.endpoints.create(endpoint, [], {
        at: 0,
        ownerId: endpoint.ownerId,
        actor: 't',
        action: 'c',
        targetId: endpoint.id,
      });
      return endpoint;
    },
    async flush() {
      for (let round = 0; round < 100; round++) {
        await timers.advanceSettling(0);
        await Promise.all(controllers.map((c) => c.passes.settled()));
        await settle();
        if (timers.due() === 0 && controllers.every((c) => c.passes.idle)) return;
      }
    },
    async advance(ms, stepMs = 5) {
      for (let passed = 0; passed < ms; passed += stepMs) {
        await h.flush();
        await timers.advanceSettling(Math.min(stepMs, ms - passed));
      }
      await h.flush();
    },
    async eventually(check, limitMs = 5_000) {
      for (let waited = 0; ; waited += 5) {
        await h.flush();
        try {
          await check();
          return;
        } catch (error) {
          if (waited >= limitMs) throw error;
        }
        await timers.advanceSettling(5);
      }
    },
    async close() {
      for (const c of controllers.splice(0)) await c.stop();
      await runtime.close();
      await dispose();
    },
  };
  return h;
}
