/**
 * The setup of parts 1 and 3: a seeded store and a controller over a runtime (a FakeRuntime, or the Kubernetes
 * runtime on the API stand-in), started as `corral serve` starts it and run until every worker is running and
 * healthy; the batched probe; and the line that describes a convergence.
 */
import { performance } from 'node:perf_hooks';
import { Controller, type HealthProbe } from '../../src/controller/controller.js';
import { answered, type ProbeResult } from '../../src/controller/health/probe-result.js';
import type { WorkerPlacement } from '../../src/controller/placement/worker-placement.js';
import { RoutingTable } from '../../src/controller/routing-table.js';
import type { Endpoint } from '../../src/domain/endpoint.js';
import { FakeRuntime } from '../../src/runtime/fake/fake-runtime.js';
import type { WorkerRuntime } from '../../src/runtime/types.js';
import type { Store } from '../../src/store/store.js';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { formatMs, summarize } from '../support.js';
import {
  CONVERGE_MAX_MS,
  devNullLogger,
  ENDPOINTS,
  SERVE_INTERVAL_MS,
  sleep,
  TOTAL_WORKERS,
  WORKERS_PER_ENDPOINT,
} from './settings.js';
import { insertEndpoint, openSqlite } from './store.js';

/** A runtime for the controller under test, with how it places workers and what it was asked to do. */
export interface BenchRuntime<R extends WorkerRuntime> {
  runtime: R;
  /** Default: Corral's inventory (empty: the bench's workers need no GPU). */
  placement?: WorkerPlacement;
  /** Creates and removes of workers the runtime has been asked for so far. */
  counters(): { creates: number; removes: number };
  /**
   * Called with the seeded endpoints before the controller starts: a runtime may make their workers beforehand, as
   * a restarted `corral serve` finds them (the controller then adopts them instead of creating them).
   */
  seed?(endpoints: readonly Endpoint[]): Promise<void>;
  close(): Promise<void>;
}

export interface Setup<R extends WorkerRuntime> {
  store: Store;
  runtime: R;
  counters: BenchRuntime<R>['counters'];
  controller: Controller;
  /** Every whole pass the controller ran, in ms. */
  passes: number[];
  /** Every endpoint's own reconcile it ran (from its work queue), in ms. */
  endpointReconciles: number[];
  converged: boolean;
  convergeMs: number;
  dispose(): Promise<void>;
}

export type FakeSetup = Setup<FakeRuntime>;

async function fakeRuntime(): Promise<BenchRuntime<FakeRuntime>> {
  const runtime = new FakeRuntime({ clock: Date.now });
  return { runtime, counters: () => runtime.counters, close: () => runtime.close() };
}

/**
 * Seeds a fresh store, starts a controller over a fresh FakeRuntime as `corral serve` starts it, and waits until
 * all workers are running and healthy in the controller and in the store and every endpoint is serving, or
 * until CONVERGE_MAX_MS. The controller is stopped (its loop and probes) before this returns. The deadline is
 * also enforced from inside the passes: a controller whose passes never yield to the event loop would
 * otherwise keep this function's own timer from firing.
 */
