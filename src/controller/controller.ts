/**
 * Level-triggered reconciliation: each reconcile compares an endpoint's desired workers with what the runtime runs,
 * decides with pure functions (planner, placement, status) and applies the decisions through the worker lifecycle
 * (lifecycle/: every state change of a worker, checked against its table). Reconciles come from a work queue keyed
 * by endpoint (queue/): one endpoint's change reconciles that endpoint alone, and the whole pass (every endpoint,
 * the runtime's whole listing) is the periodic resync. Its other parts, each in its own file: the observe step,
 * the worker book, the health prober, the GPU ledger, the crash ledger, what holds a worker from placement (its
 * owner's budget, its models: placement/start-holds.ts) and the store write-back. It publishes
 * routable workers to the routing table and asks the autoscaler how many it wants.
 */
import { totalmem } from 'node:os';
import type { Endpoint } from '../domain/endpoint.js';
import { LABELS, type RuntimeEvent, type RuntimeWorker } from '../runtime/types.js';
import { heldIf } from './budget-holds.js';
import {
  type ControllerOptions,
  type ResolvedControllerOptions,
  withDefaults,
} from './controller-options.js';
import { CrashLedger } from './crashes/crash-ledger.js';
import { EndpointSnapshot } from './endpoint-snapshot.js';
import { endpointStatus } from './endpoint-status.js';
import { HealthProber, type ProbeTarget } from './health/health-prober.js';
import { probeTargetOf } from './health/probe-target.js';
import { ownedHere } from './installation.js';
import { OwnerDrains } from './lifecycle/owner-drains.js';
import { isTierAction, TierKeeper } from './lifecycle/tier-keeper.js';
import { usageReporter } from './lifecycle/usage-report.js';
import { WorkerLifecycle } from './lifecycle/worker-lifecycle.js';
import { WorkerStarter } from './lifecycle/worker-starter.js';
import { OwnerChanges } from './owner-changes.js';
import { type PassReport, reportEndpoint, reportPass } from './pass-report.js';
import { GpuLedger } from './placement/gpu-ledger.js';
import { StartHolds } from './placement/start-holds.js';
import { inventoryPlacement, type WorkerPlacement } from './placement/worker-placement.js';
import { type PlanAction, planEndpoint } from './planner.js';
import { reconcileQueue, WHOLE_PASS } from './queue/reconcile-queue.js';
import { DEFAULT_RETRY, type WorkQueue } from './queue/work-queue.js';
import { RuntimeObserver } from './runtime-observer.js';
import { RuntimeOutage } from './runtime-outage.js';
import { ImagePreparer } from './workers/image-preparer.js';
import { withImageStatus } from './workers/image-state.js';
import { type ManagedWorker, pendingRecord } from './workers/managed-worker.js';
import { WorkerBook } from './workers/worker-book.js';
import { deleteStaleRows } from './write-back.js';

export type {
  ControllerLogger,
  ControllerOptions,
  ScalingAdvisor,
  WriteFence,
} from './controller-options.js';
export type { HealthProbe } from './health/health-prober.js';

/** What one reconcile covers: every endpoint (the whole pass), or one. */
const EVERY_ENDPOINT = Symbol('every endpoint');
type PassScope = typeof EVERY_ENDPOINT | { endpointId: string };

export class Controller {
  readonly #o: ResolvedControllerOptions;
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
  /** What keeps a waiting worker from placement: its owner's budget, its models (placement/start-holds.ts). */
  readonly #holds: StartHolds;
  /** Runtime listings begun so far; a pass's listing is as old as the number it took. */
  #listings = 0;
  #adopted = false;
  /** Every state change of a worker (lifecycle/worker-lifecycle.ts), starts and owners' drains. */
  readonly #lifecycle: WorkerLifecycle;
  readonly #starter: WorkerStarter;
  /** Frozen and suspended workers (lifecycle/tier-keeper.ts); absent where the runtime has no idle tiers. */
  readonly #tiers: TierKeeper | undefined;
  readonly #ownerDrains: OwnerDrains;
  /** The observe step: what a listing says of the workers (runtime-observer.ts). */
  readonly #observer: RuntimeObserver;
  /** Whether the runtime answers; while it does not, passes only report (and the gateway refuses new work). */
  readonly #outage: RuntimeOutage;
  /** An owner's change (update, start) gives its endpoint a new try (owner-changes.ts). */
  readonly #ownerChanges: OwnerChanges;
  /** What is reconciled next: endpoints by id, or the whole pass (queue/work-queue.ts). */
  readonly #queue: WorkQueue<string>;
  readonly #unsubscribe: (() => void)[] = [];

