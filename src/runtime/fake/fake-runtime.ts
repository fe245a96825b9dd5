/**
 * In-memory WorkerRuntime for deterministic tests and the controller bench. Nothing runs: a worker is a record that
 * goes pulling -> starting -> running after the configured delays (on injected timers, so tests need no real sleeps),
 * and tests drive failures and exits by hand. Workers are indexed by endpoint label so that list() stays cheap with
 * tens of thousands of them.
 */
import { systemTimers, type Timers } from '../../ports/clock.js';
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import { exitDescription } from '../exit-description.js';
import {
  type ImageRequest,
  LABELS,
  type LogOptions,
  type PullProgress,
  RuntimeError,
  type RuntimeEvent,
  type RuntimePhase,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
  workerLabels,
} from '../types.js';
import { FakeIdleTiers } from './fake-tiers.js';

export interface FakeRuntimeOptions {
  clock: () => number;
  /** Time from created to running (phase `starting` meanwhile). Default 0: create resolves at once. */
  startDelayMs?: number;
  /** Time an image takes to pull the first time it is used (phase `pulling`). Default 0. */
  pullDelayMs?: number;
  timers?: Timers;
  /** What stats() returns for a live worker. */
  stats?: WorkerStats;
  /** What suspends a worker's GPU state (tests: test/support/memory-checkpointer.ts); none: no suspended tier. */
  checkpointer?: GpuCheckpointer;
}

export interface FakeCounters {
  /** create() calls that started a worker (failed ones are not counted here). */
  creates: number;
  /** create() calls that threw. */
  createFailures: number;
  /** remove() calls that removed an existing worker. */
  removes: number;
  /** Image pulls performed (first use of an image when pullDelayMs > 0, by create or prepareImage). */
  pulls: number;
  /** prepareImage() calls. */
  prepares: number;
}

interface FakeWorker {
  worker: RuntimeWorker;
  logs: string[];
  logWaiters: Set<() => void>;
  cancelStart?: () => void;
}

const FAKE_PORT_BASE = 40_000;

export class FakeRuntime implements WorkerRuntime {
  readonly name = 'fake' as const;
  /** Images whose pull fails with IMAGE_PULL_FAILED. */
  readonly missingImages = new Set<string>();
  /** Images already present (no pull delay). */
  readonly presentImages = new Set<string>();
  readonly counters: FakeCounters = { creates: 0, createFailures: 0, removes: 0, pulls: 0, prepares: 0 };
  startDelayMs: number;
  pullDelayMs: number;
  /** As the kubernetes runtime: a worker start does not wait for the endpoint's prepareImage (types.ts). */
  createPullsWhereItRuns = false;
  readonly idleTiers: FakeIdleTiers;

  readonly #clock: () => number;
  readonly #timers: Timers;
  readonly #workers = new Map<string, FakeWorker>();
  readonly #byEndpoint = new Map<string, Set<string>>();
  readonly #listeners = new Set<(event: RuntimeEvent) => void>();
  readonly #statsValue: WorkerStats;
  #createFailure: { reason: string; remaining: number } | undefined;
  /** Set while the simulated engine cannot be reached: why every call fails. */
  #unreachable: string | undefined;
  #removalGate: Promise<void> | undefined;
  #nextPort = FAKE_PORT_BASE;
  #closed = false;

  constructor(options: FakeRuntimeOptions) {
    this.#clock = options.clock;
    this.startDelayMs = options.startDelayMs ?? 0;
    this.pullDelayMs = options.pullDelayMs ?? 0;
    this.#timers = options.timers ?? systemTimers;
    this.#statsValue = options.stats ?? { cpuPercent: 1.5, memoryBytes: 64 * 1024 * 1024 };
    this.idleTiers = new FakeIdleTiers({
      checkpointer: options.checkpointer,
      exists: (workerId) => this.#workers.get(workerId)?.worker.phase === 'running',
      emit: (event) => this.#emit(event),
    });
  }

  // ---- test controls ----

  /** Makes create() and prepareImage() of this image throw IMAGE_PULL_FAILED (until `missingImages` changes). */
  failPull(imageRef: string): void {
    this.missingImages.add(imageRef);
  }

  /** Makes the next `times` create() calls (all of them by default) throw RUNTIME_ERROR with this reason. */
  failCreate(reason: string, times = Number.POSITIVE_INFINITY): void {
    this.#createFailure = { reason, remaining: times };
  }

