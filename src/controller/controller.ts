import { randomString } from '../crypto/api-keys.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { Worker, WorkerErrorCode, WorkerState } from '../domain/worker.js';
import type { Gpu } from '../gpu/inventory.js';
import {
  LABELS,
  type RegistryAuth,
  RuntimeError,
  type RuntimeWorker,
  type WorkerRuntime,
} from '../runtime/types.js';
import type { Clock } from '../service/clock.js';
import type { Store } from '../store/store.js';
import {
  type BackoffPolicy,
  type CrashRecord,
  DEFAULT_BACKOFF,
  NO_CRASHES,
  recordFailure,
} from './backoff.js';
import { endpointStatus } from './endpoint-status.js';
import { type HealthCounters, nextHealth, UNKNOWN_HEALTH } from './health-state.js';
import type { ManagedWorker } from './managed-worker.js';
import type { ControllerMetrics } from './metrics.js';
import { placeWorkers, whyNeverPlaceable } from './placement.js';
import { type PlanAction, planEndpoint } from './planner.js';
import { buildWorkerSpec, registryOf } from './worker-spec.js';

/**
 * How often a worker that has not passed its health check yet is probed. Short, because a wake from zero waits for
 * it: the probe adds 0 to this much over the worker's own readiness (docs/performance.md, wake from zero).
 */
export const STARTING_PROBE_INTERVAL_MS = 50;

/** Probes a worker's health path; true for a 2xx/3xx answer within the timeout. */
export type HealthProbe = (
  address: { host: string; port: number },
  path: string,
  timeoutMs: number,
) => Promise<boolean>;

export interface ControllerLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ControllerOptions {
  store: Store;
  runtime: WorkerRuntime;
  gpus: Gpu[];
  probe: HealthProbe;
  logger: ControllerLogger;
  clock: Clock;
  /** Network storage id -> host path. */
  storagePaths: ReadonlyMap<string, string>;
  /** A worker's host memory limit per GPU, in GiB (one share without GPUs); undefined: no limit. */
  memoryGBPerGpu?: number;
  /** Registry credentials for an image pull, decrypted only for it. */
  revealCredentials: (
    ownerId: string,
    id: string,
  ) => Promise<{ username: string; password: string } | undefined>;
  /** How many workers scaling asks for; minNum when absent (the autoscaler plugs in here). */
  desiredWorkers?: (endpoint: Endpoint) => number;
  startupTimeoutMs?: number;
  backoff?: BackoffPolicy;
  /** Probing interval while a worker has not passed yet (fast, so a cold start is served at once). */
  startingProbeIntervalMs?: number;
  intervalMs?: number;
  /** Failed workers kept per endpoint so that the API can show why. */
  failedKept?: number;
  metrics?: ControllerMetrics;
  /** Resolves once no request is in flight on the worker (the gateway's drain); removal waits for it. */
  awaitDrained?: (endpointId: string, workerId: string) => Promise<void>;
  /** Worker ids the autoscaler would remove first (idle ones), for scale-down. */
  preferredVictims?: (endpoint: Endpoint) => string[];
}

/** What the gateway needs from the controller: where each endpoint's traffic may go. */
export interface RoutingView {
  endpointByAppName(appName: string): Endpoint | undefined;
  /** The live endpoint as of the last pass; undefined once deleted. */
  endpointById(endpointId: string): Endpoint | undefined;
  /** Running, healthy workers of any revision (both serve during a rollout). */
  routableWorkers(endpointId: string): { id: string; address: { host: string; port: number } }[];
  /** Called after every pass and whenever a worker's health changes. */
  onChange(listener: () => void): () => void;
}

/**
 * Level-triggered reconciliation: compares each endpoint's desired workers with what the runtime runs,
 * decides with pure functions (planner, placement, status) and applies the decisions here.
 */