  constructor(options: ControllerOptions) {
    this.#o = withDefaults(options);
    this.#placement = options.placement ?? inventoryPlacement(options.gpus);
    this.#snapshot = new EndpointSnapshot({ source: this.#o.store.endpoints });
    this.#crashes = new CrashLedger({ policy: this.#o.backoff, resetAfterMs: this.#o.crashResetMs });
    this.#ownerChanges = new OwnerChanges({ clear: (endpointId) => this.#crashes.clear(endpointId) });
    this.#outage = new RuntimeOutage({ logger: this.#o.logger });
    this.#queue = reconcileQueue({
      timers: this.#o.timers,
      intervalMs: this.#o.intervalMs,
      concurrency: this.#o.reconcileConcurrency,
      retry: this.#o.retry ?? DEFAULT_RETRY,
      logger: this.#o.logger,
      whole: () => this.reconcile(),
      one: (endpointId) => this.reconcileEndpoint(endpointId),
    });
    this.#images = new ImagePreparer({
      runtime: this.#o.runtime,
      imageAccess: this.#o.imageAccess,
      revealCredentials: this.#o.revealCredentials,
      clock: this.#o.clock,
      policy: this.#o.backoff,
      logger: this.#o.logger,
      onSettled: (endpointId) => this.pokeEndpoint(endpointId),
    });
    this.#prober = new HealthProber({
      probe: this.#o.probe,
      timers: this.#o.timers,
      startingIntervalMs: this.#o.startingProbeIntervalMs,
      target: (workerId) => this.#probeTarget(workerId),
      onResult: (workerId, healthy, flipped, cause, result) =>
        this.#lifecycle.probed(workerId, healthy, flipped, cause, result),
    });
    const o = this.#o;
    const poke = (id?: string) => (id === undefined ? this.poke() : this.pokeEndpoint(id));
    this.#lifecycle = new WorkerLifecycle({
      book: this.#book,
      gpus: this.#gpus,
      routes: o.routes,
      prober: this.#prober,
      runtime: o.runtime,
      crashes: this.#crashes,
      logger: o.logger,
      clock: o.clock,
      listings: () => this.#listings,
      endpoints: () => this.#endpoints,
      poke,
      failedKept: o.failedKept,
      metrics: o.metrics,
      awaitDrained: o.awaitDrained,
      outputs: o.outputs,
      onForget: (workerId) => this.#ownerDrains.forget(workerId),
      onEnded: o.onWorkerEnded,
      onUsage: o.usage
        ? usageReporter(o.usage, o.gpus, o.memoryGBPerGpu, (id) => this.#endpoints.get(id))
        : undefined,
    });
    this.#holds = new StartHolds({
      book: this.#book,
      lifecycle: this.#lifecycle,
      budgets: o.budgets,
      models: o.models,
      clock: o.clock,
      logger: o.logger,
      endpoints: () => this.#endpoints,
      pokeEndpoint: (endpointId) => this.pokeEndpoint(endpointId),
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
    this.#observer = new RuntimeObserver({
      book: this.#book,
      gpus: this.#gpus,
      lifecycle: this.#lifecycle,
      restartGraceMs: o.restartGraceMs,
    });
    this.#starter = new WorkerStarter({
      // A create that ended: the creates of one endpoint end together and share its reconcile (coalesceMs).
      poke: (endpointId) =>
        endpointId === undefined ? this.poke() : this.#queue.addAfter(endpointId, o.coalesceMs),
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
      storagePaths: o.storagePaths,
      revealCredentials: o.revealCredentials,
      installationId: o.installationId,
      readOnlyStorages: o.readOnlyStorages,
      memoryGBPerGpu: o.memoryGBPerGpu,
      imageAccess: o.imageAccess,
      resolveEnv: o.resolveEnv,
      protocolEnv: o.protocolEnv,
      ...(o.models ? { modelHubDir: o.models.cache.hubDir } : {}),
      metrics: o.metrics,
    });
  }

  start(): void {
    const { runtime, routes, scaling } = this.#o;
    const poke = () => this.poke();
    const onEvent = (event: RuntimeEvent) => {
      this.#lifecycle.containerEvent(event);
      // A worker this controller knows: its endpoint alone; any other (to adopt, say) is the whole pass's.
      const endpointId = this.#book.get(event.workerId)?.endpointId;
      endpointId === undefined ? poke() : this.pokeEndpoint(endpointId);
    };
    this.#unsubscribe.push(runtime.watch(onEvent), routes.onRefreshRequested(poke));
    if (scaling) this.#unsubscribe.push(scaling.onRescale(poke));
    // An owner's budget spent or allowed again: its endpoints hold or let go of their waiting workers.
    if (this.#o.budgets) this.#unsubscribe.push(this.#o.budgets.onChange(poke));
    this.#queue.start();
  }

  /** The whole pass as soon as possible (coalescing calls that arrive before or during one). */
  poke(): void {
    this.#queue.add(WHOLE_PASS);
  }

  /** One endpoint's reconcile as soon as possible (coalescing as poke() does). */
  pokeEndpoint(endpointId: string): void {
    this.#queue.add(endpointId);
  }

  async stop(): Promise<void> {
    for (const unsubscribe of this.#unsubscribe.splice(0)) unsubscribe();
    this.#prober.close();
    await this.#queue.stop();
  }

  /** Whether a reconcile is under way or asked for (tests on manual timers fire its timer, then wait for it). */
  get passes(): Pick<WorkQueue<string>, 'settled' | 'idle'> {
    return this.#queue;
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

  /** The whole pass: every endpoint, over the runtime's whole listing (the periodic resync). */
  reconcile(): Promise<void> {
    return this.#pass(EVERY_ENDPOINT);
  }

  /**
   * One endpoint's reconcile, what its changes cost (a create that finished, a crash, a probe's result, its image,
   * a GPU freed): the runtime's listing of its workers (a runtime that watches answers from memory) and its row,
   * then the same steps as the whole pass over that endpoint; placement is of every endpoint (a GPU it freed may
   * start another's worker, whose endpoint is then reconciled too). Before the first whole pass, and while the
   * runtime cannot be reached, the whole pass does it instead.
   */
  reconcileEndpoint(endpointId: string): Promise<void> {
    return this.#pass({ endpointId });
  }

  /**
   * One reconcile over its scope: observe, plan and apply, place, report. Nothing is removed until the runtime
   * could be listed, so a restart never loses workers.
   */
  async #pass(scope: PassScope): Promise<void> {
    const whole = scope === EVERY_ENDPOINT;
    if (!whole && (!this.#adopted || this.#outage.text !== undefined)) return this.poke();
    const { store, runtime, clock } = this.#o;
    const listing = ++this.#listings;
    let observed: RuntimeWorker[];
    try {
      observed = await runtime.list({
        [LABELS.managed]: 'true',
        ...(whole ? {} : { [LABELS.endpoint]: scope.endpointId }),
      });
    } catch (error) {
      // The whole pass finds the runtime unreachable and reports the outage: nothing is observed or changed, but
      // the states say so and the gateway refuses what needs a new worker.
      if (!whole) return this.poke();
      this.#outage.failed(error, clock());
      await this.#reportOutage();
      return;
    }
    if (whole)
      for (const record of this.#outage.reachable(clock(), (id) => this.#book.get(id)))
        this.#book.markDirty(record);
    const endpoints = whole
      ? await this.#snapshot.read()
      : [await this.#snapshot.readOne(scope.endpointId)].filter((e) => e !== undefined);
    const live = this.#liveWith(scope, endpoints);
    const drainRequested = await store.workers.drainRequested();
    observed = observed.filter((worker) => ownedHere(worker.labels, this.#o.installationId, live));
    const now = clock();
    // An endpoint created since the last whole pass: its workers' output is kept from the first one that ends.
    this.#o.outputs?.retain(new Set(live.keys()));
    if (whole) {
      this.#ownerChanges.sawAll(endpoints);
      if (!this.#adopted) await deleteStaleRows(this.#o.store, this.#o.fence, observed);
      this.#adopted = true;
      this.#endpoints = live;
    } else this.#ownerChanges.saw(scope.endpointId, endpoints[0]);
    this.#observer.observe({ workers: observed, number: listing, scope: this.#inScope(scope) }, live, now);
    // Only a whole listing says which workers are gone.
    if (whole) this.#o.usage?.workersKnown(new Set([...this.#book.all()].map((w) => w.id)), now);
    const listed = new Set([...this.#inScope(scope)].map((w) => w.id));
    this.#lifecycle.removals.retry(new Set(observed.map((w) => w.workerId)), (id) => whole || listed.has(id));
    this.#images.sync(endpoints, new Set(live.keys()), now);
    // Before planning: a drained worker no longer counts, so the plan replaces it; one adopted after a restart is
    // drained before it was ever routed.
    this.#ownerDrains.apply(drainRequested);
    for (const endpoint of endpoints) this.#apply(endpoint, this.#plan(endpoint, now), now);
    this.#forgetDeleted(this.#inScope(scope), live);
    const placed = this.#place(live, now);
    this.#tiers?.keepBudget([...this.#book.all()]);
    if (whole) return reportPass({ ...this.#reportParts(), endpoints });
    for (const other of placed) if (other !== scope.endpointId) this.pokeEndpoint(other);
    await reportEndpoint({ ...this.#reportParts(), endpointId: scope.endpointId, endpoint: endpoints[0] });
  }

  /** The workers the scope covers: the whole book's as it is when they are read, or the endpoint's now. */
  #inScope(scope: PassScope): Iterable<ManagedWorker> {
    return scope === EVERY_ENDPOINT ? this.#book.all() : this.#book.ofEndpoint(scope.endpointId);
  }

  /**
   * The live endpoints with the scope's as just read: the whole pass's new map (made the controller's once the pass
   * has adopted the runtime's workers), or the controller's, with the one endpoint's row in it (or out of it).
   */
  #liveWith(scope: PassScope, endpoints: Endpoint[]): Map<string, Endpoint> {
    if (scope === EVERY_ENDPOINT) return new Map(endpoints.map((e) => [e.id, e]));
    const [endpoint] = endpoints;
    if (endpoint) this.#endpoints.set(scope.endpointId, endpoint);
    else this.#endpoints.delete(scope.endpointId);
    return this.#endpoints;
  }

  /**
   * Workers (of the scope) whose endpoint is deleted are removed, also after a restart, and what was kept of
   * deleted endpoints goes: their scaling advice and crash record.
   */
  #forgetDeleted(inScope: Iterable<ManagedWorker>, live: Map<string, Endpoint>): void {
    for (const record of inScope)
      if (!live.has(record.endpointId)) this.#lifecycle.drainAndRemove(record, 'its endpoint was deleted');
    this.#o.scaling?.retain((endpointId) => live.has(endpointId));
    this.#crashes.retain((endpointId) => live.has(endpointId));
  }

  /** A pass while the runtime cannot be reached: the outage is written on the workers and statuses, and published. */
  async #reportOutage(): Promise<void> {
    const endpoints = await this.#snapshot.read();
    this.#endpoints = new Map(endpoints.map((e) => [e.id, e]));
    for (const record of this.#outage.note(this.#book.all())) this.#book.markDirty(record);
    await reportPass({ ...this.#reportParts(), endpoints });
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
      busyWorkers: advice?.busy ?? [],
      wakeWorkers: advice?.wake ?? [],
      ...(this.#tiers ? { tiers: { freeze: true, suspend: this.#tiers.suspendable } } : {}),
      budgetExceeded: this.#holds.budgetExceeded(endpoint.ownerId),
      crash: this.#crashes.of(endpoint.id),
      now,
      startupTimeoutMs: this.#o.startupTimeoutMs,
      unhealthyTimeoutMs: this.#o.unhealthyTimeoutMs,
    });
  }

  #apply(endpoint: Endpoint, actions: PlanAction[], now: number): void {
    this.#holds.holdForBudget(endpoint.id, actions);
    for (const action of actions) {
      if (action.type === 'add') {
        for (let i = 0; i < action.count; i++)
          this.#book.track(heldIf(pendingRecord(endpoint, now), action.held));
        continue;
      }
      const record = this.#book.get(action.workerId);
      if (!record || action.type === 'hold') continue;
      if (isTierAction(action)) this.#tiers?.apply(action, record, this.#endpoints);
      else if (action.type === 'remove') this.#lifecycle.drainAndRemove(record, action.reason);
      else this.#lifecycle.failByPlan(record, action.code, action.message, now, action.final === true);
    }
    this.#lifecycle.trimFailed(endpoint.id);
  }

  /**
   * Pending workers are placed (worker-placement.ts): on Corral's inventory they get GPUs, by fair share of each
   * product among owners, then oldest first, and those that fit start now (workers of an owner above its share
   * drain when one under its share waits); where the runtime's scheduler places workers, all start now.
   */
  #place(live: Map<string, Endpoint>, now: number): Set<string> {
    const changed = this.#holds.holdForModels(live, now);
    if (!this.#book.mayAwaitPlacement) return changed;
    const result = this.#placement.place([...this.#book.all()], live, () => this.heldGpus());
    if (!result) return changed;
    for (const { workerId, reason } of result.pending) {
      const record = this.#book.get(workerId);
      if (record && record.message !== reason) {
        this.#lifecycle.move(record, { state: record.state, message: reason, error: record.error });
        changed.add(record.endpointId);
      }
    }
    for (const { workerId, gpus, productId } of result.placed) {
      const record = this.#book.get(workerId);
      const endpoint = record && live.get(record.endpointId);
      if (record && endpoint) {
        void this.#starter.start(record, endpoint, { gpus, productId }, now);
        changed.add(record.endpointId);
      }
    }
    for (const { workerId, reason } of result.reclaim) {
      const record = this.#book.get(workerId);
      if (record) {
        this.#lifecycle.drainAndRemove(record, reason);
        changed.add(record.endpointId);
      }
    }
    if (result.pending.length > 0) this.#tiers?.relieve([...this.#book.all()], result.pending, live);
    return changed;
  }

  // ---- health ----

  #probeTarget(workerId: string): ProbeTarget | undefined {
    const record = this.#book.get(workerId);
    if (this.#queue.stopped) return undefined;
    const { runtime, queueProbe } = this.#o;
    const endpoint = record && this.#endpoints.get(record.endpointId);
    return probeTargetOf({ record, endpoint, runtimeName: runtime.name, queueProbe });
  }

  // ---- report ----

  /** What either report needs (pass-report.ts: the store's writes, then the routing table the gateway reads). */
  #reportParts(): Omit<PassReport, 'endpoints'> {
    const { store, routes, clock } = this.#o;
    return {
      store,
      routes,
      book: this.#book,
      events: this.#lifecycle.takeEvents(),
      now: clock(),
      outage: this.#outage.text,
      fence: this.#o.fence,
      budgetExceeded: (ownerId) => this.#holds.budgetExceeded(ownerId),
      statusOf: (endpoint: Endpoint, workers: ManagedWorker[]) =>
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
    };
  }
}
