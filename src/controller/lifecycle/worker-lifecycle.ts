/**
 * Performs every state change of a worker through the lifecycle table (lifecycle-table.ts) and what each change
 * does: routing (the endpoint's routes are published when a worker enters or leaves them), probing (stopped when it
 * leaves the probed states), the GPU ledger (a removed container's GPUs stay held until the runtime says it is
 * gone) and the store (the book marks the row to write). Also the moves themselves: failing, draining, adopting
 * after a restart, following the runtime's word, containers that change between passes, health verdicts (removing
 * a drained or failed worker's container is worker-removals.ts). A move the table refuses is logged at error with
 * both states and not made.
 */
import type { Endpoint } from '../../domain/endpoint.js';
import { awaitedHealth, healthCheckLabel } from '../../domain/health-path.js';
import type { NewEvent } from '../../domain/records.js';
import type { WorkerErrorCode, WorkerState } from '../../domain/worker.js';
import { isInTier } from '../../domain/worker.js';
import type { Clock } from '../../ports/clock.js';
import type { WakeReport } from '../../ports/routing-view.js';
import { exitDescription } from '../../runtime/exit-description.js';
import type { RuntimeEvent, RuntimeWorker, WorkerRuntime } from '../../runtime/types.js';
import { type ContainerResponse, eventResponse } from '../container-changes.js';
import type { ControllerLogger } from '../controller-options.js';
import { crashedEvent, failedEvent } from '../crashes/crash-event.js';
import type { CrashLedger } from '../crashes/crash-ledger.js';
import type { HealthProber } from '../health/health-prober.js';
import { HealthCausesTold, healthEvent, healthMessage, mayTell } from '../health/health-report.js';
import { nextNotFoundRun } from '../health/not-found-verdict.js';
import type { ProbeResult } from '../health/probe-result.js';
import type { ControllerMetrics } from '../metrics.js';
import type { OutputKeeper } from '../output/output-keeper.js';
import type { GpuLedger } from '../placement/gpu-ledger.js';
import type { RoutingTable } from '../routing-table.js';
import { followed } from '../runtime-wait.js';
import { adoptedRecord, hasContainer, type ManagedWorker } from '../workers/managed-worker.js';
import type { WorkerBook } from '../workers/worker-book.js';
import { RefusedTransitionError, transition } from './lifecycle-table.js';
import { WorkerLog } from './worker-log.js';
import { WorkerRemovals } from './worker-removals.js';

export interface WorkerLifecycleOptions {
  book: WorkerBook;
  gpus: GpuLedger;
  routes: Pick<RoutingTable, 'publishRoutable'>;
  prober: Pick<HealthProber, 'schedule' | 'stop'>;
  runtime: Pick<WorkerRuntime, 'remove' | 'idleTiers'>;
  crashes: CrashLedger;
  logger: ControllerLogger;
  clock: Clock;
  /** Runtime listings begun so far (a worker forgotten after a listing began may still be in it). */
  listings: () => number;
  /** The live endpoints as of the last pass (health settings are read here). */
  endpoints: () => ReadonlyMap<string, Endpoint>;
  /** Asks for a reconcile of the endpoint (undefined: of every endpoint, the whole pass). */
  poke: (endpointId?: string) => void;
  /** Failed workers kept per endpoint so that the API can show why. */
  failedKept: number;
  metrics?: ControllerMetrics | undefined;
  awaitDrained?: ((endpointId: string, workerId: string) => Promise<void>) | undefined;
  outputs?: Pick<OutputKeeper, 'begin'> | undefined;
  /** Told when a worker is forgotten (owners' drains drop theirs). */
  onForget?: (workerId: string) => void;
  /**
   * Told when a worker is chosen for removal (draining), when it stops or fails, and once its container is gone,
   * with why: the jobs it held go back to the queue at once (the jobs side), not once its silence is noticed. Told
   * again at each step, since a take that crossed the decision (on another replica) may have handed it one since.
   */
  onEnded?: ((endpointId: string, workerId: string, reason: string) => void) | undefined;
  /**
   * Told after each state change, adoption and forgetting, with when it happened (the usage ledger:
   * usage-report.ts); `at` is the runtime's own time where it said one (an exit), else now; `gone`: forgotten.
   */
  onUsage?: ((record: ManagedWorker, at: number, gone?: boolean) => void) | undefined;
}