export class Controller implements RoutingView {
  readonly #o: Required<
    Omit<
      ControllerOptions,
      'desiredWorkers' | 'metrics' | 'awaitDrained' | 'preferredVictims' | 'memoryGBPerGpu'
    >
  > &
    Pick<
      ControllerOptions,
      'desiredWorkers' | 'metrics' | 'awaitDrained' | 'preferredVictims' | 'memoryGBPerGpu'
    >;
  readonly #listeners = new Set<() => void>();
  #appNames = new Map<string, Endpoint>();
  readonly #workers = new Map<string, ManagedWorker>();
  /** The same records by endpoint id, so that a pass is linear in the number of workers. */
  readonly #byEndpoint = new Map<string, Set<ManagedWorker>>();
  /** Live endpoints as of the last pass (probes read their health settings here, not from the store). */
  #endpoints = new Map<string, Endpoint>();
  readonly #health = new Map<string, HealthCounters>();
  readonly #crashes = new Map<string, CrashRecord>();
  readonly #probeTimers = new Map<string, NodeJS.Timeout>();
  /** Workers whose create is under way -> the GPUs they were given (held even if the record goes meanwhile). */
  readonly #busy = new Map<string, string[]>();
  /**
   * Containers being removed (or whose removal failed, to be retried) -> their GPUs. A removal takes up to the
   * runtime's grace period, during which the container still runs on its GPUs: they stay held until it is gone.
   */
  readonly #releasing = new Map<string, { gpuUuids: string[]; inFlight: boolean }>();
  /** Worker records whose store row must be written (or deleted) at the end of the pass. */
  readonly #dirty = new Set<string>();
  /** Runtime listings begun so far; a pass's listing is as old as the number it took. */
  #listings = 0;
  /**
   * Worker id -> #listings when its create completed. A listing begun before that may not contain the worker, so
   * its absence there says nothing.
   */
  readonly #createdAtListing = new Map<string, number>();
  /** Workers found running after a restart: their create-to-running time was not seen by this process. */
  readonly #adoptedIds = new Set<string>();
  #adopted = false;
  #loop: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #unwatch: (() => void) | undefined;
  #stopped = false;