  /**
   * Simulates an engine that cannot be reached: every call fails with RuntimeError UNAVAILABLE (as the Docker
   * runtime's do when its socket refuses) until reachable(). Workers keep their state; exit() still works (the
   * engine killing a container meanwhile).
   */
  unreachable(reason = 'connect ECONNREFUSED /var/run/fake.sock'): void {
    this.#unreachable = reason;
  }

  /** The simulated engine answers again. */
  reachable(): void {
    this.#unreachable = undefined;
  }

  /** Undoes failPull and failCreate. */
  clearFailures(): void {
    this.missingImages.clear();
    this.#createFailure = undefined;
  }

  /** The worker dies with this exit code: phase `exited`, an 'exited' event. No-op for unknown or exited workers. */
  exit(workerId: string, code: number, message = `exited with code ${code}`): void {
    const entry = this.#workers.get(workerId);
    if (!entry || entry.worker.phase === 'exited') return;
    this.#exit(entry, { exitCode: code }, message);
  }

  #exit(entry: FakeWorker, exited: Pick<RuntimeWorker, 'exitCode' | 'exitReason'>, message: string): void {
    entry.cancelStart?.();
    entry.cancelStart = undefined;
    entry.worker = { ...entry.worker, phase: 'exited', ...exited, message };
    this.#wakeLogs(entry);
    this.#emit({ type: 'exited', workerId: entry.worker.workerId, exitCode: exited.exitCode ?? -1 });
  }

  /** The kernel's OOM killer ends the worker, as Docker reports it: exit 137, exitReason `out-of-memory`. */
  outOfMemory(workerId: string): void {
    const entry = this.#workers.get(workerId);
    if (!entry || entry.worker.phase === 'exited') return;
    const exited = { exitCode: 137, exitReason: 'out-of-memory' as const };
    this.#exit(entry, exited, exitDescription({ ...entry.worker, ...exited }));
  }

  /**
   * What `docker restart` does: the engine stops the worker ('stopping', then 'exited' with code 0) and starts it
   * again on a new port ('started'); it is running afterwards. Of an exited worker only the start remains (the
   * second half of a restart whose stop happened earlier). No-op for unknown workers.
   */
  restart(workerId: string): void {
    const entry = this.#workers.get(workerId);
    if (!entry) return;
    if (entry.worker.phase !== 'exited') {
      this.stopByEngine(workerId);
      this.#exit(entry, { exitCode: 0 }, 'restarting');
    }
    const { exitCode: _code, exitReason: _reason, ...rest } = entry.worker;
    entry.worker = {
      ...rest,
      phase: 'running',
      message: 'running',
      address: { host: '127.0.0.1', port: this.#allocatePort() },
    };
    this.#emit({ type: 'started', workerId });
  }

  /** The engine was told to stop or kill the worker (a 'stopping' event); exit() or restart() says how it ends. */
  stopByEngine(workerId: string): void {
    const entry = this.#workers.get(workerId);
    if (!entry || entry.worker.phase === 'exited') return;
    this.#emit({ type: 'stopping', workerId });
  }

  /** What `docker pause`/`unpause` do: the worker stays listed as running, a 'paused' or 'resumed' event says so. */
  pause(workerId: string, paused = true): void {
    const entry = this.#workers.get(workerId);
    if (!entry || entry.worker.phase === 'exited') return;
    this.#emit({ type: paused ? 'paused' : 'resumed', workerId });
  }

  /**
   * Makes remove() wait until the returned function is called, the worker still listed meanwhile: what a real
   * container does through its stop grace period.
   */
  holdRemovals(): () => void {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#removalGate = gate;
    return () => {
      if (this.#removalGate === gate) this.#removalGate = undefined;
      release();
    };
  }

  /** Adds a line to the worker's output. */
  appendLog(workerId: string, line: string): void {
    const entry = this.#workers.get(workerId);
    if (!entry) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    entry.logs.push(line);
    this.#wakeLogs(entry);
  }

  /** Number of workers held, any phase. */
  get size(): number {
    return this.#workers.size;
  }

  // ---- WorkerRuntime ----

  async create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    if (this.#closed) throw new RuntimeError('UNAVAILABLE', 'the fake runtime is closed');
    this.#ensureReachable();
    if (this.missingImages.has(spec.image)) {
      this.counters.createFailures += 1;
      throw new RuntimeError('IMAGE_PULL_FAILED', `image ${spec.image} not found (fake)`);
    }
    if (this.#createFailure && this.#createFailure.remaining > 0) {
      this.#createFailure.remaining -= 1;
      const reason = this.#createFailure.reason;
      if (this.#createFailure.remaining <= 0) this.#createFailure = undefined;
      this.counters.createFailures += 1;
      throw new RuntimeError('RUNTIME_ERROR', reason);
    }
    const needsPull = this.pullDelayMs > 0 && !this.presentImages.has(spec.image);
    // As a real runtime does: the credentials are asked for by the pull, and only then.
    if (needsPull) await this.#readCredentials(spec);
    if (this.#workers.has(spec.workerId)) {
      this.counters.createFailures += 1;
      throw new RuntimeError('RUNTIME_ERROR', `worker ${spec.workerId} already exists`);
    }
    const phase: RuntimePhase = needsPull ? 'pulling' : this.startDelayMs > 0 ? 'starting' : 'running';
    const labels = workerLabels(spec);
    const worker: RuntimeWorker = {
      workerId: spec.workerId,
      endpointId: spec.endpointId,
      revision: spec.revision,
      labels,
      phase,
      address: { host: '127.0.0.1', port: this.#allocatePort() },
      message: needsPull ? `pulling ${spec.image}` : phase === 'starting' ? 'starting' : 'running',
      createdAt: this.#clock(),
      gpuUuids: spec.gpus.map((gpu) => gpu.uuid),
      ...(spec.memoryBytes === undefined ? {} : { memoryLimitBytes: spec.memoryBytes }),
    };
    const entry: FakeWorker = { worker, logs: [], logWaiters: new Set() };
    this.#workers.set(spec.workerId, entry);
    let ids = this.#byEndpoint.get(spec.endpointId);
    if (!ids) {
      ids = new Set();
      this.#byEndpoint.set(spec.endpointId, ids);
    }
    ids.add(spec.workerId);
    this.counters.creates += 1;

    if (needsPull) {
      onProgress?.({ percent: 0, message: `pulling ${spec.image}: 0%` });
      await this.#wait(entry, this.pullDelayMs);
      this.presentImages.add(spec.image);
      this.counters.pulls += 1;
      onProgress?.({ percent: 100, message: `pulling ${spec.image}: 100%` });
      if (this.startDelayMs > 0) this.#setPhase(entry, 'starting', 'starting');
    }
    if (this.startDelayMs > 0) await this.#wait(entry, this.startDelayMs);
    if (entry.worker.phase !== 'running') this.#setPhase(entry, 'running', 'running');
    this.#emit({ type: 'started', workerId: spec.workerId });
    return snapshot(entry.worker);
  }

  /**
   * An image of `missingImages` fails with IMAGE_PULL_FAILED; with `pullDelayMs`, an image not present yet is pulled
   * (progress 0%, the delay on the injected timers, 100%) and present afterwards; else it is there at once.
   */
  async prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void> {
    if (this.#closed) throw new RuntimeError('UNAVAILABLE', 'the fake runtime is closed');
    this.#ensureReachable();
    this.counters.prepares += 1;
    if (this.missingImages.has(request.image)) {
      throw new RuntimeError('IMAGE_PULL_FAILED', `image ${request.image} not found (fake)`);
    }
    if (this.pullDelayMs <= 0 || this.presentImages.has(request.image)) return;
    try {
      await request.registryAuth?.();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new RuntimeError('IMAGE_PULL_FAILED', `cannot pull image ${request.image}: ${reason}`);
    }
    onProgress?.({ percent: 0, message: `pulling ${request.image}: 0%` });
    await new Promise<void>((resolve) => this.#timers.setTimeout(resolve, this.pullDelayMs));
    if (this.missingImages.has(request.image)) {
      throw new RuntimeError('IMAGE_PULL_FAILED', `image ${request.image} not found (fake)`);
    }
    this.presentImages.add(request.image);
    this.counters.pulls += 1;
    onProgress?.({ percent: 100, message: `pulling ${request.image}: 100%` });
  }

  async remove(workerId: string): Promise<void> {
    this.#ensureReachable();
    if (this.#removalGate) await this.#removalGate;
    const entry = this.#workers.get(workerId);
    if (!entry) return;
    entry.cancelStart?.();
    this.#workers.delete(workerId);
    this.idleTiers.forget(workerId);
    const ids = this.#byEndpoint.get(entry.worker.endpointId);
    ids?.delete(workerId);
    if (ids?.size === 0) this.#byEndpoint.delete(entry.worker.endpointId);
    this.counters.removes += 1;
    this.#wakeLogs(entry);
    this.#emit({ type: 'removed', workerId });
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    this.#ensureReachable();
    const entries = Object.entries(selector);
    const workerId = selector[LABELS.worker];
    const endpointId = selector[LABELS.endpoint];
    let candidates: Iterable<string>;
    if (workerId !== undefined) candidates = [workerId];
    else if (endpointId !== undefined) candidates = this.#byEndpoint.get(endpointId) ?? [];
    else candidates = this.#workers.keys();
    const out: RuntimeWorker[] = [];
    for (const id of candidates) {
      const entry = this.#workers.get(id);
      if (!entry) continue;
      const labels = entry.worker.labels;
      let match = true;
      for (const [key, value] of entries) {
        if (labels[key] !== value) {
          match = false;
          break;
        }
      }
      if (match) out.push(this.#snapshot(entry.worker));
    }
    return out;
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    this.#ensureReachable();
    const entry = this.#workers.get(workerId);
    return entry ? this.#snapshot(entry.worker) : undefined;
  }

  async *logs(workerId: string, options: LogOptions): AsyncIterable<string> {
    this.#ensureReachable();
    const entry = this.#workers.get(workerId);
    if (!entry) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    options.onOpen?.();
    let position = options.tail === undefined ? 0 : Math.max(0, entry.logs.length - options.tail);
    for (;;) {
      while (position < entry.logs.length) {
        const line = entry.logs[position];
        position += 1;
        if (line !== undefined) yield line;
      }
      if (!options.follow || options.signal?.aborted) return;
      if (entry.worker.phase === 'exited' || this.#workers.get(workerId) !== entry) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          entry.logWaiters.delete(wake);
          options.signal?.removeEventListener('abort', wake);
          resolve();
        };
        entry.logWaiters.add(wake);
        options.signal?.addEventListener('abort', wake, { once: true });
      });
    }
  }

  async stats(workerId: string): Promise<WorkerStats | undefined> {
    this.#ensureReachable();
    const entry = this.#workers.get(workerId);
    if (!entry || entry.worker.phase === 'exited') return undefined;
    return { ...this.#statsValue };
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    this.#listeners.add(onEvent);
    return () => {
      this.#listeners.delete(onEvent);
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const entry of this.#workers.values()) {
      entry.cancelStart?.();
      this.#wakeLogs(entry);
    }
    this.#listeners.clear();
  }

  // ---- internals ----

  #ensureReachable(): void {
    if (this.#unreachable !== undefined) {
      throw new RuntimeError('UNAVAILABLE', `cannot reach the fake engine: ${this.#unreachable}`);
    }
  }

  async #readCredentials(spec: WorkerSpec): Promise<void> {
    try {
      await spec.registryAuth?.();
    } catch (error) {
      this.counters.createFailures += 1;
      const reason = error instanceof Error ? error.message : String(error);
      throw new RuntimeError('IMAGE_PULL_FAILED', `cannot pull image ${spec.image}: ${reason}`);
    }
  }

  #allocatePort(): number {
    const port = this.#nextPort;
    this.#nextPort = this.#nextPort >= 65_535 ? FAKE_PORT_BASE : this.#nextPort + 1;
    return port;
  }

  #setPhase(entry: FakeWorker, phase: RuntimePhase, message: string): void {
    entry.worker = { ...entry.worker, phase, message };
  }

  /** Waits `ms` on the injected timers; rejects when the worker is removed, exits or the runtime closes meanwhile. */
  #wait(entry: FakeWorker, ms: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const handle = this.#timers.setTimeout(() => {
        entry.cancelStart = undefined;
        resolve();
      }, ms);
      entry.cancelStart = () => {
        this.#timers.clearTimeout(handle);
        entry.cancelStart = undefined;
        reject(new RuntimeError('RUNTIME_ERROR', `worker ${entry.worker.workerId} stopped while starting`));
      };
    });
  }

  #wakeLogs(entry: FakeWorker): void {
    for (const wake of [...entry.logWaiters]) wake();
  }

  /** The worker as listed: its tier as the tiers keep it, and a suspended one's recorded GPU memory. */
  #snapshot(worker: RuntimeWorker): RuntimeWorker {
    const tier = this.idleTiers.tierOf(worker.workerId);
    const gpuBytes = tier === 'suspended' ? this.idleTiers.suspendedBytesOf(worker.workerId) : undefined;
    return {
      ...snapshot(worker),
      ...(tier ? { tier } : {}),
      ...(gpuBytes ? { suspendedGpuBytes: gpuBytes } : {}),
    };
  }

  #emit(event: RuntimeEvent): void {
    for (const listener of [...this.#listeners]) listener(event);
  }
}

function snapshot(worker: RuntimeWorker): RuntimeWorker {
  return {
    ...worker,
    labels: { ...worker.labels },
    gpuUuids: [...worker.gpuUuids],
    ...(worker.address ? { address: { ...worker.address } } : {}),
  };
}