/** The states of a worker on its way out or gone: it takes no job, and what it held goes back to the queue. */
const HANDS_BACK: ReadonlySet<WorkerState> = new Set(['draining', 'stopped', 'failed']);

/** A move of a worker to a state, with its message and error code. */
export interface Move {
  state: WorkerState;
  message: string;
  error?: WorkerErrorCode | '';
  /** When it happened, where the runtime said (a container's exit); default now. */
  at?: number | undefined;
}

/**
 * A cold start's phases (the gateway's Server-Timing): `model` when it waited in `downloading` for its models (that
 * wait is then not counted in placement), placement, pull, create, ready; undefined if not all seen.
 */
export function coldWake(
  record: Pick<
    ManagedWorker,
    'createdAt' | 'placedAt' | 'pulledAt' | 'startedAt' | 'downloadingAt' | 'downloadedAt'
  >,
  readyAt: number,
): WakeReport | undefined {
  const { createdAt, placedAt, pulledAt, startedAt, downloadingAt, downloadedAt } = record;
  if (placedAt === undefined || pulledAt === undefined || startedAt === null) return undefined;
  const modelMs =
    downloadingAt !== undefined && downloadedAt !== undefined ? downloadedAt - downloadingAt : undefined;
  return {
    tier: 'cold',
    phases: [
      ...(modelMs === undefined ? [] : [{ name: 'model', ms: modelMs }]),
      { name: 'placement', ms: placedAt - createdAt - (modelMs ?? 0) },
      { name: 'pull', ms: pulledAt - placedAt },
      { name: 'create', ms: startedAt - pulledAt },
      { name: 'ready', ms: readyAt - startedAt },
    ],
    at: readyAt,
  };
}

/** How long a forgotten worker is remembered, so that a listing begun before its removal does not adopt it. */
const FORGOTTEN_KEPT_MS = 60_000;

export class WorkerLifecycle {
  readonly #o: WorkerLifecycleOptions;
  /** The lines a person reads about the workers (worker-log.ts); the starter writes its own through it. */
  readonly log: WorkerLog;
  /** Container removals, their retries and the failures told as they go (worker-removals.ts); the starter's too. */
  readonly removals: WorkerRemovals;
  readonly #causesTold = new HealthCausesTold();
  /** Workers found running after a restart: their create-to-running time was not seen by this process. */
  readonly #adoptedIds = new Set<string>();
  /** Worker id -> the runtime listings begun when its create completed (runtime-observer.ts: #listedSinceCreated). */
  readonly #createdAtListing = new Map<string, number>();
  /**
   * Worker id -> the runtime listings begun when it was forgotten, and when (oldest first): a listing begun before
   * its container was removed still shows the container, which is not a worker to adopt.
   */
  readonly #forgottenAtListing = new Map<string, { listing: number; at: number }>();
  /** Events of this pass for the endpoints' logs (workers that exited), written with the statuses. */
  readonly #events: [endpointId: string, event: NewEvent][] = [];

  constructor(options: WorkerLifecycleOptions) {
    this.#o = options;
    this.log = new WorkerLog({
      logger: options.logger,
      endpoints: options.endpoints,
      policy: options.crashes.policy,
      clock: options.clock,
    });
    this.removals = new WorkerRemovals({ ...options, log: this.log, lifecycle: this });
  }