  constructor(options: ControllerOptions) {
    this.#o = {
      startupTimeoutMs: 300_000,
      backoff: DEFAULT_BACKOFF,
      startingProbeIntervalMs: STARTING_PROBE_INTERVAL_MS,
      intervalMs: 1000,
      failedKept: 3,
      ...options,
    };
  }

  start(): void {
    this.#unwatch = this.#o.runtime.watch(() => this.poke());
    const tick = () => {
      this.poke();
      this.#loop = setTimeout(tick, this.#o.intervalMs);
    };
    tick();
  }

  /** Reconciles as soon as possible (coalescing calls that arrive during a pass). */
  poke(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    // The pass starts on the next turn, so that every poke of this turn (health changes, exits) shares it.
    this.#running = new Promise((resolve) => setImmediate(resolve))
      .then(() => (this.#stopped ? undefined : this.reconcile()))
      .catch((error: unknown) => this.#o.logger.error({ err: error }, 'reconcile failed'))
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.poke();
        }
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#loop);
    this.#unwatch?.();
    for (const timer of this.#probeTimers.values()) clearTimeout(timer);
    this.#probeTimers.clear();
    await this.#running;
  }

  endpointByAppName(appName: string): Endpoint | undefined {
    return this.#appNames.get(appName);
  }

  endpointById(endpointId: string): Endpoint | undefined {
    return this.#endpoints.get(endpointId);
  }

  routableWorkers(endpointId: string): { id: string; address: { host: string; port: number } }[] {
    const routable: { id: string; address: { host: string; port: number } }[] = [];
    for (const w of this.#byEndpoint.get(endpointId) ?? []) {
      if (w.state === 'running' && w.healthy && w.address) routable.push({ id: w.id, address: w.address });
    }
    return routable;
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  /** The workers of one endpoint (for the autoscaler). */
  workersOf(endpointId: string): ManagedWorker[] {
    return this.#workersOf(endpointId);
  }

  /** The controller's current view (for tests and metrics). */
  workers(): ManagedWorker[] {
    return [...this.#workers.values()];
  }

  /**
   * GPU uuid -> the worker holding it: workers' GPUs, those of creates under way and those of containers not removed
   * yet. Placement never hands out one of these; GET products counts them as busy.
   */
  heldGpus(): Map<string, string> {
    const held = new Map<string, string>();
    for (const w of this.#workers.values()) for (const uuid of w.gpuUuids) held.set(uuid, w.id);
    for (const [workerId, gpuUuids] of this.#busy) for (const uuid of gpuUuids) held.set(uuid, workerId);
    for (const [workerId, { gpuUuids }] of this.#releasing) {
      for (const uuid of gpuUuids) held.set(uuid, workerId);
    }
    return held;
  }

  /** One pass. Nothing is removed until the runtime could be listed, so a restart never loses workers. */
  async reconcile(): Promise<void> {
    const { store, runtime, clock } = this.#o;
    let observed: RuntimeWorker[];
    const listing = ++this.#listings;
    try {
      observed = await runtime.list({ [LABELS.managed]: 'true' });
    } catch (error) {
      this.#o.logger.warn({ err: error }, 'cannot list runtime workers; skipping this pass');
      return;
    }
    const endpoints = await store.endpoints.listAll();
    const now = clock();
    if (!this.#adopted) await this.#forgetStaleRows(observed);
    this.#adopted = true;
    const live = new Map(endpoints.map((e) => [e.id, e]));
    this.#endpoints = live;
    this.#appNames = new Map(endpoints.map((e) => [e.spec.appName, e]));
    this.#observe(observed, listing, live, now);
    for (const endpoint of endpoints) this.#apply(endpoint, this.#plan(endpoint, now), now);
    this.#removeOrphans(live);
    this.#place(live, now);
    await this.#report(endpoints);
    this.#changed();
  }

  // ---- observe ----

  /** Rows left by a previous run for workers the runtime no longer has are stale. */
  async #forgetStaleRows(observed: RuntimeWorker[]): Promise<void> {
    const present = new Set(observed.map((w) => w.workerId));
    for (const row of await this.#o.store.workers.listAll()) {
      if (!present.has(row.id)) await this.#o.store.workers.delete(row.id);
    }
  }

  #observe(observed: RuntimeWorker[], listing: number, live: Map<string, Endpoint>, now: number): void {
    const seen = new Set<string>();
    for (const container of observed) {
      seen.add(container.workerId);
      // Being removed: neither a worker to adopt again nor one that died.
      if (this.#releasing.has(container.workerId)) continue;
      const record = this.#workers.get(container.workerId);
      if (!record) {
        this.#adopt(container, live.get(container.endpointId), now);
      } else if (container.phase === 'exited' && isStarted(record.state)) {
        this.#workerDied(record, `exited with code ${container.exitCode ?? 'unknown'}`, now);
      }
    }
    for (const record of this.#workers.values()) {
      if (isStarted(record.state) && !seen.has(record.id) && this.#listedSinceCreated(record.id, listing)) {
        this.#workerDied(record, 'its container disappeared', now);
      }
    }
    this.#retryRemovals(seen);
  }

  /**
   * Whether this listing began after the worker's create completed, so that it would show the worker. A pass awaits
   * the store between its listing and this check: a create that completes meanwhile is missing from the listing.
   */
  #listedSinceCreated(workerId: string, listing: number): boolean {
    if (this.#busy.has(workerId)) return false;
    return (this.#createdAtListing.get(workerId) ?? 0) < listing;
  }

  /** A removal that failed is tried again while its container is listed; once it is not, its GPUs are free. */
  #retryRemovals(seen: ReadonlySet<string>): void {
    for (const [workerId, held] of this.#releasing) {
      if (held.inFlight) continue;
      if (seen.has(workerId)) void this.#removeContainer(workerId, held.gpuUuids, 'retrying its removal');
      else this.#released(workerId);
    }
  }

  /** A worker found by label (after a restart): kept, and probed to learn its health again. */
  #adopt(container: RuntimeWorker, endpoint: Endpoint | undefined, now: number): void {
    const record: ManagedWorker = {
      id: container.workerId,
      endpointId: container.endpointId,
      ownerId: container.labels[LABELS.owner] ?? endpoint?.ownerId ?? '',
      revision: container.revision,
      state: container.phase === 'exited' ? 'failed' : 'starting',
      error: container.phase === 'exited' ? 'RUNTIME_ERROR' : '',
      message:
        container.phase === 'exited'
          ? `exited with code ${container.exitCode ?? 'unknown'}`
          : 'adopted after a restart',
      healthy: false,
      // What the runtime kept with the worker: placement must count these GPUs as held from the first pass.
      gpuUuids: [...container.gpuUuids],
      address: container.address ?? null,
      createdAt: container.createdAt,
      startedAt: now,
      readyAt: null,
    };
    this.#track(record);
    this.#adoptedIds.add(record.id);
    this.#o.logger.info({ workerId: record.id, endpointId: record.endpointId }, 'adopted worker');
    if (record.state === 'failed') void this.#removeContainer(record.id, record.gpuUuids, 'it had exited');
    else if (endpoint) this.#scheduleProbe(record.id, 0);
  }

  #workerDied(record: ManagedWorker, reason: string, now: number): void {
    const crash = recordFailure(
      this.#crash(record.endpointId),
      { code: 'RUNTIME_ERROR', message: reason, at: now },
      this.#o.backoff,
    );
    this.#crashes.set(record.endpointId, crash);
    const code: WorkerErrorCode =
      crash.failures >= this.#o.backoff.crashLoopAfter ? 'CRASH_LOOP' : 'RUNTIME_ERROR';
    this.#fail(record, code, `worker ${reason}`);
    void this.#removeContainer(record.id, record.gpuUuids, reason);
  }

  // ---- plan and apply ----

  #plan(endpoint: Endpoint, now: number): PlanAction[] {
    return planEndpoint({
      endpoint,
      workers: this.#workersOf(endpoint.id),
      desiredWorkers: this.#o.desiredWorkers?.(endpoint) ?? endpoint.spec.workers.minWorkers,
      preferredVictims: this.#o.preferredVictims?.(endpoint) ?? [],
      crash: this.#crash(endpoint.id),
      now,
      startupTimeoutMs: this.#o.startupTimeoutMs,
    });
  }

  #apply(endpoint: Endpoint, actions: PlanAction[], now: number): void {
    for (const action of actions) {
      if (action.type === 'add') {
        for (let i = 0; i < action.count; i++) this.#addPending(endpoint, now);
        continue;
      }
      const record = this.#workers.get(action.workerId);
      if (!record) continue;
      if (action.type === 'remove') {
        this.#drainAndRemove(record, action.reason);
      } else {
        this.#crashes.set(
          record.endpointId,
          recordFailure(
            this.#crash(record.endpointId),
            { code: action.code, message: action.message, at: now },
            this.#o.backoff,
          ),
        );
        this.#fail(record, action.code, action.message);
        void this.#removeContainer(record.id, record.gpuUuids, action.message);
      }
    }
    this.#trimFailed(endpoint.id);
  }

  #addPending(endpoint: Endpoint, now: number): void {
    const record: ManagedWorker = {
      id: `${endpoint.id.slice(0, 8)}-${randomString(8, 'abcdefghijklmnopqrstuvwxyz0123456789')}`,
      endpointId: endpoint.id,
      ownerId: endpoint.ownerId,
      revision: endpoint.revision,
      state: 'pending',
      error: '',
      message: 'waiting for placement',
      healthy: false,
      gpuUuids: [],
      address: null,
      createdAt: now,
      startedAt: null,
      readyAt: null,
    };
    this.#track(record);
  }

  /** Workers of endpoints that no longer exist are removed (also after a restart). */
  #removeOrphans(live: Map<string, Endpoint>): void {
    for (const record of this.#workers.values()) {
      if (!live.has(record.endpointId)) this.#drainAndRemove(record, 'its endpoint was deleted');
    }
  }

  /** Pending workers get GPUs, oldest first; those that fit start now. */
  #place(live: Map<string, Endpoint>, now: number): void {
    const pending = [...this.#workers.values()]
      .filter((w) => w.state === 'pending' && live.has(w.endpointId))
      .sort((a, b) => a.createdAt - b.createdAt);
    if (pending.length === 0) return;
    const result = placeWorkers({
      gpus: this.#o.gpus,
      allocations: this.heldGpus(),
      workers: pending.map((w) => {
        const spec = live.get(w.endpointId)?.spec;
        return {
          workerId: w.id,
          gpusNeeded: spec?.workers.gpusPerWorker ?? 0,
          productIds: spec?.productIds ?? [],
          cudaVersion: spec?.workers.cudaVersion ?? 'any',
        };
      }),
    });
    for (const { workerId, reason } of result.pending) {
      const record = this.#workers.get(workerId);
      if (record && record.message !== reason) {
        record.message = reason;
        this.#markDirty(record);
      }
    }
    for (const { workerId, gpus } of result.placed) {
      const record = this.#workers.get(workerId);
      const endpoint = record && live.get(record.endpointId);
      if (record && endpoint) void this.#startWorker(record, endpoint, gpus, now);
    }
  }

  async #startWorker(record: ManagedWorker, endpoint: Endpoint, gpus: Gpu[], now: number): Promise<void> {
    record.gpuUuids = gpus.map((g) => g.uuid);
    this.#setState(record, 'pulling', 'preparing the image');
    this.#busy.set(record.id, record.gpuUuids);
    try {
      const registryAuth = this.#registryAuth(endpoint);
      const { memoryGBPerGpu } = this.#o;
      const spec = buildWorkerSpec(endpoint, record, gpus, {
        storagePaths: this.#o.storagePaths,
        ...(registryAuth ? { registryAuth } : {}),
        ...(memoryGBPerGpu === undefined ? {} : { memoryGBPerGpu }),
      });
      // The runtime's message already names the image and the percentage.
      const container = await this.#o.runtime.create(spec, (progress) =>
        this.#setState(record, 'pulling', progress.message),
      );
      if (!this.#workers.has(record.id)) {
        // Removed while it was being created (scaled down, stopped): nothing must be left behind, and its GPUs
        // stay held until the container is gone.
        void this.#removeContainer(record.id, record.gpuUuids, 'its worker was removed while starting');
        return;
      }
      this.#createdAtListing.set(record.id, this.#listings);
      record.address = container.address ?? null;
      record.startedAt = this.#o.clock();
      this.#setState(record, 'starting', `waiting for ${endpoint.spec.health.path} to answer`);
      this.#o.metrics?.starts.inc({ runtime: this.#o.runtime.name });
      this.#o.logger.info({ workerId: record.id, endpointId: endpoint.id }, 'worker started');
      this.#scheduleProbe(record.id, endpoint.spec.health.initialDelaySeconds * 1000);
    } catch (error) {
      const code: WorkerErrorCode =
        error instanceof RuntimeError && error.code === 'IMAGE_PULL_FAILED'
          ? 'IMAGE_PULL_FAILED'
          : 'RUNTIME_ERROR';
      const message = error instanceof Error ? error.message : String(error);
      this.#crashes.set(
        record.endpointId,
        recordFailure(this.#crash(record.endpointId), { code, message, at: now }, this.#o.backoff),
      );
      this.#fail(record, code, message);
      // A failed create leaves nothing behind, except where the engine could not be reached to clean up: its GPUs
      // are free once a removal (idempotent, cheap when there is nothing) has confirmed that.
      void this.#removeContainer(record.id, record.gpuUuids, 'its create failed');
      this.#o.logger.warn(
        { workerId: record.id, endpointId: endpoint.id, code, reason: message },
        'worker failed to start',
      );
    } finally {
      this.#busy.delete(record.id);
      this.poke();
    }
  }

  /** Decrypts the endpoint's registry credentials when called: only the runtime's pull path calls it. */
  #registryAuth(endpoint: Endpoint): (() => Promise<RegistryAuth | undefined>) | undefined {
    const { authId, ref } = endpoint.spec.image;
    if (authId === '') return undefined;
    const { ownerId } = endpoint;
    return async () => {
      const credentials = await this.#o.revealCredentials(ownerId, authId);
      return credentials ? { ...credentials, server: registryOf(ref) } : undefined;
    };
  }

  // ---- health ----

  #scheduleProbe(workerId: string, delayMs: number): void {
    clearTimeout(this.#probeTimers.get(workerId));
    this.#probeTimers.set(
      workerId,
      setTimeout(() => void this.#probeOnce(workerId), delayMs),
    );
  }

  async #probeOnce(workerId: string): Promise<void> {
    const record = this.#workers.get(workerId);
    const endpoint = record && this.#endpoints.get(record.endpointId);
    if (!record || !endpoint || !record.address || !isStarted(record.state) || this.#stopped) {
      this.#probeTimers.delete(workerId);
      return;
    }
    const check = endpoint.spec.health;
    const passed = await this.#o
      .probe(record.address, check.path, check.timeoutSeconds * 1000)
      .catch(() => false);
    if (!this.#workers.has(workerId) || !isStarted(record.state)) return;
    const before = this.#health.get(workerId) ?? UNKNOWN_HEALTH;
    const after = nextHealth(before, passed, check);
    this.#health.set(workerId, after);
    if (after.healthy !== before.healthy || (after.healthy && record.state !== 'running')) {
      this.#healthChanged(record, after.healthy);
    }
    const fast = record.readyAt === null;
    this.#scheduleProbe(workerId, fast ? this.#o.startingProbeIntervalMs : check.periodSeconds * 1000);
  }

  #healthChanged(record: ManagedWorker, healthy: boolean): void {
    record.healthy = healthy;
    if (healthy) {
      if (record.readyAt === null) {
        record.readyAt = this.#o.clock();
        // An adopted worker's createdAt is its container's: the histogram would record its whole age.
        if (!this.#adoptedIds.has(record.id)) {
          this.#o.metrics?.timeToReady.observe((record.readyAt - record.createdAt) / 1000);
        }
      }
      this.#crashes.delete(record.endpointId);
      this.#setState(record, 'running', '');
      this.#o.logger.info({ workerId: record.id, endpointId: record.endpointId }, 'worker healthy');
    } else {
      this.#setState(record, 'unhealthy', 'failing its health check');
    }
    this.#changed();
    this.poke();
  }

  // ---- transitions ----

  #setState(
    record: ManagedWorker,
    state: WorkerState,
    message: string,
    error: WorkerErrorCode | '' = '',
  ): void {
    if (record.state === state && record.message === message && record.error === error) return;
    record.state = state;
    record.message = message;
    record.error = error;
    if (state !== 'running')
      record.healthy = state === 'unhealthy' ? false : record.healthy && state === 'draining';
    this.#markDirty(record);
  }

  /** The record only: its GPUs are released by #removeContainer once the container is gone. */
  #fail(record: ManagedWorker, code: WorkerErrorCode, message: string): void {
    const wasRoutable = record.state === 'running';
    this.#setState(record, 'failed', message, code);
    this.#o.metrics?.failures.inc({ code });
    record.healthy = false;
    this.#stopProbing(record.id);
    // The gateway must stop sending it requests now, not at the end of the pass: its container is stopped next.
    if (wasRoutable) this.#changed();
  }

  /** draining (in-flight requests finish) -> stopped (drained; its container is being removed) -> gone. */
  #drainAndRemove(record: ManagedWorker, reason: string): void {
    if (record.state === 'draining' || record.state === 'stopped') return;
    const hadContainer = record.state !== 'pending' && record.state !== 'failed';
    this.#stopProbing(record.id);
    if (!hadContainer) {
      this.#forget(record);
      return;
    }
    this.#setState(record, 'draining', reason);
    this.#changed();
    const drained = this.#o.awaitDrained?.(record.endpointId, record.id) ?? Promise.resolve();
    void drained
      .catch((error: unknown) => {
        // Requests still in flight fail with the worker; it must go all the same.
        this.#o.logger.warn({ err: error, workerId: record.id }, 'drain failed; removing the worker anyway');
      })
      .then(() => {
        this.#setState(record, 'stopped', `drained (${reason}); removing its container`);
        return this.#removeContainer(record.id, record.gpuUuids, reason);
      })
      .then((error) => {
        if (!error) {
          this.#forget(record);
          return;
        }
        // The GPUs stay held by the removal, which later passes retry.
        this.#setState(record, 'failed', `could not be removed: ${error.message}`, 'RUNTIME_ERROR');
      });
  }

  /**
   * Removes the worker's container. Its GPUs stay held (#releasing) until the runtime has removed it: the container
   * runs on them through the grace period. Resolves to the error when the removal failed (retried by later passes).
   */
  async #removeContainer(workerId: string, gpuUuids: string[], reason: string): Promise<Error | undefined> {
    const held = { gpuUuids: [...gpuUuids], inFlight: true };
    this.#releasing.set(workerId, held);
    try {
      await this.#o.runtime.remove(workerId);
      this.#released(workerId);
      return undefined;
    } catch (error) {
      held.inFlight = false;
      this.#o.logger.warn({ err: error, workerId, reason }, 'cannot remove worker');
      return error instanceof Error ? error : new Error(String(error));
    } finally {
      this.poke();
    }
  }

  /** The container is gone: its GPUs are free, and a failed record shown in the API no longer names them. */
  #released(workerId: string): void {
    this.#releasing.delete(workerId);
    const record = this.#workers.get(workerId);
    if (record?.state === 'failed' && record.gpuUuids.length > 0) {
      record.gpuUuids = [];
      this.#markDirty(record);
    }
  }

  #track(record: ManagedWorker): void {
    this.#workers.set(record.id, record);
    let set = this.#byEndpoint.get(record.endpointId);
    if (!set) {
      set = new Set();
      this.#byEndpoint.set(record.endpointId, set);
    }
    set.add(record);
    this.#markDirty(record);
  }

  #forget(record: ManagedWorker): void {
    this.#workers.delete(record.id);
    const set = this.#byEndpoint.get(record.endpointId);
    set?.delete(record);
    if (set?.size === 0) this.#byEndpoint.delete(record.endpointId);
    this.#health.delete(record.id);
    this.#createdAtListing.delete(record.id);
    this.#adoptedIds.delete(record.id);
    this.#markDirty(record);
  }

  #stopProbing(workerId: string): void {
    clearTimeout(this.#probeTimers.get(workerId));
    this.#probeTimers.delete(workerId);
    this.#health.delete(workerId);
  }

  /** Keeps the newest failed records of an endpoint, for the API to show why. */
  #trimFailed(endpointId: string): void {
    const failed = this.#workersOf(endpointId)
      .filter((w) => w.state === 'failed')
      .sort((a, b) => b.createdAt - a.createdAt);
    for (const record of failed.slice(this.#o.failedKept)) this.#forget(record);
  }

  // ---- report ----

  #markDirty(record: ManagedWorker): void {
    record.healthy = record.state === 'running' && record.healthy;
    this.#dirty.add(record.id);
  }

  async #report(endpoints: Endpoint[]): Promise<void> {
    const { store, clock } = this.#o;
    const now = clock();
    for (const id of [...this.#dirty]) {
      this.#dirty.delete(id);
      const record = this.#workers.get(id);
      if (record) await store.workers.upsert(toWorker(record, now));
      else await store.workers.delete(id);
    }
    for (const endpoint of endpoints) {
      const workers = this.#workersOf(endpoint.id);
      const status = endpointStatus(
        endpoint,
        workers,
        this.#crash(endpoint.id),
        this.#o.backoff,
        whyNeverPlaceable(endpoint.spec, this.#o.gpus),
      );
      if (sameStatus(status, endpoint.status)) continue;
      await store.endpoints.reportStatus(endpoint.id, status, {
        at: now,
        type: 'state',
        message: `${status.state}${status.error ? ` (${status.error})` : ''}: ${status.message}`,
        data: { state: status.state, error: status.error },
      });
    }
  }

  #workersOf(endpointId: string): ManagedWorker[] {
    return [...(this.#byEndpoint.get(endpointId) ?? [])];
  }

  #crash(endpointId: string): CrashRecord {
    return this.#crashes.get(endpointId) ?? NO_CRASHES;
  }
}

/** States in which the worker has (or had) a running container. */
function isStarted(state: WorkerState): boolean {
  return state === 'starting' || state === 'running' || state === 'unhealthy';
}

function toWorker(record: ManagedWorker, now: number): Worker {
  return {
    id: record.id,
    endpointId: record.endpointId,
    ownerId: record.ownerId,
    revision: record.revision,
    status: { state: record.state, error: record.error, message: record.message },
    healthy: record.healthy,
    gpuUuids: record.gpuUuids,
    address: record.address,
    createdAt: record.createdAt,
    updatedAt: now,
    readyAt: record.readyAt,
  };
}

function sameStatus(a: { state: string; error: string; message: string }, b: typeof a): boolean {
  return a.state === b.state && a.error === b.error && a.message === b.message;
}
