/**
 * Level-triggered reconciliation: each pass compares each endpoint's desired workers with what the runtime runs,
 * decides with pure functions (planner, placement, status) and applies the decisions here. Its parts, each in its
 * own file: the pass loop, the worker book, the health prober, the GPU ledger, the crash ledger and the store
 * write-back. It publishes routable workers to the routing table and asks the autoscaler how many it wants.
 */
import type { Endpoint } from '../domain/endpoint.js';
import type { WorkerErrorCode, WorkerState } from '../domain/worker.js';
import type { Gpu } from '../gpu/inventory.js';
import { exitDescription } from '../runtime/exit-description.js';
import { LABELS, RuntimeError, type RuntimeEvent, type RuntimeWorker } from '../runtime/types.js';
import { systemTimers } from '../service/clock.js';
import type { NewEvent } from '../store/events.js';
import { LeaseLostError } from '../store/leases.js';
import { DEFAULT_BACKOFF } from './backoff.js';
import { type ContainerResponse, eventResponse, mayBeRestarting, movedAddress } from './container-changes.js';
import {
  type ControllerOptions,
  DEFAULT_RESTART_GRACE_MS,
  DEFAULT_UNHEALTHY_TIMEOUT_MS,
  STARTING_PROBE_INTERVAL_MS,
} from './controller-options.js';
import { crashedEvent, failedEvent } from './crash-event.js';
import { CrashLedger } from './crash-ledger.js';
import { EndpointSnapshot } from './endpoint-snapshot.js';
import { endpointStatus } from './endpoint-status.js';
import { GpuLedger } from './gpu-ledger.js';
import { HealthProber, type ProbeTarget } from './health-prober.js';
import { appPortOf, HealthCausesTold, healthEvent, healthMessage, mayTell } from './health-report.js';
import { ImagePreparer } from './image-preparer.js';
import { withImageStatus } from './image-state.js';
import { ownedHere } from './installation.js';
import {
  adoptedRecord,
  hasContainer,
  isActive,
  isStarted,
  type ManagedWorker,
  pendingRecord,
} from './managed-worker.js';
import type { OutputKeeper } from './output-keeper.js';
import { PassLoop } from './pass-loop.js';
import { reportPass } from './pass-report.js';
import { type PlanAction, planEndpoint } from './planner.js';
import { isRuntimeUnreachable, RuntimeOutage, runtimeErrorFields } from './runtime-outage.js';
import { followed, followsRuntime, progressState } from './runtime-wait.js';
import { WorkerBook } from './worker-book.js';
import { inventoryPlacement, type WorkerPlacement } from './worker-placement.js';
import { buildWorkerSpec, registryAuthFor } from './worker-spec.js';
import { fencedWorkerWrites } from './write-back.js';

export type {
  ControllerLogger,
  ControllerOptions,
  ScalingAdvisor,
  WriteFence,
} from './controller-options.js';
export type { HealthProbe } from './health-prober.js';

type OptionalOptions =
  | 'placement'
  | 'scaling'
  | 'metrics'
  | 'awaitDrained'
  | 'memoryGBPerGpu'
  | 'imageAccess'
  | 'installationId'
  | 'crashResetMs'
  | 'readOnlyStorages'
  | 'resolveEnv'
  | 'outputs'
  | 'fence';

export class Controller {
  readonly #o: Required<Omit<ControllerOptions, OptionalOptions>> & Pick<ControllerOptions, OptionalOptions>;
  readonly #book = new WorkerBook();
  /** Live endpoints as of the last pass (probes read their health settings here, not from the store). */
  #endpoints = new Map<string, Endpoint>();
  readonly #crashes: CrashLedger;
  readonly #snapshot: EndpointSnapshot;
  readonly #gpus = new GpuLedger();
  readonly #placement: WorkerPlacement;
  readonly #prober: HealthProber;
  /** Each endpoint's image, pulled before any worker needs it (image-preparer.ts). */
  readonly #images: ImagePreparer;
  readonly #causesTold = new HealthCausesTold();
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
  /**
   * Workers draining because their owner asked (`POST endpoint/worker/drain`), and whether each was serving then:
   * an undrain before its removal puts it back as it was. The entry's identity tells a drain from a later one.
   */
  readonly #ownerDrains = new Map<string, { wasServing: boolean }>();
  /** Whether the runtime answers; while it does not, passes only report (and the gateway refuses new work). */
  readonly #outage: RuntimeOutage;
  /** Endpoint id -> its updatedAt at the last pass: an owner's change (update, start) gives it a new try. */
  #seenUpdatedAt = new Map<string, number>();
  readonly #loop: PassLoop;
  readonly #unsubscribe: (() => void)[] = [];
  /** Events of this pass for the endpoints' logs (workers that exited), written with the statuses. */
  readonly #events: [endpointId: string, event: NewEvent][] = [];

