/**
 * Controller benchmark (issue: workers). Two parts:
 *
 * 1. Fake runtime: a real SQLite store (temp file, WAL, as `corral serve` opens it) seeded with 1,000 endpoints of
 *    10 workers each (minNum = maxNum = 10, gpuNum 0 so that placement never blocks), a FakeRuntime and a
 *    Controller started as `corral serve` starts it (start(): its timer and its own pokes), until all 10,000
 *    workers are running and healthy in the controller and in the store (at most 60 s); every pass is timed, the
 *    first (cold) one created everything. Twice, on fresh stores: (a) with a probe that answers true at once,
 *    (b) with one that answers true at once but in one batch per event-loop turn. On (b), the controller's loop
 *    and probes are then stopped and 20 steady-state `reconcile()` passes are timed one by one, interleaved
 *    with the baseline: the two reads every pass must do (`store.endpoints.listAll()` and
 *    `runtime.list({'corral.dev/managed': 'true'})`) and nothing else. Design target: a pass under 200 ms.
 *
 * 2. Docker (skipped with the reason when the engine does not answer): the real DockerRuntime, the test worker
 *    image (built locally by scripts/build-test-image.sh), a real store and the controller and gateway built by
 *    `buildTraffic` as `corral serve` builds them (real HTTP probe, serve's default settings). Five times: an
 *    endpoint with minNum 1 is written to the store and the controller poked (as the API does) and the time
 *    until its worker is `running` and healthy in the store (what the API shows) is measured, with where it
 *    went (until the controller decided on a worker, the container started, the probe passed). Beside each
 *    run, the floor: the same image started by `docker run -d` and by the engine API (create + start, what
 *    DockerRuntime calls), timed to its /health answering 200, probed every 5 ms. The engine is shared with
 *    other work on this machine, so the controller's runtime is scoped to this run's owner label (the
 *    controller would otherwise adopt and remove every Corral container it finds); every container this bench
 *    made is removed by label at the end, also on failure.
 *
 * Everything is bounded in count and time; workers listen on 127.0.0.1 only.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { loadConfig } from '../src/config/config.js';
import { Controller, type HealthProbe } from '../src/controller/controller.js';
import { httpProbe } from '../src/controller/http-probe.js';
import { RoutingTable } from '../src/controller/routing-table.js';
import type { Endpoint } from '../src/domain/endpoint.js';
import { createLogger } from '../src/logger.js';
import { buildTraffic } from '../src/main.js';
import { DockerRuntime, dockerReachable, engineAddress } from '../src/runtime/docker/docker-runtime.js';
import { FakeRuntime } from '../src/runtime/fake/fake-runtime.js';
import {
  LABELS,
  type LogOptions,
  type PullProgress,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
} from '../src/runtime/types.js';
import { connectSqlite } from '../src/store/sqlite/connect.js';
import { Store } from '../src/store/store.js';
import { deleteEndpoint, sampleEndpoint } from '../test/support/fixtures.js';
import { ensureTestImage, removeLabelled, TEST_IMAGE } from '../test/support/test-image.js';
import { formatMs, formatRatio, loadAverage, summarize, table } from './support.js';

const ENDPOINTS = 1_000;
const WORKERS_PER_ENDPOINT = 10;
const TOTAL_WORKERS = ENDPOINTS * WORKERS_PER_ENDPOINT;
/** Give up converging (all workers running and healthy) after this long. */
const CONVERGE_MAX_MS = 60_000;
const STEADY_WARMUP = 2;
const STEADY_PASSES = 20;
const PASS_TARGET_MS = 200;
/** `corral serve`'s default reconcile interval (config controller.reconcileIntervalMs). */
const SERVE_INTERVAL_MS = 1_000;

