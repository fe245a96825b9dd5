/**
 * A controller over the fake runtime and a SQLite store, on manual timers, for controller tests that need the whole
 * pass (outages, refusals): endpoints made and changed as the API does, time advanced by hand, logs kept.
 */
import { Controller, type ControllerOptions } from '../../src/controller/controller.js';
import { answered } from '../../src/controller/health/probe-result.js';
import { RoutingTable } from '../../src/controller/routing-table.js';
import type { Endpoint } from '../../src/domain/endpoint.js';
import type { SpecPatch } from '../../src/domain/spec-patch.js';
import { applyPatch } from '../../src/domain/spec-patch.js';
import { simulatedInventory } from '../../src/gpu/inventory.js';
import { FakeRuntime, type FakeRuntimeOptions } from '../../src/runtime/fake/fake-runtime.js';
import type { Store } from '../../src/store/store.js';
import { sampleEndpoint } from './fixtures.js';
import { ManualTimers, settle } from './manual-timers.js';
import { storeTargets } from './stores.js';

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  fields: object;
  message: string;
}

export interface ControllerHarness {
  store: Store;
  runtime: FakeRuntime;
  routes: RoutingTable;
  timers: ManualTimers;
  controller: Controller;
  logs: LogLine[];
  /** Ports whose worker fails its health check. */
  unhealthyPorts: Set<number>;
  create(patch?: SpecPatch): Promise<Endpoint>;
  /** Changes the endpoint as the API's update does (new updatedAt; a new revision when `newRevision`). */
  update(endpoint: Endpoint, patch: SpecPatch, newRevision?: boolean): Promise<void>;
  /** Runs whatever is due now, and the passes it starts. */
  flush(): Promise<void>;
  /** Lets simulated time pass in 5 ms steps until `check` holds (5 s of it at most). */
  eventually(check: () => Promise<void> | void): Promise<void>;
  close(): Promise<void>;
}

export async function controllerHarness(
  options: Partial<ControllerOptions> = {},
  runtimeOptions: Pick<FakeRuntimeOptions, 'checkpointer'> = {},
): Promise<ControllerHarness> {
  const [sqlite] = storeTargets();
  if (!sqlite) throw new Error('no sqlite target');
  const { store, dispose } = await sqlite.open();
  const timers = new ManualTimers(1_000_000);
  const runtime = new FakeRuntime({ clock: () => timers.now, timers, ...runtimeOptions });
  const routes = new RoutingTable();
  const logs: LogLine[] = [];
  const log = (level: LogLine['level']) => (fields: object, message: string) =>
    logs.push({ level, fields, message });
  const unhealthyPorts = new Set<number>();
  const controller = new Controller({
    store,
    runtime,
    gpus: simulatedInventory([{ productId: 'h100-80g', count: 2, cudaVersion: '12.4' }]),
    probe: async (address) => answered(unhealthyPorts.has(address.port) ? 503 : 200),
    logger: { info: log('info'), warn: log('warn'), error: log('error') },
    clock: () => timers.now,
    timers,
    routes,
    storagePaths: new Map(),
    revealCredentials: async () => undefined,
    intervalMs: 20,
    startingProbeIntervalMs: 5,
    backoff: { baseMs: 10, capMs: 50, crashLoopAfter: 3 },
    ...options,
  });
  const flush = async () => {
    for (let round = 0; round < 100; round++) {
      await timers.advanceSettling(0);
      await controller.passes.settled();
      await settle();
      if (timers.due() === 0 && controller.passes.idle) return;
    }
  };
  return {
    store,
    runtime,
    routes,
    timers,
    controller,
    logs,
    unhealthyPorts,
    create: async (patch = {}) => {
      const endpoint = sampleEndpoint({
        patch: { workers: { minWorkers: 1, maxWorkers: 3, gpusPerWorker: 1 }, ...patch },
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
    update: async (endpoint, patch, newRevision = false) => {
      await store.endpoints.mutate(
        endpoint.ownerId,
        endpoint.id,
        (current) => ({
          next: {
            ...current,
            spec: applyPatch(current.spec, patch),
            revision: current.revision + (newRevision ? 1 : 0),
            updatedAt: timers.now,
          },
          events: [],
        }),
        () => ({ at: timers.now, ownerId: endpoint.ownerId, actor: 't', action: 'u', targetId: endpoint.id }),
      );
      controller.poke();
    },
    flush,
    eventually: async (check) => {
      for (let waited = 0; ; waited += 5) {
        await flush();
        try {
          await check();
          return;
        } catch (error) {
          if (waited >= 5_000) throw error;
        }
        await timers.advanceSettling(5);
      }
    },
    close: async () => {
      await controller.stop();
      await runtime.close();
      await dispose();
    },
  };
}