  constructor(options: ControllerOptions) {
    this.#o = {
      startupTimeoutMs: 300_000,
      unhealthyTimeoutMs: DEFAULT_UNHEALTHY_TIMEOUT_MS,
      restartGraceMs: DEFAULT_RESTART_GRACE_MS,
      backoff: DEFAULT_BACKOFF,
      startingProbeIntervalMs: STARTING_PROBE_INTERVAL_MS,
      intervalMs: 1000,
      failedKept: 3,
      timers: systemTimers,
      ...options,
    };
    this.#placement = options.placement ?? inventoryPlacement(options.gpus);
    this.#snapshot = new EndpointSnapshot({ source: this.#o.store.endpoints });
    this.#crashes = new CrashLedger({ policy: this.#o.backoff, resetAfterMs: this.#o.crashResetMs });
    this.#outage = new RuntimeOutage({ logger: this.#o.logger });
    this.#loop = new PassLoop({
      timers: this.#o.timers,
      intervalMs: this.#o.intervalMs,
      pass: () => this.reconcile(),
      onError: (error, { repeated }) => {
        // Expected once the term is over (a graceful step-down, a takeover): said at info, without a stack.
        if (error instanceof LeaseLostError) {
          const { name, token } = error.claim;
          if (!repeated)
            this.#o.logger.info(
              { lease: name, token },
              'reconcile pass stopped: the lease is no longer held',
            );
        } else if (!repeated)
          this.#o.logger.error({ err: error }, 'reconcile failed; said once while it repeats');
      },
    });
    this.#images = new ImagePreparer({
      runtime: this.#o.runtime,
      imageAccess: this.#o.imageAccess,
      revealCredentials: this.#o.revealCredentials,
      clock: this.#o.clock,
      policy: this.#o.backoff,
      logger: this.#o.logger,
      onSettled: () => this.poke(),
    });
    this.#prober = new HealthProber({
      probe: this.#o.probe,
      timers: this.#o.timers,
      startingIntervalMs: this.#o.startingProbeIntervalMs,
      target: (workerId) => this.#probeTarget(workerId),
      onResult: (workerId, healthy, flipped, cause) => this.#probed(workerId, healthy, flipped, cause),
    });
  }

  start(): void {
    const { runtime, routes, scaling } = this.#o;
    const poke = () => this.poke();
    const onEvent = (event: RuntimeEvent) => {
      this.#containerEvent(event);
      poke();
    };
    this.#unsubscribe.push(runtime.watch(onEvent), routes.onRefreshRequested(poke));
    if (scaling) this.#unsubscribe.push(scaling.onRescale(poke));
    this.#loop.start();
  }

  /** Reconciles as soon as possible (coalescing calls that arrive before or during a pass). */
  poke(): void {
    this.#loop.poke();
  }

  async stop(): Promise<void> {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#prober.close();
    await this.#loop.stop();
  }

  /** Whether a pass is under way or asked for (tests on manual timers fire its timer, then wait for it). */
  get passes(): Pick<PassLoop, 'settled' | 'idle'> {
    return this.#loop;
  }

  /** Tells the routing table one endpoint's routable workers, after one of them changed between passes. */
  #publishRoutesOf(endpointId: string): void {
    this.#o.routes.publishRoutable(endpointId, this.#book.routableOf(endpointId));
  }

  /** The workers of one endpoint. */
  workersOf(endpointId: string): ManagedWorker[] {
    return this.#book.ofEndpoint(endpointId);
  }

  /** The controller's current view (for tests and metrics). */
  workers(): ManagedWorker[] {
    return [...this.#book.all()];
  }

  /** Whether a pass has listed the runtime and adopted its workers: before, a fresh controller knows none. */
  get adopted(): boolean {
    return this.#adopted;
  }

  /**
   * GPU uuid -> the worker holding it: workers' GPUs, those of creates under way and those of containers not removed
   * yet. Placement never hands out one of these; GET products counts them as busy.
   */
  heldGpus(): Map<string, string> {
    return this.#gpus.held(this.#book.all());
  }

  /** One pass. Nothing is removed until the runtime could be listed, so a restart never loses workers. */
  async reconcile(): Promise<void> {
    const { store, runtime, clock } = this.#o;
    let observed: RuntimeWorker[];
    const listing = ++this.#listings;
    try {
      observed = await runtime.list({ [LABELS.managed]: 'true' });
    } catch (error) {
      // Nothing is observed or changed, but the states say so and the gateway refuses what needs a new worker.
      this.#outage.failed(error, clock());
      await this.#reportOutage();
      return;
    }
    for (const record of this.#outage.reachable(clock(), (id) => this.#book.get(id)))
      this.#book.markDirty(record);
    const endpoints = await this.#snapshot.read();
    const drainRequested = await store.workers.drainRequested();
    const live = new Map(endpoints.map((e) => [e.id, e]));
    observed = observed.filter((worker) => ownedHere(worker.labels, this.#o.installationId, live));
    const now = clock();
    this.#giveChangedOnesATry(endpoints);
    if (!this.#adopted) await this.#forgetStaleRows(observed);
    this.#adopted = true;
    this.#endpoints = live;
    this.#o.outputs?.retain(new Set(live.keys()));
    this.#observe(observed, listing, live, now);
    this.#images.sync(endpoints, now);
    // Before planning: a drained worker no longer counts, so the plan replaces it; one adopted after a restart is
    // drained before it was ever routed.
    this.#applyOwnerDrains(drainRequested);
    for (const endpoint of endpoints) this.#apply(endpoint, this.#plan(endpoint, now), now);
    this.#removeOrphans(live);
    this.#o.scaling?.retain((endpointId) => live.has(endpointId));
    this.#crashes.retain((endpointId) => live.has(endpointId));
    this.#place(live, now);
    await this.#reportAndPublish(endpoints);
  }

  /** A pass while the runtime cannot be reached: the outage is written on the workers and statuses, and published. */
  async #reportOutage(): Promise<void> {
    const endpoints = await this.#snapshot.read();
    this.#endpoints = new Map(endpoints.map((e) => [e.id, e]));
    for (const record of this.#outage.note(this.#book.all())) this.#book.markDirty(record);
    await this.#reportAndPublish(endpoints);
  }

  /** An endpoint its owner changed since the last pass (a new image, a start) has no failures held against it. */
  #giveChangedOnesATry(endpoints: Endpoint[]): void {
    const before = this.#seenUpdatedAt;
    this.#seenUpdatedAt = new Map(endpoints.map((e) => [e.id, e.updatedAt]));
    for (const [id, at] of this.#seenUpdatedAt) if ((before.get(id) ?? at) !== at) this.#crashes.clear(id);
  }

  // ---- observe ----

  /** Rows left by a previous run for workers the runtime no longer has are stale. */
  async #forgetStaleRows(observed: RuntimeWorker[]): Promise<void> {
    const present = new Set(observed.map((w) => w.workerId));
    const stale = (await this.#o.store.workers.listAll()).filter((row) => !present.has(row.id));
    if (stale.length === 0) return;
    await fencedWorkerWrites(this.#o.store, this.#o.fence, async (workers) => {
      for (const row of stale) await workers.delete(row.id);
    });
  }

  #observe(observed: RuntimeWorker[], listing: number, live: Map<string, Endpoint>, now: number): void {
    const seen = new Set<string>();
    for (const container of observed) {
      seen.add(container.workerId);
      // Being removed: neither a worker to adopt again nor one that died.
      if (this.#gpus.isReleasing(container.workerId)) continue;
      const record = this.#book.get(container.workerId);
      if (!record) {
        this.#adopt(container, live.get(container.endpointId), now);
      } else if (container.phase === 'exited' && (isStarted(record.state) || this.#follows(record))) {
        if (mayBeRestarting(record, now, this.#o.restartGraceMs)) continue;
        this.#workerDied(record, exitDescription(container), now, container);
      } else if (this.#follows(record)) {
        this.#follow(record, container, live.get(record.endpointId), now);
      } else {
        const moved = movedAddress(record, container);
        if (moved) this.#containerChanged(record, moved);
      }
    }
    for (const record of this.#book.all()) {
      const present = isStarted(record.state) || this.#follows(record);
      if (present && !seen.has(record.id) && this.#listedSinceCreated(record.id, listing)) {
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
    if (this.#gpus.isCreating(workerId)) return false;
    return (this.#createdAtListing.get(workerId) ?? 0) < listing;
  }

  /** A removal that failed is tried again while its container is listed; once it is not, its GPUs are free. */
  #retryRemovals(seen: ReadonlySet<string>): void {
    for (const [workerId, gpuUuids] of this.#gpus.toRetry()) {
      if (seen.has(workerId)) void this.#removeContainer(workerId, gpuUuids, 'retrying its removal');
      else this.#released(workerId);
    }
  }

  /** A worker the runtime has and no create of this process reports on (adopted, not running yet). */
  #follows(record: ManagedWorker): boolean {
    return followsRuntime(record) && !this.#gpus.isCreating(record.id);
  }

  /** Such a worker shows its runtime's state and words until it runs; then it is probed as a started one. */
  #follow(
    record: ManagedWorker,
    container: RuntimeWorker,
    endpoint: Endpoint | undefined,
    now: number,
  ): void {
    const change = followed(record, container);
    if (change?.type === 'waiting') this.#setState(record, change.state, change.message);
    if (change?.type !== 'started') return;
    record.address = change.address;
    record.startedAt = now;
    this.#setState(
      record,
      'starting',
      `waiting for ${endpoint?.spec.health.path ?? 'its health check'} to answer`,
    );
    if (endpoint) this.#prober.schedule(record.id, 0);
  }

  /** A worker found by label (after a restart): kept, and probed to learn its health again. */
  #adopt(container: RuntimeWorker, endpoint: Endpoint | undefined, now: number): void {
    const record = adoptedRecord(container, endpoint, now);
    this.#book.track(record);
    this.#adoptedIds.add(record.id);
    this.#o.logger.info({ workerId: record.id, endpointId: record.endpointId }, 'adopted worker');
    if (record.state === 'failed') void this.#removeContainer(record.id, record.gpuUuids, 'it had exited');
    else if (endpoint) this.#prober.schedule(record.id, 0);
  }

  #workerDied(record: ManagedWorker, reason: string, now: number, container?: RuntimeWorker): void {
    const code = this.#crashes.recordDeath(record.endpointId, reason, now, record.readyAt !== null);
    this.#fail(record, code, `worker ${reason}`);
    this.#events.push([record.endpointId, crashedEvent(record.id, reason, code, container, now)]);
    void this.#removeContainer(record.id, record.gpuUuids, reason);
  }

  // ---- containers changed between passes ----

  /** A runtime event: an exit or pause leaves routing now, a start or resume is probed now (container-changes.ts). */
  #containerEvent(event: RuntimeEvent): void {
    const record = this.#book.get(event.workerId);
    if (!record) return;
    const response = eventResponse(event, record);
    if (event.type === 'stopping' && response.type === 'unroute') record.engineStopSeen = true;
    if (response.type === 'unroute' && response.awaitRestart) record.exitSeenAt = this.#o.clock();
    if (event.type === 'started') {
      delete record.engineStopSeen;
      delete record.exitSeenAt;
    }
    this.#containerChanged(record, response);
  }

  #containerChanged(record: ManagedWorker, response: ContainerResponse): void {
    if (response.type === 'none') return;
    const fields = { workerId: record.id, endpointId: record.endpointId };
    if (response.type === 'readdress') {
      this.#o.logger.info({ ...fields, address: response.address }, 'worker container moved');
      record.address = response.address;
      delete record.engineStopSeen;
      delete record.exitSeenAt;
      this.#book.markDirty(record);
    }
    if (response.type !== 'reprobe') {
      this.#setState(record, 'unhealthy', response.message);
      this.#publishRoutesOf(record.endpointId);
    }
    // Its counts start over, so that neither a failing probe keeps it routed nor an old pass re-routes it.
    this.#prober.stop(record.id);
    const period = (this.#endpoints.get(record.endpointId)?.spec.health.periodSeconds ?? 0) * 1000;
    this.#prober.schedule(record.id, response.type === 'unroute' ? period : 0);
  }

  // ---- owners' drains ----

  /**
   * Drains the workers their owners drained since the last pass, and puts back those undrained before their
   * removal began. A drained worker leaves routing at once, finishes its requests and is removed as a scale-down
   * victim is; it stops counting towards the endpoint's workers, so the plan starts a replacement (and a scale-down
   * that follows, as waverless's does, removes the replacement first, since it is the newest and not serving yet).
   */
  #applyOwnerDrains(requested: ReadonlySet<string>): void {
    for (const workerId of requested) {
      const record = this.#book.get(workerId);
      if (!record || !isActive(record)) continue;
      const drain = { wasServing: record.state === 'running' && record.healthy };
      this.#ownerDrains.set(workerId, drain);
      this.#o.logger.info({ workerId, endpointId: record.endpointId }, 'worker drained by its owner');
      this.#drainAndRemove(
        record,
        'drained by its owner',
        () => this.#ownerDrains.get(workerId) === drain && record.state === 'draining',
      );
    }
    for (const [workerId, drain] of [...this.#ownerDrains]) {
      if (!requested.has(workerId)) this.#undrain(workerId, drain);
    }
  }

  /** Back into service while still draining; once its removal has begun it goes all the same. */
  #undrain(workerId: string, drain: { wasServing: boolean }): void {
    this.#ownerDrains.delete(workerId);
    const record = this.#book.get(workerId);
    if (record?.state !== 'draining') return;
    if (drain.wasServing) {
      record.healthy = true;
      this.#setState(record, 'running', '');
    } else {
      this.#setState(record, 'starting', 'undrained; waiting for its health check');
    }
    this.#o.logger.info({ workerId, endpointId: record.endpointId }, 'worker undrained by its owner');
    this.#publishRoutesOf(record.endpointId);
    this.#prober.schedule(record.id, 0);
  }

  // ---- plan and apply ----

  #plan(endpoint: Endpoint, now: number): PlanAction[] {
    const workers = this.#book.ofEndpoint(endpoint.id);
    this.#crashes.settle(endpoint.id, endpoint.revision, workers, now);
    const advice = this.#o.scaling?.advise(endpoint, workers);
    return planEndpoint({
      endpoint,
      workers,
      desiredWorkers: advice?.desired ?? endpoint.spec.workers.minWorkers,
      preferredVictims: advice?.victims ?? [],
      crash: this.#crashes.of(endpoint.id),
      now,
      startupTimeoutMs: this.#o.startupTimeoutMs,
      unhealthyTimeoutMs: this.#o.unhealthyTimeoutMs,
    });
  }

  #apply(endpoint: Endpoint, actions: PlanAction[], now: number): void {
    for (const action of actions) {
      if (action.type === 'add') {
        for (let i = 0; i < action.count; i++) this.#addPending(endpoint, now);
        continue;
      }
      const record = this.#book.get(action.workerId);
      if (!record) continue;
      if (action.type === 'remove') {
        this.#drainAndRemove(record, action.reason);
      } else {
        this.#crashes.record(record.endpointId, { code: action.code, message: action.message, at: now });
        this.#fail(record, action.code, action.message);
        this.#events.push([record.endpointId, failedEvent(record.id, action.code, action.message, now)]);
        void this.#removeContainer(record.id, record.gpuUuids, action.message);
      }
    }
    this.#trimFailed(endpoint.id);
  }

  #addPending(endpoint: Endpoint, now: number): void {
    this.#book.track(pendingRecord(endpoint, now));
  }

  /** Workers of endpoints that no longer exist are removed (also after a restart). */
  #removeOrphans(live: Map<string, Endpoint>): void {
    for (const record of this.#book.all()) {
      if (!live.has(record.endpointId)) this.#drainAndRemove(record, 'its endpoint was deleted');
    }
  }

  /**
   * Pending workers are placed (worker-placement.ts): on Corral's inventory they get GPUs, by fair share of each
   * product among owners, then oldest first, and those that fit start now (workers of an owner above its share
   * drain when one under its share waits); where the runtime's scheduler places workers, all start now.
   */
  #place(live: Map<string, Endpoint>, now: number): void {
    const result = this.#placement.place([...this.#book.all()], live, () => this.heldGpus());
    if (!result) return;
    for (const { workerId, reason } of result.pending) {
      const record = this.#book.get(workerId);
      if (record && record.message !== reason) {
        record.message = reason;
        this.#book.markDirty(record);
      }
    }
    for (const { workerId, gpus, productId } of result.placed) {
      const record = this.#book.get(workerId);
      const endpoint = record && live.get(record.endpointId);
      if (record && endpoint) void this.#startWorker(record, endpoint, { gpus, productId }, now);
    }
    for (const { workerId, reason } of result.reclaim) {
      const record = this.#book.get(workerId);
      if (record) this.#drainAndRemove(record, reason);
    }
  }

  async #startWorker(
    record: ManagedWorker,
    endpoint: Endpoint,
    { gpus, productId }: { gpus: Gpu[]; productId?: string | undefined },
    now: number,
  ): Promise<void> {
    record.gpuUuids = gpus.map((g) => g.uuid);
    record.inRuntime = true;
    this.#setState(record, 'pulling', 'preparing the image');
    this.#gpus.createStarted(record.id, record.gpuUuids);
    try {
      // The image is pulled once per endpoint image, before any worker needs it: a start waits for that pull.
      await this.#images.ready(endpoint, (progress) => this.#setState(record, 'pulling', progress.message));
      await this.#checkImageAccess(endpoint);
      const registryAuth = registryAuthFor(endpoint, this.#o.revealCredentials);
      const { memoryGBPerGpu } = this.#o;
      const built = buildWorkerSpec(endpoint, record, gpus, {
        storagePaths: this.#o.storagePaths,
        ...(this.#o.installationId === undefined ? {} : { installationId: this.#o.installationId }),
        ...(this.#o.readOnlyStorages ? { readOnlyStorages: this.#o.readOnlyStorages } : {}),
        ...(registryAuth ? { registryAuth } : {}),
        ...(memoryGBPerGpu === undefined ? {} : { memoryGBPerGpu }),
        ...(productId === undefined ? {} : { productId }),
      });
      // Secrets are resolved only here, into the spec handed to the runtime: never stored, never logged.
      const { resolveEnv } = this.#o;
      const spec = resolveEnv ? { ...built, env: await resolveEnv(endpoint.ownerId, built.env) } : built;
      // The runtime's message already names the image and the percentage, or the scheduler's reason to wait.
      const container = await this.#o.runtime.create(spec, (progress) =>
        this.#setState(record, progressState(progress.phase), progress.message),
      );
      if (!this.#book.has(record.id)) {
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
      this.#prober.schedule(record.id, endpoint.spec.health.initialDelaySeconds * 1000);
    } catch (error) {
      const code: WorkerErrorCode =
        error instanceof RuntimeError && error.code === 'IMAGE_PULL_FAILED'
          ? 'IMAGE_PULL_FAILED'
          : 'RUNTIME_ERROR';
      const message = error instanceof Error ? error.message : String(error);
      // An engine that cannot be reached is an outage, not the endpoint's failure: it counts toward no crash loop.
      if (isRuntimeUnreachable(error)) this.#outage.failed(error, this.#o.clock());
      else this.#crashes.record(record.endpointId, { code, message, at: now });
      this.#fail(record, code, message);
      this.#events.push([record.endpointId, failedEvent(record.id, code, message, this.#o.clock())]);
      // A failed create leaves nothing behind, except where the engine could not be reached to clean up: its GPUs
      // are free once a removal (idempotent, cheap when there is nothing) has confirmed that.
      void this.#removeContainer(record.id, record.gpuUuids, 'its create failed');
      this.#o.logger.warn(
        { workerId: record.id, endpointId: endpoint.id, code, reason: message },
        'worker failed to start',
      );
    } finally {
      this.#gpus.createEnded(record.id);
      this.poke();
    }
  }

  /** As Kubernetes' AlwaysPullImages: an image already here is still the owner's to run only if the registry says so. */
  async #checkImageAccess(endpoint: Endpoint): Promise<void> {
    const check = this.#o.imageAccess;
    if (!check) return;
    const { ref, authId } = endpoint.spec.image;
    const verdict = await check({ ownerId: endpoint.ownerId, authId, image: ref });
    if (!verdict.allowed) throw new RuntimeError('IMAGE_PULL_FAILED', verdict.message);
  }

  // ---- health ----

  #probeTarget(workerId: string): ProbeTarget | undefined {
    const record = this.#book.get(workerId);
    const endpoint = record && this.#endpoints.get(record.endpointId);
    if (!record || !endpoint || !record.address || !isStarted(record.state) || this.#loop.stopped)
      return undefined;
    const appPort = appPortOf(this.#o.runtime.name, record.address, endpoint.spec.port);
    return { address: record.address, check: endpoint.spec.health, appPort, fast: record.readyAt === null };
  }

  #probed(workerId: string, healthy: boolean, flipped: boolean, cause: string | undefined): void {
    const record = this.#book.get(workerId);
    if (!record) return;
    if (flipped || (healthy && record.state !== 'running')) this.#healthChanged(record, healthy);
    record.healthCause = cause ?? '';
    if (cause !== undefined) this.#healthFailed(record, cause);
  }

  /** The failing probe's cause becomes the message of a worker that is not routable, and once an event. */
  #healthFailed(record: ManagedWorker, cause: string): void {
    const health = this.#endpoints.get(record.endpointId)?.spec.health;
    const path = health?.path ?? '';
    const message = healthMessage(record, path, cause);
    if (message !== undefined) this.#setState(record, record.state, message);
    const now = this.#o.clock();
    if (!mayTell(record, (health?.periodSeconds ?? 0) * 1000, now)) return;
    if (!this.#causesTold.firstTime(record.id, cause)) return;
    this.#events.push([record.endpointId, healthEvent(record.id, path, cause, now)]);
    this.poke();
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
      this.#setState(record, 'running', '');
      this.#o.logger.info({ workerId: record.id, endpointId: record.endpointId }, 'worker healthy');
    } else {
      this.#setState(record, 'unhealthy', 'failing its health check');
    }
    this.#publishRoutesOf(record.endpointId);
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
    if (state !== 'unhealthy') delete record.unhealthySince;
    else if (record.state !== 'unhealthy') record.unhealthySince = this.#o.clock();
    record.state = state;
    record.message = message;
    record.error = error;
    if (state !== 'running')
      record.healthy = state === 'unhealthy' ? false : record.healthy && state === 'draining';
    this.#book.markDirty(record);
  }

  /** The record only: its GPUs are released by #removeContainer once the container is gone. */
  #fail(record: ManagedWorker, code: WorkerErrorCode, message: string): void {
    const wasRoutable = record.state === 'running';
    this.#setState(record, 'failed', message, code);
    this.#o.metrics?.failures.inc({ code });
    record.healthy = false;
    this.#prober.stop(record.id);
    // The gateway must stop sending it requests now, not at the end of the pass: its container is stopped next.
    if (wasRoutable) this.#publishRoutesOf(record.endpointId);
  }

  /**
   * draining (in-flight requests finish) -> stopped (drained; its container is being removed) -> gone. Once its
   * requests have finished, the removal goes ahead only while `stillWanted` (an owner may undrain meanwhile).
   */
  #drainAndRemove(record: ManagedWorker, reason: string, stillWanted: () => boolean = () => true): void {
    if (record.state === 'draining' || record.state === 'stopped') return;
    const hadContainer = hasContainer(record);
    this.#prober.stop(record.id);
    if (!hadContainer) {
      this.#forget(record);
      return;
    }
    this.#setState(record, 'draining', reason);
    this.#publishRoutesOf(record.endpointId);
    void this.#removeOnceDrained(record, reason, stillWanted);
  }

  async #removeOnceDrained(record: ManagedWorker, reason: string, stillWanted: () => boolean): Promise<void> {
    try {
      await (this.#o.awaitDrained?.(record.endpointId, record.id) ?? Promise.resolve());
    } catch (error) {
      // Requests still in flight fail with the worker; it must go all the same.
      this.#o.logger.warn({ err: error, workerId: record.id }, 'drain failed; removing the worker anyway');
    }
    if (!stillWanted()) return;
    this.#setState(record, 'stopped', `drained (${reason}); removing its container`);
    const error = await this.#removeContainer(record.id, record.gpuUuids, reason);
    if (!error) {
      this.#forget(record);
      return;
    }
    // The GPUs stay held by the removal, which later passes retry.
    this.#setState(record, 'failed', `could not be removed: ${error.message}`, 'RUNTIME_ERROR');
  }

  /**
   * Removes the worker's container. Its GPUs stay held (the GPU ledger) until the runtime has removed it: the container
   * runs on them through the grace period. Resolves to the error when the removal failed (retried by later passes).
   */
  async #removeContainer(workerId: string, gpuUuids: string[], reason: string): Promise<Error | undefined> {
    this.#gpus.releaseStarted(workerId, gpuUuids);
    const keep = this.#o.outputs ? await this.#keepOutput(this.#o.outputs, workerId, reason) : undefined;
    try {
      await this.#o.runtime.remove(workerId);
      this.#released(workerId);
      return undefined;
    } catch (error) {
      this.#gpus.releaseFailed(workerId);
      this.#o.logger.warn({ ...runtimeErrorFields(error), workerId, reason }, 'cannot remove worker');
      return error instanceof Error ? error : new Error(String(error));
    } finally {
      keep?.();
      this.poke();
    }
  }

  /** Starts keeping the last output of a worker about to be removed (output-keeper.ts); the result ends it. */
  async #keepOutput(
    keeper: Pick<OutputKeeper, 'begin'>,
    workerId: string,
    reason: string,
  ): Promise<(() => void) | undefined> {
    const record = this.#book.get(workerId);
    if (!record) return undefined;
    const failed = record.state === 'failed';
    return keeper.begin({
      workerId,
      endpointId: record.endpointId,
      failed,
      reason: failed ? record.message : reason,
    });
  }

  /** The container is gone: its GPUs are free, and a failed record shown in the API no longer names them. */
  #released(workerId: string): void {
    this.#gpus.released(workerId);
    const record = this.#book.get(workerId);
    if (record?.state === 'failed' && record.gpuUuids.length > 0) {
      record.gpuUuids = [];
      this.#book.markDirty(record);
    }
  }

  #forget(record: ManagedWorker): void {
    this.#ownerDrains.delete(record.id);
    this.#book.forget(record);
    this.#prober.stop(record.id);
    this.#causesTold.forget(record.id);
    this.#createdAtListing.delete(record.id);
    this.#adoptedIds.delete(record.id);
  }

  /** Keeps the newest failed records of an endpoint, for the API to show why. */
  #trimFailed(endpointId: string): void {
    for (const record of this.#book.failedBeyond(endpointId, this.#o.failedKept)) this.#forget(record);
  }

  // ---- report ----

  /** The pass's changes to the store, and what the gateway reads to the routing table (pass-report.ts). */
  async #reportAndPublish(endpoints: Endpoint[]): Promise<void> {
    const { store, routes, clock } = this.#o;
    for (const [endpointId, event] of this.#events.splice(0)) await store.events.append(endpointId, [event]);
    await reportPass({
      store,
      routes,
      book: this.#book,
      endpoints,
      now: clock(),
      outage: this.#outage.text,
      fence: this.#o.fence,
      statusOf: (endpoint, workers) =>
        withImageStatus(
          endpointStatus(
            endpoint,
            workers,
            this.#crashes.of(endpoint.id),
            this.#crashes.policy,
            this.#placement.whyNeverPlaceable(endpoint.spec),
          ),
          this.#images.of(endpoint.id),
          workers,
        ),
    });
  }
}