  /**
   * Moves the worker to `state` (or gives it a new message) if the table allows, and does what the move means for
   * routing, probing and the store. Returns whether it was made.
   */
  move(record: ManagedWorker, { state, message, error = '', at }: Move): boolean {
    if (record.state === state && record.message === message && record.error === error) return true;
    const checked = transition(record.state, state);
    if (!checked.allowed) {
      const err = new RefusedTransitionError(record.id, record.state, state);
      this.#o.logger.error(
        { err, code: err.code, workerId: record.id, from: record.state, to: state },
        'worker state transition refused',
      );
      return false;
    }
    if (state !== 'unhealthy') delete record.unhealthySince;
    else if (record.state !== 'unhealthy') record.unhealthySince = this.#o.clock();
    const handsBack = HANDS_BACK.has(state) && state !== record.state;
    record.state = state;
    record.message = message;
    record.error = error;
    if (state !== 'running')
      record.healthy = state === 'unhealthy' ? false : record.healthy && state === 'draining';
    this.#o.book.markDirty(record);
    this.#o.onUsage?.(record, at ?? this.#o.clock());
    const { routing, probing } = checked.effects;
    if (probing === 'leaves') this.#o.prober.stop(record.id);
    // The gateway must stop (or start) sending it requests now, not at the end of the pass.
    if (routing !== 'unchanged') this.publishRoutesOf(record.endpointId);
    if (handsBack) this.#o.onEnded?.(record.endpointId, record.id, message);
    return true;
  }

  /** Tells the routing table one endpoint's routable workers, after one of them changed between passes. */
  publishRoutesOf(endpointId: string): void {
    this.#o.routes.publishRoutable(endpointId, this.#o.book.routableOf(endpointId));
  }

  /** The events of the pass so far, handed over once (the pass writes them with the statuses). */
  takeEvents(): [endpointId: string, event: NewEvent][] {
    return this.#events.splice(0);
  }

  pushEvent(endpointId: string, event: NewEvent): void {
    this.#events.push([endpointId, event]);
  }

  /** A failure's `crashed` or `failed` event, told in the log too once its container is removed (worker-removals.ts). */
  failureEvent(record: ManagedWorker, event: NewEvent): void {
    this.pushEvent(record.endpointId, event);
    const crash = this.#o.crashes.of(record.endpointId);
    this.removals.noteFailure(record.id, { endpointId: record.endpointId, event, crash });
  }

  // ---- creates (worker-starter.ts) ----

  /** The create completed at this many listings: a listing begun before it may lack the worker. */
  created(workerId: string, listing: number): void {
    this.#createdAtListing.set(workerId, listing);
  }

  createdAtListing(workerId: string): number {
    return this.#createdAtListing.get(workerId) ?? 0;
  }

  /** Whether the worker was forgotten (its container removed) after this listing began. */
  forgottenSinceListing(workerId: string, listing: number): boolean {
    const forgotten = this.#forgottenAtListing.get(workerId);
    return forgotten !== undefined && forgotten.listing >= listing;
  }

  // ---- failures ----

  /** The record only: its GPUs are released by its container's removal (worker-removals.ts) once it is gone. */
  fail(record: ManagedWorker, code: WorkerErrorCode, message: string, at?: number): void {
    if (!this.move(record, { state: 'failed', message, error: code, at })) return;
    this.#o.metrics?.failures.inc({ code });
    record.healthy = false;
    this.#o.prober.stop(record.id);
  }

  /** A failure the plan decided (startup deadline, unhealthy too long, no GPUs): counted, told, removed. */
  failByPlan(
    record: ManagedWorker,
    code: WorkerErrorCode,
    message: string,
    now: number,
    final = false,
  ): void {
    this.#o.crashes.record(record.endpointId, { code, message, at: now, ...(final ? { final } : {}) });
    this.fail(record, code, message);
    this.failureEvent(record, failedEvent(record.id, code, message, now));
    void this.removals.removeContainer(record.id, record.gpuUuids, message);
  }

  workerDied(record: ManagedWorker, reason: string, now: number, container?: RuntimeWorker): void {
    const code = this.#o.crashes.recordDeath(record.endpointId, reason, now, record.readyAt !== null);
    this.fail(record, code, `worker ${reason}`, container?.finishedAt);
    this.failureEvent(record, crashedEvent(record.id, reason, code, container, now));
    void this.removals.removeContainer(record.id, record.gpuUuids, reason);
  }

  /** A listed container of a worker whose exit the listing shows. */
  containerExited(record: ManagedWorker, container: RuntimeWorker, now: number): void {
    this.workerDied(record, exitDescription(container), now, container);
  }

  // ---- adoption and the runtime's word ----

  /** A worker found by label (after a restart): kept, and probed to learn its health again. */
  adopt(container: RuntimeWorker, endpoint: Endpoint | undefined, now: number): void {
    const record = adoptedRecord(container, endpoint, now);
    this.#o.book.track(record);
    this.#adoptedIds.add(record.id);
    this.#o.onUsage?.(record, container.finishedAt ?? now);
    this.log.note(record, 'adopted (found running at start)');
    if (record.state === 'failed')
      void this.removals.removeContainer(record.id, record.gpuUuids, 'it had exited');
    else if (endpoint && !isInTier(record.state)) this.#o.prober.schedule(record.id, 0);
  }

  /** A followed worker shows its runtime's state and words until it runs; then it is probed as a started one. */
  follow(record: ManagedWorker, container: RuntimeWorker, endpoint: Endpoint | undefined, now: number): void {
    const change = followed(record, container);
    if (change?.type === 'waiting') this.move(record, { state: change.state, message: change.message });
    if (change?.type !== 'started') return;
    record.address = change.address;
    record.startedAt = now;
    const awaited = endpoint ? awaitedHealth(endpoint.spec) : 'its health check to answer';
    this.move(record, { state: 'starting', message: `waiting for ${awaited}` });
    if (endpoint) this.#o.prober.schedule(record.id, 0);
  }

  /** A runtime event: an exit or pause leaves routing now, a start or resume is probed now (container-changes.ts). */
  containerEvent(event: RuntimeEvent): void {
    const record = this.#o.book.get(event.workerId);
    if (!record) return;
    const response = eventResponse(event, record);
    if (event.type === 'stopping' && response.type === 'unroute') record.engineStopSeen = true;
    if (response.type === 'unroute' && response.awaitRestart) record.exitSeenAt = this.#o.clock();
    if (event.type === 'started') {
      delete record.engineStopSeen;
      delete record.exitSeenAt;
      delete record.exitedUnlisted;
    }
    this.containerChanged(record, response);
  }

  containerChanged(record: ManagedWorker, response: ContainerResponse): void {
    if (response.type === 'none') return;
    if (response.type === 'exited') {
      // Its state stays until the pass lists the exit and declares it dead; only routing and probes stop now.
      record.exitedUnlisted = true;
      this.publishRoutesOf(record.endpointId);
      this.#o.prober.stop(record.id);
      return;
    }
    if (response.type === 'readdress') {
      this.log.note(record, 'container moved', { address: response.address });
      record.address = response.address;
      delete record.engineStopSeen;
      delete record.exitSeenAt;
      this.#o.book.markDirty(record);
    }
    // Out of routing now (move publishes the routes when it was in them).
    if (response.type !== 'reprobe') this.move(record, { state: 'unhealthy', message: response.message });
    // Its counts start over, so that neither a failing probe keeps it routed nor an old pass re-routes it.
    this.#o.prober.stop(record.id);
    const period = (this.#o.endpoints().get(record.endpointId)?.spec.health.periodSeconds ?? 0) * 1000;
    this.#o.prober.schedule(record.id, response.type === 'unroute' ? period : 0);
  }

  // ---- health ----

  /** A probe's result (health-prober.ts): a flip moves the worker; a failure's cause becomes its message. */
  probed(
    workerId: string,
    healthy: boolean,
    flipped: boolean,
    cause: string | undefined,
    result?: ProbeResult,
  ): void {
    const record = this.#o.book.get(workerId);
    if (!record) return;
    if (result) record.notFound = nextNotFoundRun(record.notFound, result, this.#o.clock());
    if (flipped || (healthy && record.state !== 'running')) this.#healthChanged(record, healthy);
    record.healthCause = cause ?? '';
    if (cause !== undefined) this.#healthFailed(record, cause);
  }

  /** The failing probe's cause becomes the message of a worker that is not routable, and once an event. */
  #healthFailed(record: ManagedWorker, cause: string): void {
    const spec = this.#o.endpoints().get(record.endpointId)?.spec;
    const health = spec?.health;
    const path = health?.path ?? '';
    const message = healthMessage(record, spec ? healthCheckLabel(spec) : path, cause);
    if (message !== undefined) this.move(record, { state: record.state, message });
    const now = this.#o.clock();
    if (!mayTell(record, (health?.periodSeconds ?? 0) * 1000, now)) return;
    if (!this.#causesTold.firstTime(record.id, cause)) return;
    this.pushEvent(record.endpointId, healthEvent(record.id, path, cause, now));
    this.log.healthFailing(record, spec ? healthCheckLabel(spec) : path, cause);
    this.#o.poke(record.endpointId);
  }

  #healthChanged(record: ManagedWorker, healthy: boolean): void {
    record.healthy = healthy;
    if (healthy) {
      const firstReady = record.readyAt === null;
      if (record.readyAt === null) {
        record.readyAt = this.#o.clock();
        // An adopted worker's createdAt is its container's: the histogram would record its whole age.
        if (!this.#adoptedIds.has(record.id)) {
          this.#o.metrics?.timeToReady.observe((record.readyAt - record.createdAt) / 1000);
          const wake = coldWake(record, record.readyAt);
          if (wake) record.wake = wake;
        }
      }
      this.move(record, { state: 'running', message: '' });
      // Once per worker: a worker healthy again after a failing spell had its failure said, not its recovery.
      if (firstReady) {
        const known = !this.#adoptedIds.has(record.id) && record.readyAt !== null;
        this.log.ready(record, known ? (record.readyAt ?? 0) - record.createdAt : undefined);
      } else this.log.note(record, 'healthy again');
    } else {
      this.move(record, { state: 'unhealthy', message: 'failing its health check' });
    }
    // Its health flipped within a state too (running and healthy again): routing is told either way.
    this.publishRoutesOf(record.endpointId);
    this.#o.poke(record.endpointId);
  }

  // ---- drains and removals ----

  /**
   * draining (in-flight requests finish) -> stopped (drained; its container is being removed) -> gone. Once its
   * requests have finished, the removal goes ahead only while `stillWanted` (an owner may undrain meanwhile).
   */
  drainAndRemove(record: ManagedWorker, reason: string, stillWanted: () => boolean = () => true): void {
    if (record.state === 'draining' || record.state === 'stopped') return;
    this.#o.prober.stop(record.id);
    if (!hasContainer(record)) {
      this.forget(record);
      return;
    }
    if (!this.move(record, { state: 'draining', message: reason })) return;
    this.log.stopping(record, reason);
    void this.removals.removeOnceDrained(record, reason, stillWanted);
  }

  /** Back into service while still draining (an owner's undrain): running if it was serving, else probed anew. */
  undrain(record: ManagedWorker, wasServing: boolean): void {
    if (wasServing) {
      record.healthy = true;
      this.move(record, { state: 'running', message: '' });
    } else {
      this.move(record, { state: 'starting', message: 'undrained; waiting for its health check' });
    }
    this.#o.prober.schedule(record.id, 0);
  }

  /** The worker is gone: its record, its row (deleted at the end of the pass) and what was kept about it. */
  forget(record: ManagedWorker): void {
    this.#o.onForget?.(record.id);
    this.#o.onUsage?.(record, this.#o.clock(), true);
    this.#o.book.forget(record);
    this.#o.prober.stop(record.id);
    this.#causesTold.forget(record.id);
    this.#createdAtListing.delete(record.id);
    this.#adoptedIds.delete(record.id);
    this.#rememberForgotten(record.id);
  }

  #rememberForgotten(workerId: string): void {
    const now = this.#o.clock();
    // A listing is observed within seconds of its start: after a minute no listing begun before can be in flight.
    for (const [id, { at }] of this.#forgottenAtListing) {
      if (now - at < FORGOTTEN_KEPT_MS) break;
      this.#forgottenAtListing.delete(id);
    }
    this.#forgottenAtListing.delete(workerId);
    this.#forgottenAtListing.set(workerId, { listing: this.#o.listings(), at: now });
  }

  /** Keeps the newest failed records of an endpoint, for the API to show why. */
  trimFailed(endpointId: string): void {
    for (const record of this.#o.book.failedBeyond(endpointId, this.#o.failedKept)) this.forget(record);
  }
}
