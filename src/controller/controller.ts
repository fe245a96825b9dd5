/**
 * Level-triggered reconciliation: each pass compares each endpoint's desired workers with what the runtime runs,
 * decides with pure functions (planner, placement, status) and applies the decisions through the worker lifecycle
 * (lifecycle/: every state change of a worker, checked against its table). Its other parts, each in its own file:
 * the pass loop, the worker book, the health prober, the GPU ledger, the crash ledger and the store write-back. It
 * publishes routable workers to the routing table and asks the autoscaler how many it wants.
 */
import { totalmem } from 'node:os';
import type { Endpoint } from '../domain/endpoint.js';
import { systemTimers } from '../ports/clock.js';
import { LABELS, type RuntimeEvent, type RuntimeWorker } from '../runtime/types.js';
import { LeaseLostError } from '../store/leases.js';
import { mayBeRestarting, movedAddress } from './container-changes.js';
import {
  type ControllerOptions,
  DEFAULT_RESTART_GRACE_MS,
  DEFAULT_UNHEALTHY_TIMEOUT_MS,
  STARTING_PROBE_INTERVAL_MS,
} from './controller-options.js';
import { DEFAULT_BACKOFF } from './crashes/backoff.js';
import { CrashLedger } from './crashes/crash-ledger.js';
import { EndpointSnapshot } from './endpoint-snapshot.js';
import { endpointStatus } from './endpoint-status.js';
import { HealthProber, type ProbeTarget } from './health/health-prober.js';
import { appPortOf } from './health/health-report.js';
import { ownedHere } from './installation.js';
import { OwnerDrains } from './lifecycle/owner-drains.js';
import { isTierAction, TierKeeper } from './lifecycle/tier-keeper.js';
import { WorkerLifecycle } from './lifecycle/worker-lifecycle.js';
import { WorkerStarter } from './lifecycle/worker-starter.js';
import { PassLoop } from './pass-loop.js';
import { reportPass } from './pass-report.js';
import { GpuLedger } from './placement/gpu-ledger.js';
import { inventoryPlacement, type WorkerPlacement } from './placement/worker-placement.js';
import { type PlanAction, planEndpoint } from './planner.js';
import { RuntimeOutage } from './runtime-outage.js';
import { followsRuntime } from './runtime-wait.js';
import { ImagePreparer } from './workers/image-preparer.js';
import { withImageStatus } from './workers/image-state.js';
import { isInTier, isStarted, type ManagedWorker, pendingRecord } from './workers/managed-worker.js';
import { WorkerBook } from './workers/worker-book.js';
import { fencedWorkerWrites } from './write-back.js';