export function converge(probe: HealthProbe): Promise<FakeSetup>;
export function converge<R extends WorkerRuntime>(
  probe: HealthProbe,
  make: () => Promise<BenchRuntime<R>>,
  maxMs?: number,
  tweak?: (controller: Controller) => void,
): Promise<Setup<R>>;
export async function converge<R extends WorkerRuntime>(
  probe: HealthProbe,
  make?: () => Promise<BenchRuntime<R>>,
  maxMs = CONVERGE_MAX_MS,
  tweak?: (controller: Controller) => void,
): Promise<Setup<R>> {
  const { store, dispose: disposeStore } = await openSqlite();
  const bench = await (make ?? (fakeRuntime as unknown as () => Promise<BenchRuntime<R>>))();
  const { runtime } = bench;
  const controller = new Controller({
    store,
    runtime,
    gpus: [],
    ...(bench.placement ? { placement: bench.placement } : {}),
    probe,
    logger: devNullLogger(),
    clock: Date.now,
    routes: new RoutingTable(),
    storagePaths: new Map(),
    revealCredentials: async () => undefined,
    intervalMs: SERVE_INTERVAL_MS,
  });
  const dispose = async () => {
    await controller.stop();
    await bench.close();
    await disposeStore();
  };
  try {
    const endpoints: Endpoint[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const endpoint = sampleEndpoint({
        ownerId: 'bench',
        patch: {
          name: `bench-${i}`,
          workers: { minWorkers: WORKERS_PER_ENDPOINT, maxWorkers: WORKERS_PER_ENDPOINT, gpusPerWorker: 0 },
        },
      });
      await insertEndpoint(store, endpoint);
      endpoints.push(endpoint);
    }
    await bench.seed?.(endpoints);
    tweak?.(controller);
    const passes: number[] = [];
    const endpointReconciles: number[] = [];
    const reconcileEndpoint = controller.reconcileEndpoint.bind(controller);
    controller.reconcileEndpoint = async (endpointId) => {
      const start = performance.now();
      try {
        await reconcileEndpoint(endpointId);
      } finally {
        endpointReconciles.push(performance.now() - start);
      }
    };
    const reconcile = controller.reconcile.bind(controller);
    const convergeStart = performance.now();
    let stopping = false;
    controller.reconcile = async () => {
      const start = performance.now();
      try {
        await reconcile();
      } finally {
        passes.push(performance.now() - start);
        if (!stopping && performance.now() - convergeStart > maxMs) {
          stopping = true;
          void controller.stop();
        }
      }
    };
    controller.start();
    let converged = false;
    while (performance.now() - convergeStart < maxMs) {
      await sleep(20);
      const workers = controller.workers();
      if (workers.length !== TOTAL_WORKERS || !workers.every((w) => w.state === 'running' && w.healthy)) {
        continue;
      }
      // The store is read (10,000 rows, in this same event loop) only once the controller has nothing queued
      // or under way: its reconciles write the rows, and reading them every 20 ms meanwhile slowed them down.
      if (!controller.passes.idle) continue;
      const rows = await store.workers.listAll();
      const endpoints = await store.endpoints.listAll();
      if (
        rows.length === TOTAL_WORKERS &&
        rows.every((w) => w.status.state === 'running' && w.healthy) &&
        endpoints.every((e) => e.status.state === 'serving')
      ) {
        converged = true;
        break;
      }
    }
    const convergeMs = performance.now() - convergeStart;
    stopping = true;
    await controller.stop();
    controller.reconcile = reconcile;
    controller.reconcileEndpoint = reconcileEndpoint;
    return {
      store,
      runtime,
      counters: bench.counters,
      controller,
      passes,
      endpointReconciles,
      converged,
      convergeMs,
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/**
 * Answers true at once, but all the probes asked during one turn of the event loop answer together on the next
 * (as many sockets answering in one poll phase would), so that their health changes reach the controller in
 * one batch and coalesce into one pass.
 */
export function batchedProbe(): HealthProbe {
  let waiting: ((result: ProbeResult) => void)[] = [];
  return () =>
    new Promise<ProbeResult>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === 1) {
        setImmediate(() => {
          const batch = waiting;
          waiting = [];
          for (const answer of batch) answer(answered(200));
        });
      }
    });
}

export function describeConvergence<R extends WorkerRuntime>(setup: Setup<R>): string {
  const { passes } = setup;
  const done = setup.counters();
  const healthy = setup.controller.workers().filter((w) => w.state === 'running' && w.healthy).length;
  const mine = setup.endpointReconciles;
  const ones =
    mine.length > 0
      ? `; ${mine.length.toLocaleString('en')} endpoint reconciles (p50 ${formatMs(summarize(mine).p50)} ms, p99 ${formatMs(summarize(mine).p99)} ms)`
      : '';
  const head = `${passes.length} whole passes (first, cold: ${formatMs(passes[0] ?? Number.NaN)} ms; then p50 ${formatMs(summarize(passes.slice(1)).p50)} ms)${ones}`;
  const counters = `runtime: ${done.creates} creates, ${done.removes} removes`;
  return setup.converged
    ? `converged in ${formatMs(setup.convergeMs)} ms: all ${TOTAL_WORKERS.toLocaleString('en')} workers running and ` +
        `healthy (controller and store), every endpoint serving; ${head}; ${counters}`
    : `GAVE UP after ${formatMs(setup.convergeMs)} ms: ${healthy.toLocaleString('en')} of ` +
        `${TOTAL_WORKERS.toLocaleString('en')} workers running and healthy ` +
        `(${countBy(setup.controller.workers().map((w) => w.state))}); ${head}; ${counters}`;
}

function countBy(values: string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n} ${k}`).join(', ') || 'none';
}