const DOCKER_RUNS = 5;
/** Each Docker figure (one run) gives up after this long. */
const DOCKER_RUN_MAX_MS = 60_000;
/** Removal of a deleted endpoint's container, waited for between runs. */
const DOCKER_REMOVE_MAX_MS = 30_000;
const BASELINE_PROBE_EVERY_MS = 5;
const WORKER_PORT = 8000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const execFileAsync = promisify(execFile);

/** Logs as `corral serve` writes them (info level, same redaction), into /dev/null. */
function devNullLogger(): Logger {
  return createLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: false }) });
}

async function openSqlite(): Promise<{ store: Store; dispose(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-ctl-'));
  const store = new Store({ connection: connectSqlite(join(dataDir, 'corral.db')) });
  const dispose = async () => {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await store.migrate();
  } catch (error) {
    await dispose();
    throw error;
  }
  return { store, dispose };
}

async function insertEndpoint(store: Store, endpoint: Endpoint): Promise<void> {
  await store.endpoints.create(
    endpoint,
    [{ at: endpoint.createdAt, type: 'created', message: 'endpoint created', data: { revision: 1 } }],
    {
      at: endpoint.createdAt,
      ownerId: endpoint.ownerId,
      actor: 'bench',
      action: 'endpoint.create',
      targetId: endpoint.id,
    },
  );
}

export async function runControllerBench(): Promise<void> {
  console.log('\n== Controller (issue: workers) ==');
  console.log('command: npm run bench -- controller');
  await benchFake();
  await benchDocker();
}

// ---- 1. fake runtime ----

interface FakeSetup {
  store: Store;
  runtime: FakeRuntime;
  controller: Controller;
  /** Every pass the controller ran, in ms. */
  passes: number[];
  converged: boolean;
  convergeMs: number;
  dispose(): Promise<void>;
}

/**
 * Seeds a fresh store, starts a controller over a fresh FakeRuntime as `corral serve` starts it, and waits until
 * all workers are running and healthy in the controller and in the store and every endpoint is serving, or
 * until CONVERGE_MAX_MS. The controller is stopped (its loop and probes) before this returns. The deadline is
 * also enforced from inside the passes: a controller whose passes never yield to the event loop would
 * otherwise keep this function's own timer from firing.
 */
async function converge(probe: HealthProbe): Promise<FakeSetup> {
  const { store, dispose: disposeStore } = await openSqlite();
  const runtime = new FakeRuntime({ clock: Date.now });
  const controller = new Controller({
    store,
    runtime,
    gpus: [],
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
    await runtime.close();
    await disposeStore();
  };
  try {
    for (let i = 0; i < ENDPOINTS; i++) {
      await insertEndpoint(
        store,
        sampleEndpoint({
          ownerId: 'bench',
          patch: {
            name: `bench-${i}`,
            workers: { minWorkers: WORKERS_PER_ENDPOINT, maxWorkers: WORKERS_PER_ENDPOINT, gpusPerWorker: 0 },
          },
        }),
      );
    }
    const passes: number[] = [];
    const reconcile = controller.reconcile.bind(controller);
    const convergeStart = performance.now();
    let stopping = false;
    controller.reconcile = async () => {
      const start = performance.now();
      try {
        await reconcile();
      } finally {
        passes.push(performance.now() - start);
        if (!stopping && performance.now() - convergeStart > CONVERGE_MAX_MS) {
          stopping = true;
          void controller.stop();
        }
      }
    };
    controller.start();
    let converged = false;
    while (performance.now() - convergeStart < CONVERGE_MAX_MS) {
      await sleep(20);
      const workers = controller.workers();
      if (workers.length !== TOTAL_WORKERS || !workers.every((w) => w.state === 'running' && w.healthy)) {
        continue;
      }
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
    return { store, runtime, controller, passes, converged, convergeMs, dispose };
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
function batchedProbe(): HealthProbe {
  let waiting: ((passed: boolean) => void)[] = [];
  return () =>
    new Promise<boolean>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === 1) {
        setImmediate(() => {
          const batch = waiting;
          waiting = [];
          for (const answer of batch) answer(true);
        });
      }
    });
}

function describeConvergence(setup: FakeSetup): string {
  const { passes, runtime } = setup;
  const healthy = setup.controller.workers().filter((w) => w.state === 'running' && w.healthy).length;
  const head = `${passes.length} passes (first, cold: ${formatMs(passes[0] ?? Number.NaN)} ms; then p50 ${formatMs(summarize(passes.slice(1)).p50)} ms)`;
  const counters = `runtime: ${runtime.counters.creates} creates, ${runtime.counters.removes} removes`;
  return setup.converged
    ? `converged in ${formatMs(setup.convergeMs)} ms: all ${TOTAL_WORKERS.toLocaleString('en')} workers running and ` +
        `healthy (controller and store), every endpoint serving; ${head}; ${counters}`
    : `GAVE UP after ${formatMs(setup.convergeMs)} ms: ${healthy.toLocaleString('en')} of ` +
        `${TOTAL_WORKERS.toLocaleString('en')} workers running and healthy ` +
        `(${countBy(setup.controller.workers().map((w) => w.state))}); ${head}; ${counters}`;
}

async function benchFake(): Promise<void> {
  console.log(
    `\n-- fake runtime: ${ENDPOINTS.toLocaleString('en')} endpoints x ${WORKERS_PER_ENDPOINT} workers ` +
      `(minNum = maxNum = ${WORKERS_PER_ENDPOINT}, gpuNum 0), SQLite temp file (WAL), controller started as ` +
      `corral serve starts it (interval ${SERVE_INTERVAL_MS} ms), at most ${CONVERGE_MAX_MS / 1000} s to converge --`,
  );
  console.log(`load average ${loadAverage()}`);

  // a. As asked: a probe that answers true at once (`async () => true`).
  const instant = await converge(async () => true);
  try {
    console.log(`probe answering true at once: ${describeConvergence(instant)}`);
    if (!instant.converged) {
      const rate = instant.controller.workers().filter((w) => w.healthy).length / instant.passes.length;
      console.log(
        `  ${rate.toFixed(2)} workers became healthy per pass: every health change pokes the controller, and ` +
          'a pass over the fake runtime and SQLite never waits on I/O, so each poke runs a whole pass before the ' +
          `next probe's timer can fire (nothing coalesces); at that rate all ${TOTAL_WORKERS.toLocaleString('en')} ` +
          `take about ${formatMs(((TOTAL_WORKERS / Math.max(rate, 1e-9)) * summarize(instant.passes.slice(1)).p50) / 1000)} s`,
      );
    }
  } finally {
    await instant.dispose();
  }

  // b. The same, with the probes of one event-loop turn answering together: the steady state is measured on it.
  const setup = await converge(batchedProbe());
  const { store, runtime, controller } = setup;
  try {
    console.log(`probe answering true on the next turn, in one batch: ${describeConvergence(setup)}`);
    console.log(
      `memory after converging: RSS ${mib(process.memoryUsage().rss)}, heap used ${mib(process.memoryUsage().heapUsed)}`,
    );

    // Steady state: the loop and the probes are stopped; each pass is a direct call, next to the baseline.
    const baseline: number[] = [];
    const steady: number[] = [];
    const baselineOnce = async () => {
      const start = performance.now();
      await store.endpoints.listAll();
      await runtime.list({ [LABELS.managed]: 'true' });
      return performance.now() - start;
    };
    const passOnce = async () => {
      const start = performance.now();
      await controller.reconcile();
      return performance.now() - start;
    };
    const creates = runtime.counters.creates;
    const removes = runtime.counters.removes;
    for (let i = 0; i < STEADY_WARMUP; i++) {
      await baselineOnce();
      await passOnce();
    }
    for (let i = 0; i < STEADY_PASSES; i++) {
      // Alternate which goes first, so that neither always follows the other's garbage.
      if (i % 2 === 0) {
        baseline.push(await baselineOnce());
        steady.push(await passOnce());
      } else {
        steady.push(await passOnce());
        baseline.push(await baselineOnce());
      }
    }
    const changed =
      runtime.counters.creates !== creates ||
      runtime.counters.removes !== removes ||
      !controller.workers().every((w) => w.state === 'running' && w.healthy);

    const s = summarize(steady);
    const b = summarize(baseline);
    console.log(
      `\nsteady state (b): ${STEADY_PASSES} passes (after ${STEADY_WARMUP} unmeasured), each interleaved with ` +
        'the baseline; controller loop and probes stopped during them',
    );
    console.log(
      table(
        ['figure', 'n', 'p50 ms', 'p99 ms', 'max ms', 'p50/base', 'p99/base'],
        [
          [
            'cold pass (created all 10,000 workers)',
            '1',
            formatMs(setup.passes[0] ?? Number.NaN),
            '',
            '',
            '',
            '',
          ],
          [
            'steady reconcile() pass',
            String(s.n),
            formatMs(s.p50),
            formatMs(s.p99),
            formatMs(s.max),
            formatRatio(s.p50 / b.p50),
            formatRatio(s.p99 / b.p99),
          ],
          [
            'baseline: endpoints.listAll() + runtime.list()',
            String(b.n),
            formatMs(b.p50),
            formatMs(b.p99),
            formatMs(b.max),
            '',
            '',
          ],
        ],
      ),
    );
    if (changed) console.log('WARNING: a steady-state pass created, removed or changed workers');
    console.log(`load average after: ${loadAverage()}`);
    const met = setup.converged && !changed && s.p99 < PASS_TARGET_MS;
    console.log(
      `target: one reconcile pass over ${ENDPOINTS.toLocaleString('en')} endpoints x ${WORKERS_PER_ENDPOINT} ` +
        `workers under ${PASS_TARGET_MS} ms: ${met ? 'PASS' : 'MISS'} (p99 ${formatMs(s.p99)} ms, p50 ` +
        `${formatMs(s.p50)} ms` +
        (met
          ? `, ${formatRatio(PASS_TARGET_MS / s.p99)} under`
          : `${s.p99 >= PASS_TARGET_MS ? `, ${formatMs(s.p99 - PASS_TARGET_MS)} ms over` : ''}` +
            `${setup.converged ? '' : ', did not converge'}${changed ? ', steady pass changed workers' : ''}`) +
        ')',
    );
    console.log(
      `not a target, but: converging with a probe that answers at once ${instant.converged ? 'took' : 'did not finish in'} ` +
        `${formatMs(instant.convergeMs)} ms (a above)`,
    );
  } finally {
    await setup.dispose();
  }
}

function countBy(values: string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n} ${k}`).join(', ') || 'none';
}

function mib(bytes: number): string {
  return `${Math.round(bytes / 2 ** 20)} MiB`;
}

// ---- 2. Docker ----

/**
 * The Docker runtime seen through one owner label: the engine is shared (other test suites run Corral containers
 * on it), and a controller removes every managed container whose endpoint it does not know. Listing is the only
 * call that needs the scope; the label filter is applied by the engine, as the unscoped listing's is.
 */
class ScopedRuntime implements WorkerRuntime {
  readonly name: WorkerRuntime['name'];
  readonly #inner: WorkerRuntime;
  readonly #scope: Record<string, string>;

  constructor(inner: WorkerRuntime, scope: Record<string, string>) {
    this.#inner = inner;
    this.#scope = scope;
    this.name = inner.name;
  }

  create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    return this.#inner.create(spec, onProgress);
  }
  remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    return this.#inner.remove(workerId, options);
  }
  list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    return this.#inner.list({ ...selector, ...this.#scope });
  }
  inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    return this.#inner.inspect(workerId);
  }
  logs(workerId: string, options: LogOptions): AsyncIterable<string> {
    return this.#inner.logs(workerId, options);
  }
  stats(workerId: string): Promise<WorkerStats | undefined> {
    return this.#inner.stats(workerId);
  }
  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    return this.#inner.watch(onEvent);
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

interface ControllerRun {
  /** Endpoint written -> the controller's record of its worker exists (the pass that saw the endpoint). */
  decidedMs: number;
  /** -> the container is started (DockerRuntime.create returned). */
  startedMs: number;
  /** -> the probe passed (the controller's readyAt). */
  healthyMs: number;
  /** -> the store says running and healthy (what the API shows): the figure. */
  runningMs: number;
  /** Endpoint deleted -> its container is gone (informative). */
  removedMs: number;
}

async function benchDocker(): Promise<void> {
  console.log(
    `\n-- Docker runtime: create to running, test image ${TEST_IMAGE}, ${DOCKER_RUNS} runs, ` +
      'SQLite temp file, real HTTP probe --',
  );
  const docker = new Dockerode();
  if (!(await dockerReachable(docker))) {
    console.log(
      `SKIPPED: no Docker engine answers at ${engineAddress(docker)} (start dockerd to include it)`,
    );
    return;
  }
  const run = randomBytes(4).toString('hex');
  const owner = `bench-${run}`;
  const baselineLabel = `corral.dev/bench-run=${run}`;
  let image: string;
  try {
    image = await ensureTestImage();
  } catch (error) {
    console.log(`SKIPPED: cannot build the test image: ${(error as Error).message.split('\n')[0]}`);
    return;
  }
  const { store, dispose } = await openSqlite();
  const logger = devNullLogger();
  const runtime = new DockerRuntime({
    docker,
    logger,
    namePrefix: `corral-bench-${run}-`,
    requestGpuDevices: false,
  });
  const traffic = buildTraffic({
    config: loadConfig({ flags: {}, env: {}, readFile: () => '' }),
    store,
    runtime: new ScopedRuntime(runtime, { [LABELS.owner]: owner }),
    gpus: [],
    logger,
    registry: new Registry(),
  });
  const { controller } = traffic;
  const controllerRuns: ControllerRun[] = [];
  const cliRuns: number[] = [];
  const apiRuns: number[] = [];
  const problems: string[] = [];
  try {
    traffic.start();
    // One unmeasured start of the image, so that the first measured run does not pay for a cold page cache.
    await baselineEngineApi(docker, image, baselineLabel);
    for (let i = 0; i < DOCKER_RUNS; i++) {
      try {
        controllerRuns.push(await controllerRun(docker, store, controller, owner, image));
      } catch (error) {
        problems.push(`controller run ${i + 1}: ${(error as Error).message}`);
      }
      try {
        cliRuns.push(await baselineCli(image, baselineLabel));
      } catch (error) {
        problems.push(`docker run -d ${i + 1}: ${(error as Error).message}`);
      }
      try {
        apiRuns.push(await baselineEngineApi(docker, image, baselineLabel));
      } catch (error) {
        problems.push(`engine API ${i + 1}: ${(error as Error).message}`);
      }
    }
  } finally {
    await traffic.close();
    const left =
      (await removeLabelled(docker, `${LABELS.owner}=${owner}`)) +
      (await removeLabelled(docker, baselineLabel));
    await runtime.close();
    await dispose();
    console.log(`cleanup: ${left} container(s) of this run were still there and have been removed`);
  }
  reportDocker(controllerRuns, cliRuns, apiRuns, problems);
}

async function controllerRun(
  docker: Dockerode,
  store: Store,
  controller: Controller,
  owner: string,
  image: string,
): Promise<ControllerRun> {
  const endpoint = sampleEndpoint({
    ownerId: owner,
    at: Date.now(),
    patch: {
      image: { ref: image },
      port: WORKER_PORT,
      workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 0 },
      health: { path: '/health' },
    },
  });
  // Not timed: a random point within the controller's interval, so that the wait for its next pass is a fair sample
  // (right after the previous run's removal, a create would otherwise always land just after a pass).
  await sleep(randomInt(SERVE_INTERVAL_MS));
  const createdAt = Date.now();
  const start = performance.now();
  await insertEndpoint(store, { ...endpoint, createdAt, updatedAt: createdAt });
  // What the API does after every change (EndpointService's onChanged, wired to poke() by corral serve).
  controller.poke();
  let runningMs: number | undefined;
  let record: ReturnType<Controller['workers']>[number] | undefined;
  while (performance.now() - start < DOCKER_RUN_MAX_MS) {
    record = controller.workers().find((w) => w.endpointId === endpoint.id);
    if (record?.state === 'failed') throw new Error(`worker failed: ${record.error} ${record.message}`);
    if (record?.state === 'running' && record.healthy) {
      const [row] = await store.workers.listByEndpoint(endpoint.id);
      if (row?.status.state === 'running' && row.healthy) {
        runningMs = performance.now() - start;
        break;
      }
    }
    await sleep(2);
  }
  if (runningMs === undefined || !record) {
    throw new Error(
      `not running after ${DOCKER_RUN_MAX_MS / 1000} s (worker ${record ? `${record.state}: ${record.message}` : 'never created'})`,
    );
  }
  const result: ControllerRun = {
    decidedMs: record.createdAt - createdAt,
    startedMs: (record.startedAt ?? Number.NaN) - createdAt,
    healthyMs: (record.readyAt ?? Number.NaN) - createdAt,
    runningMs,
    removedMs: Number.NaN,
  };

  // Delete it (as the API does) and wait for the controller to remove its container.
  await deleteEndpoint(store, endpoint);
  controller.poke();
  const removeStart = performance.now();
  const label = `${LABELS.endpoint}=${endpoint.id}`;
  while (performance.now() - removeStart < DOCKER_REMOVE_MAX_MS) {
    if ((await docker.listContainers({ all: true, filters: { label: [label] } })).length === 0) {
      result.removedMs = performance.now() - removeStart;
      break;
    }
    await sleep(20);
  }
  if (Number.isNaN(result.removedMs)) {
    await removeLabelled(docker, label);
    throw new Error(
      `the deleted endpoint's container was still there after ${DOCKER_REMOVE_MAX_MS / 1000} s`,
    );
  }
  return result;
}