export type {
  ControllerLogger,
  ControllerOptions,
  ScalingAdvisor,
  WriteFence,
} from './controller-options.js';
export type { HealthProbe } from './health/health-prober.js';

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
  | 'protocolEnv'
  | 'queueProbe'
  | 'onWorkerEnded'
  | 'outputs'
  | 'suspendBudgetBytes'
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
  /** Runtime listings begun so far; a pass's listing is as old as the number it took. */
  #listings = 0;
  #adopted = false;
  /** Every state change of a worker (lifecycle/worker-lifecycle.ts), starts and owners' drains. */
  readonly #lifecycle: WorkerLifecycle;
  readonly #starter: WorkerStarter;
  /** Frozen and suspended workers (lifecycle/tier-keeper.ts); absent where the runtime has no idle tiers. */
  readonly #tiers: TierKeeper | undefined;
  readonly #ownerDrains: OwnerDrains;
  /** Whether the runtime answers; while it does not, passes only report (and the gateway refuses new work). */
  readonly #outage: RuntimeOutage;
  /** Endpoint id -> its updatedAt at the last pass: an owner's change (update, start) gives it a new try. */
  #seenUpdatedAt = new Map<string, number>();
  readonly #loop: PassLoop;
  readonly #unsubscribe: (() => void)[] = [];

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
      onResult: (workerId, healthy, flipped, cause) =>
        this.#lifecycle.probed(workerId, healthy, flipped, cause),
    });
    const o = this.#o;
    const poke = () => this.poke();
    this.#lifecycle = new WorkerLifecycle({
      book: this.#book,
      gpus: this.#gpus,
      routes: o.routes,
      prober: this.#prober,
      runtime: o.runtime,
      crashes: this.#crashes,
      logger: o.logger,
      clock: o.clock,
      endpoints: () => this.#endpoints,
      poke,
      failedKept: o.failedKept,
      metrics: o.metrics,
      awaitDrained: o.awaitDrained,
      outputs: o.outputs,
      onForget: (workerId) => this.#ownerDrains.forget(workerId),
      onEnded: o.onWorkerEnded,
    });
    const idleTiers = o.runtime.idleTiers;
    this.#tiers = idleTiers
      ? new TierKeeper({
          tiers: idleTiers,
          book: this.#book,
          lifecycle: this.#lifecycle,
          placement: this.#placement,
          heldGpus: () => this.heldGpus(),
          prober: this.#prober,
          logger: o.logger,
          clock: o.clock,
          poke,
          awaitDrained: o.awaitDrained,
          endpoints: () => this.#endpoints,
          suspendBudgetBytes: o.suspendBudgetBytes ?? Math.floor(totalmem() / 2),
        })
      : undefined;
    this.#ownerDrains = new OwnerDrains({ book: this.#book, lifecycle: this.#lifecycle, logger: o.logger });
    this.#starter = new WorkerStarter({
      lifecycle: this.#lifecycle,
      book: this.#book,
      gpus: this.#gpus,
      images: this.#images,
      runtime: o.runtime,
      prober: this.#prober,
      crashes: this.#crashes,
      outage: this.#outage,
      logger: o.logger,
      clock: o.clock,
      listings: () => this.#listings,
      poke,
      storagePaths: o.storagePaths,
      revealCredentials: o.revealCredentials,
      installationId: o.installationId,
      readOnlyStorages: o.readOnlyStorages,
      memoryGBPerGpu: o.memoryGBPerGpu,
      imageAccess: o.imageAccess,
      resolveEnv: o.resolveEnv,
      protocolEnv: o.protocolEnv,
      metrics: o.metrics,
    });
  }

  start(): void {
    const { runtime, routes, scaling } = this.#o;
    const poke = () => this.poke();
    const onEvent = (event: RuntimeEvent) => {
      this.#lifecycle.containerEvent(event);
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
    this.#ownerDrains.apply(drainRequested);
    for (const endpoint of endpoints) this.#apply(endpoint, this.#plan(endpoint, now), now);
    this.#removeOrphans(live);
    this.#o.scaling?.retain((endpointId) => live.has(endpointId));
    this.#crashes.retain((endpointId) => live.has(endpointId));
    this.#place(live, now);
    this.#tiers?.keepBudget([...this.#book.all()]);
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
        this.#lifecycle.adopt(container, live.get(container.endpointId), now);
      } else if (container.phase === 'exited' && (isPresent(record.state) || this.#follows(record))) {
        if (mayBeRestarting(record, now, this.#o.restartGraceMs)) continue;
        this.#lifecycle.containerExited(record, container, now);
      } else if (this.#follows(record)) {
        this.#lifecycle.follow(record, container, live.get(record.endpointId), now);
      } else {
        const moved = movedAddress(record, container);
        if (moved) this.#lifecycle.containerChanged(record, moved);
      }
    }
    for (const record of this.#book.all()) {
      const present = isPresent(record.state) || this.#follows(record);
      if (present && !seen.has(record.id) && this.#listedSinceCreated(record.id, listing)) {
        this.#lifecycle.workerDied(record, 'its container disappeared', now);
      }
    }
    this.#lifecycle.retryRemovals(seen);
  }

  /**
   * Whether this listing began after the worker's create completed, so that it would show the worker. A pass awaits
   * the store between its listing and this check: a create that completes meanwhile is missing from the listing.
   */
  #listedSinceCreated(workerId: string, listing: number): boolean {
    if (this.#gpus.isCreating(workerId)) return false;
    return this.#lifecycle.createdAtListing(workerId) < listing;
  }

  /** A worker the runtime has and no create of this process reports on (adopted, not running yet). */
  #follows(record: ManagedWorker): boolean {
    return followsRuntime(record) && !this.#gpus.isCreating(record.id);
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
      ...(this.#tiers ? { tiers: { freeze: true, suspend: this.#tiers.suspendable } } : {}),
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
      if (isTierAction(action)) {
        this.#tiers?.apply(action, record, this.#endpoints);
      } else if (action.type === 'remove') {
        this.#lifecycle.drainAndRemove(record, action.reason);
      } else {
        this.#lifecycle.failByPlan(record, action.code, action.message, now);
      }
    }
    this.#lifecycle.trimFailed(endpoint.id);
  }

  #addPending(endpoint: Endpoint, now: number): void {
    this.#book.track(pendingRecord(endpoint, now));
  }

  /** Workers of endpoints that no longer exist are removed (also after a restart). */
  #removeOrphans(live: Map<string, Endpoint>): void {
    for (const record of this.#book.all()) {
      if (!live.has(record.endpointId)) this.#lifecycle.drainAndRemove(record, 'its endpoint was deleted');
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
      if (record && record.message !== reason)
        this.#lifecycle.move(record, { state: record.state, message: reason, error: record.error });
    }
    for (const { workerId, gpus, productId } of result.placed) {
      const record = this.#book.get(workerId);
      const endpoint = record && live.get(record.endpointId);
      if (record && endpoint) void this.#starter.start(record, endpoint, { gpus, productId }, now);
    }
    for (const { workerId, reason } of result.reclaim) {
      const record = this.#book.get(workerId);
      if (record) this.#lifecycle.drainAndRemove(record, reason);
    }
    if (result.pending.length > 0) this.#tiers?.relieve([...this.#book.all()], result.pending, live);
  }

  // ---- health ----

  #probeTarget(workerId: string): ProbeTarget | undefined {
    const record = this.#book.get(workerId);
    const endpoint = record && this.#endpoints.get(record.endpointId);
    if (!record || !endpoint || !record.address || !isStarted(record.state) || this.#loop.stopped)
      return undefined;
    const appPort = appPortOf(this.#o.runtime.name, record.address, endpoint.spec.port);
    const { queueProbe } = this.#o;
    // A queue worker pulls its jobs: its polls and pings are its health, not an HTTP answer.
    const probe =
      endpoint.spec.type === 'queue' && queueProbe ? () => queueProbe(endpoint.id, workerId) : undefined;
    return {
      address: record.address,
      check: endpoint.spec.health,
      appPort,
      fast: record.readyAt === null,
      ...(probe ? { probe } : {}),
    };
  }

  // ---- report ----

  /** The pass's changes to the store, and what the gateway reads to the routing table (pass-report.ts). */
  async #reportAndPublish(endpoints: Endpoint[]): Promise<void> {
    const { store, routes, clock } = this.#o;
    for (const [endpointId, event] of this.#lifecycle.takeEvents())
      await store.events.append(endpointId, [event]);
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

/** A worker whose container the runtime should list: started, or resting in an idle tier. */
function isPresent(state: ManagedWorker['state']): boolean {
  return isStarted(state) || isInTier(state);
}