/** Time from `docker run -d` to /health answering 200 on the published port. */
async function baselineCli(image: string, label: string): Promise<number> {
  const port = await freePort();
  const start = performance.now();
  const { stdout } = await execFileAsync(
    'docker',
    [
      'run',
      '-d',
      '--label',
      label,
      '-e',
      `PORT=${WORKER_PORT}`,
      '-p',
      `127.0.0.1:${port}:${WORKER_PORT}`,
      image,
    ],
    { timeout: 30_000 },
  );
  try {
    return await waitHealthy(port, start);
  } finally {
    await removeContainer(new Dockerode(), stdout.trim());
  }
}

/** Time from the engine API's create + start (what DockerRuntime does) to /health answering 200. */
async function baselineEngineApi(docker: Dockerode, image: string, label: string): Promise<number> {
  const [key = '', value = ''] = label.split('=');
  const start = performance.now();
  const container = await docker.createContainer({
    Image: image,
    Env: [`PORT=${WORKER_PORT}`],
    Labels: { [key]: value },
    ExposedPorts: { [`${WORKER_PORT}/tcp`]: {} },
    HostConfig: { PortBindings: { [`${WORKER_PORT}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
  try {
    await container.start();
    const info = await container.inspect();
    const port = Number(info.NetworkSettings.Ports[`${WORKER_PORT}/tcp`]?.[0]?.HostPort);
    if (!Number.isInteger(port) || port <= 0) throw new Error('no published port');
    return await waitHealthy(port, start);
  } finally {
    await removeContainer(docker, container.id);
  }
}

async function waitHealthy(port: number, start: number): Promise<number> {
  while (performance.now() - start < DOCKER_RUN_MAX_MS) {
    if (await httpProbe({ host: '127.0.0.1', port }, '/health', 2_000)) return performance.now() - start;
    await sleep(BASELINE_PROBE_EVERY_MS);
  }
  throw new Error(`/health did not answer 200 within ${DOCKER_RUN_MAX_MS / 1000} s`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function removeContainer(docker: Dockerode, id: string): Promise<void> {
  await docker
    .getContainer(id)
    .remove({ force: true, v: true })
    .catch(() => undefined);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}

function reportDocker(
  controllerRuns: ControllerRun[],
  cliRuns: number[],
  apiRuns: number[],
  problems: string[],
): void {
  const rows: string[][] = [];
  const n = Math.max(controllerRuns.length, cliRuns.length, apiRuns.length);
  const cell = (v: number | undefined) => (v === undefined ? '-' : formatMs(v));
  for (let i = 0; i < n; i++) {
    const c = controllerRuns[i];
    rows.push([
      String(i + 1),
      cell(c?.decidedMs),
      cell(c?.startedMs),
      cell(c?.healthyMs),
      cell(c?.runningMs),
      cell(c && c.runningMs - c.decidedMs),
      cell(cliRuns[i]),
      cell(apiRuns[i]),
      cell(c?.removedMs),
    ]);
  }
  const med = (pick: (r: ControllerRun) => number) => median(controllerRuns.map(pick));
  rows.push([
    'median',
    formatMs(med((r) => r.decidedMs)),
    formatMs(med((r) => r.startedMs)),
    formatMs(med((r) => r.healthyMs)),
    formatMs(med((r) => r.runningMs)),
    formatMs(med((r) => r.runningMs - r.decidedMs)),
    formatMs(median(cliRuns)),
    formatMs(median(apiRuns)),
    formatMs(med((r) => r.removedMs)),
  ]);
  console.log(
    '\ntimes in ms from the endpoint written to the store (controller) or from the start command (baselines)',
  );
  console.log(
    table(
      [
        'run',
        'ctl: decided',
        'ctl: started',
        'ctl: healthy',
        'ctl: running (API)',
        'ctl: seen->running',
        'docker run -d',
        'engine API',
        'delete->removed',
      ],
      rows,
    ),
  );
  const running = med((r) => r.runningMs);
  console.log(
    `create to running (median ${formatMs(running)} ms) / docker run -d to healthy (median ` +
      `${formatMs(median(cliRuns))} ms): ${formatRatio(running / median(cliRuns))}; / engine API create+start ` +
      `to healthy (median ${formatMs(median(apiRuns))} ms): ${formatRatio(running / median(apiRuns))}; ` +
      `the controller adds ${formatMs(running - median(apiRuns))} ms to the engine API floor`,
  );
  const seen = med((r) => r.runningMs - r.decidedMs);
  console.log(
    `from the pass that saw the endpoint to running (median ${formatMs(seen)} ms) / engine API floor: ` +
      `${formatRatio(seen / median(apiRuns))}, ${formatMs(seen - median(apiRuns))} ms more`,
  );
  console.log(
    'ctl: decided = the pass that saw the new endpoint (the write pokes the controller, as the API does; each ' +
      `create is made at a random point of its ${SERVE_INTERVAL_MS} ms interval); seen->running = running - decided; started = DockerRuntime.create returned; healthy = the probe passed ` +
      "(probes every 50 ms while starting, serve's setting); running = the store row says running and healthy",
  );
  for (const problem of problems) console.log(`PROBLEM: ${problem}`);
  console.log(`load average after: ${loadAverage()}`);
}
