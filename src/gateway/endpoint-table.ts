/**
 * The gateway's per-endpoint state, kept in step with the routing view: one dispatcher per endpoint with its
 * routable workers less those in quarantine, dispatchers of deleted or stopped endpoints kept until their requests
 * end (the controller's drain waits on them), endpoints found in the store given time to be reported, and wakes
 * from zero measured. The request path (gateway.ts) asks it for dispatchers; the autoscaler reads its queues.
 */

import type { Endpoint } from '../domain/endpoint.js';
import { GatewayError } from '../errors/gateway-catalogue.js';
import type { Clock, Timers } from '../ports/clock.js';
import type { AffineWait, EndpointQueueSignal } from '../ports/queue-signals.js';
import type { RoutableWorker, RoutingView } from '../ports/routing-view.js';
import type { AwaitedWorker } from './dispatcher.js';
import { EndpointDispatcher } from './dispatcher.js';
import type { EndpointLoad, GatewayMetrics } from './metrics.js';
import type { WorkerPools } from './pools.js';
import { refusalError } from './refusal.js';
import { wakeSince } from './server-timing.js';

/**
 * How long an endpoint found in the store may stay unknown to the routing view before the gateway takes it for
 * deleted. A pass is asked for when it is found and passes run every second, so one reports it well within this.
 */
const UNREPORTED_GRACE_MS = 10_000;
/**
 * A worker whose connection failed gets no new request for this long, or until the controller's next report
 * after it: behind Docker's userland proxy a dead container's port still accepts connections, and without this
 * every queued request would be handed to it in turn before its exit is noticed.
 */
const QUARANTINE_MS = 2000;

/** One endpoint's queue and worker load on this gateway (what other replicas' autoscaler is told). */
export interface GatewayEndpointLoad {
  endpointId: string;
  queueLength: number;
  oldestEnqueuedAt: number | null;
  workers: { id: string; inFlight: number; lastBusyAt: number }[];
  /** The workers strict requests wait for here (affinity.ts), routable or not. */
  awaited: AwaitedWorker[];
}

export interface EndpointTableOptions {
  routing: RoutingView;
  pools: WorkerPools;
  clock: Clock;
  timers: Timers;
  metrics: GatewayMetrics | undefined;
  maxQueueLength: number;
  queueTimeoutMs: number;
  /** See GatewayOptions.neverPlaceable. */
  neverPlaceable: ((endpoint: Endpoint) => string | undefined) | undefined;
  /** A request of the endpoint has to wait for a slot. */
  onQueued: (endpointId: string) => void;
  /** See DispatcherOptions.onWorkerBusy. */
  onWorkerBusy?: ((workerId: string, busy: boolean, at: number) => void) | undefined;
  /** After each sync with the routing view (the gateway forgets the store's "no such appName" answers). */
  onSynced: () => void;
  /**
   * After a sync that left this gateway no share of any routable worker of an endpoint with requests queued here
   * (another replica holds the slots), or with a strict request waiting for a worker of which it holds no slot: the
   * gateway may send them on (gateway.ts, forwarding).
   */
  onShareless?: (endpoint: Endpoint, dispatcher: EndpointDispatcher) => void;
}

export class EndpointTable {
  readonly #o: EndpointTableOptions;
  readonly #dispatchers = new Map<string, EndpointDispatcher>();
  /** Dispatchers of deleted or stopped endpoints whose requests are still in flight -> their endpoint id. */
  readonly #retired = new Map<EndpointDispatcher, string>();
  /** Worker id -> until when it gets no new requests. */
  readonly #quarantine = new Map<string, number>();
  /**
   * Endpoints waking from zero -> when the first request that found no routable worker arrived. One entry per
   * wake: it ends (and is measured) when the endpoint's first worker becomes routable.
   */
  readonly #wakes = new Map<string, number>();
  /** neverPlaceable's answer per endpoint object (null: placeable); the routing view makes new ones each pass. */
  readonly #placement = new WeakMap<Endpoint, string | null>();
  /**
   * Endpoints found in the store that the routing view has not reported yet -> when their dispatcher was made. A
   * controller pass that read the endpoints before one was created ends after its requests queued: without this
   * they were answered 404 "deleted".
   */
  readonly #unreported = new Map<string, number>();
  readonly #unsubscribe: () => void;

  constructor(options: EndpointTableOptions) {
    this.#o = options;
    this.#unsubscribe = options.routing.onChange(() => this.#sync());
  }

  /** Every queued request gets `error` (ENDPOINT_STOPPED: the gateway is shutting down); no more syncs. */
  close(error: GatewayError): void {
    this.#unsubscribe();
    for (const dispatcher of this.#dispatchers.values()) dispatcher.close(error);
  }

  /**
   * The endpoint's queue and its workers' load (the autoscaler's QueueSignals), or undefined when no request has
   * reached it. What is remembered of workers `exists` denies is forgotten.
   */
  queueSignal(endpointId: string, exists: (workerId: string) => boolean): EndpointQueueSignal | undefined {
    const dispatcher = this.#dispatchers.get(endpointId);
    if (!dispatcher) return undefined;
    dispatcher.retainDeparted(exists);
    const stats = dispatcher.stats();
    const load = new Map(stats.workers.map((w) => [w.id, w.inFlight]));
    const awaited = new Map<string, AffineWait>(
      stats.awaited.map((w) => [w.id, w.resume ? 'resume' : 'strict']),
    );
    const strictWaits = stats.awaited.reduce((n, w) => n + w.waiting, 0);
    return {
      queueLength: stats.queueLength - strictWaits,
      oldestEnqueuedAt: stats.oldestEnqueuedAt,
      inFlight: (workerId) => load.get(workerId) ?? 0,
      lastBusyAt: (workerId) => dispatcher.lastBusyAt(workerId),
      awaited: (workerId) => awaited.get(workerId),
    };
  }

  /** Resolves once the worker has no request in flight, also on retired dispatchers (or after `timeoutMs`). */
  async awaitDrained(endpointId: string, workerId: string, timeoutMs: number): Promise<void> {
    const holders = [...this.#retired]
      .filter(([, id]) => id === endpointId)
      .map(([dispatcher]) => dispatcher);
    const active = this.#dispatchers.get(endpointId);
    if (active) holders.push(active);
    if (holders.length === 0) return;
    const idle = Promise.all(holders.map((dispatcher) => dispatcher.whenIdle(workerId)));
    const { timers } = this.#o;
    let timer: unknown;
    const timedOut = new Promise<void>((resolve) => {
      timer = timers.setTimeout(resolve, timeoutMs);
    });
    await Promise.race([idle, timedOut]);
    timers.clearTimeout(timer);
  }

  /** A worker's traffic: requests given to it since it became routable, and those in flight now. */
  workerLoad(endpointId: string, workerId: string): { requests: number; inFlight: number } {
    const worker = this.#dispatchers
      .get(endpointId)
      ?.stats()
      .workers.find((w) => w.id === workerId);
    return { requests: worker?.granted ?? 0, inFlight: worker?.inFlight ?? 0 };
  }

  /** Per endpoint with a dispatcher: its queue, and each worker's requests in flight and when it was last busy. */
  loads(): GatewayEndpointLoad[] {
    return [...this.#dispatchers].map(([endpointId, d]) => {
      const s = d.stats();
      return {
        endpointId,
        queueLength: s.queueLength,
        oldestEnqueuedAt: s.oldestEnqueuedAt,
        workers: s.workers.map((w) => ({ id: w.id, inFlight: w.inFlight, lastBusyAt: w.lastBusyAt })),
        awaited: s.awaited,
      };
    });
  }

  /** Queue depth, the oldest wait and in-flight requests per endpoint, for metrics and their history. */
  stats(): EndpointLoad[] {
    return [...this.#dispatchers].map(([endpointId, d]) => {
      const s = d.stats();
      return {
        endpointId,
        queueLength: s.queueLength,
        oldestEnqueuedAt: s.oldestEnqueuedAt,
        inFlight: s.workers.reduce((n, w) => n + w.inFlight, 0),
      };
    });
  }

  /** Why the endpoint can never get a worker on this server, or undefined (see GatewayOptions.neverPlaceable). */
  neverPlaceable(endpoint: Endpoint): string | undefined {
    const decide = this.#o.neverPlaceable;
    if (!decide) return endpoint.status.error === 'INSUFFICIENT_GPU' ? endpoint.status.message : undefined;
    let never = this.#placement.get(endpoint);
    if (never === undefined) {
      never = decide(endpoint) ?? null;
      this.#placement.set(endpoint, never);
    }
    return never ?? undefined;
  }

  /**
   * Why a request of the endpoint cannot be served now, as the controller published it (failed, maxNum 0, the
   * runtime unreachable), while no worker of it is routable; undefined when it can, or may soon.
   */
  refusalOf(endpoint: Endpoint): GatewayError | undefined {
    const refusal = this.#o.routing.conditionOf(endpoint.id)?.refusal;
    if (!refusal || this.#routable(endpoint.id).length > 0) return undefined;
    return refusalError(endpoint, refusal);
  }

  /** The endpoint's dispatcher, made on its first request (its settings follow the endpoint's). */
  dispatcherFor(endpoint: Endpoint): EndpointDispatcher {
    let dispatcher = this.#dispatchers.get(endpoint.id);
    const maxConcurrent = endpoint.spec.workers.maxConcurrent;
    if (dispatcher && dispatcher.maxConcurrent === maxConcurrent) return dispatcher;
    const settings = {
      maxConcurrent,
      maxQueueLength: this.#o.maxQueueLength,
      queueTimeoutMs: this.#o.queueTimeoutMs,
    };
    if (!dispatcher) {
      dispatcher = new EndpointDispatcher({
        ...settings,
        clock: this.#o.clock,
        timers: this.#o.timers,
        onQueued: () => this.#o.onQueued(endpoint.id),
        ...(this.#o.onWorkerBusy ? { onWorkerBusy: this.#o.onWorkerBusy } : {}),
        whyNoWorker: () => this.#o.routing.conditionOf(endpoint.id)?.waitingFor,
      });
      dispatcher.setWorkers(this.#routable(endpoint.id));
      this.#dispatchers.set(endpoint.id, dispatcher);
      if (!this.#o.routing.endpointById(endpoint.id)) this.#unreported.set(endpoint.id, this.#o.clock());
    } else {
      dispatcher.updateSettings(settings);
    }
    return dispatcher;
  }

  /** After every controller pass and health change: the routable workers, less those in quarantine. */
  #sync(): void {
    const now = this.#o.clock();
    this.#o.onSynced();
    for (const [workerId, until] of this.#quarantine) if (until <= now) this.#quarantine.delete(workerId);
    for (const [endpointId, dispatcher] of this.#dispatchers) {
      const endpoint = this.#o.routing.endpointById(endpointId);
      if (endpoint) {
        if (this.#unreported.size > 0) this.#unreported.delete(endpointId);
      } else if (this.#awaitingReport(endpointId, now)) {
        continue;
      }
      if (!endpoint || endpoint.desired === 'stopped') {
        // Requests queued while the routing view still said "running" must not wait for a worker that never comes.
        dispatcher.close(
          endpoint
            ? new GatewayError('ENDPOINT_STOPPED', `endpoint ${endpointId} is stopped`)
            : new GatewayError('ENDPOINT_NOT_FOUND', `endpoint ${endpointId} was deleted`),
        );
        this.#dispatchers.delete(endpointId);
        this.#wakes.delete(endpointId);
        this.#retire(endpointId, dispatcher);
        continue;
      }
      const never = this.neverPlaceable(endpoint);
      if (never !== undefined) {
        // Requests queued before the endpoint turned out unplaceable (an update asked for more GPUs than the
        // server has) would otherwise wait the whole queue timeout for a worker that never comes.
        dispatcher.rejectQueued(new GatewayError('NO_CAPACITY', never));
        this.#wakes.delete(endpointId);
      }
      const refused = this.refusalOf(endpoint);
      if (refused) {
        // Failed, maxNum 0, or the runtime unreachable, with no worker left to serve: waiting helps nobody.
        dispatcher.rejectQueued(refused);
        this.#wakes.delete(endpointId);
      }
      const routable = this.#o.routing.routableWorkers(endpointId);
      dispatcher.setWorkers(this.#withoutQuarantined(routable));
      if (
        dispatcher.queueLength > 0 &&
        (dispatcher.sharesNone || awaitsSharelessWorker(dispatcher, routable))
      )
        this.#o.onShareless?.(endpoint, dispatcher);
      if (routable.length > 0) this.#woken(endpointId, now);
    }
    this.#o.pools.retainOnly(this.#reachableAddresses());
    // Also endpoints that never had a dispatcher (a stopped one answers 503 and is counted) once they are deleted.
    this.#o.metrics?.retain(
      (endpointId) =>
        this.#o.routing.endpointById(endpointId) !== undefined || this.#unreported.has(endpointId),
    );
  }

  /** Whether an endpoint the routing view does not know was found in the store too recently to be called deleted. */
  #awaitingReport(endpointId: string, now: number): boolean {
    const since = this.#unreported.get(endpointId);
    if (since === undefined) return false;
    if (now - since < UNREPORTED_GRACE_MS) return true;
    this.#unreported.delete(endpointId);
    return false;
  }

  /**
   * Whether a request about to queue finds no routable worker at all, so that it waits through a wake from zero;
   * the first such request starts the wake's clock.
   */
  wakingFor(endpointId: string, arrived: number): boolean {
    if (this.#o.routing.routableWorkers(endpointId).length > 0) return false;
    if (!this.#wakes.has(endpointId)) this.#wakes.set(endpointId, arrived);
    return true;
  }

  /** Per endpoint, the workers strict requests wait for here that are not routable (frozen, starting, or gone). */
  awaitedUnroutable(): { endpointId: string; dispatcher: EndpointDispatcher; workerIds: string[] }[] {
    const found = [];
    for (const [endpointId, dispatcher] of this.#dispatchers) {
      const workerIds = dispatcher
        .stats()
        .awaited.map((w) => w.id)
        .filter((workerId) => !this.isRoutable(endpointId, workerId));
      if (workerIds.length > 0) found.push({ endpointId, dispatcher, workerIds });
    }
    return found;
  }

  /** Whether the routing view lists the worker as routable for the endpoint (it may be in quarantine). */
  isRoutable(endpointId: string, workerId: string): boolean {
    return this.#o.routing.routableWorkers(endpointId).some((w) => w.id === workerId);
  }

  /** The endpoint has a routable worker: a wake from zero in progress is over, and counted once. */
  #woken(endpointId: string, now: number): void {
    const since = this.#wakes.get(endpointId);
    if (since === undefined) return;
    this.#wakes.delete(endpointId);
    // The tier its worker came from: the wake the controller reported while requests waited, else a cold start.
    const woke = wakeSince(this.#o.routing.routableWorkers(endpointId), since);
    this.#o.metrics?.observeColdStart(endpointId, Math.max(0, now - since), woke?.tier ?? 'cold');
  }

  /** Kept until its requests end, so that removing its workers waits for them (the controller's drain). */
  #retire(endpointId: string, dispatcher: EndpointDispatcher): void {
    dispatcher.setWorkers([]); // it forgets its idle workers, and each busy one once its last lease ends
    if (dispatcher.addresses().length === 0) return;
    this.#retired.set(dispatcher, endpointId);
    void dispatcher.whenAllIdle().then(() => this.#retired.delete(dispatcher));
  }

  /** Every worker some request may still be sent to: routable, or draining with requests in flight. */
  *#reachableAddresses(): Iterable<{ host: string; port: number }> {
    for (const dispatcher of this.#dispatchers.values()) yield* dispatcher.addresses();
    for (const dispatcher of this.#retired.keys()) yield* dispatcher.addresses();
  }

  #routable(endpointId: string) {
    return this.#withoutQuarantined(this.#o.routing.routableWorkers(endpointId));
  }

  #withoutQuarantined<W extends { id: string }>(workers: readonly W[]): readonly W[] {
    return this.#quarantine.size === 0 ? workers : workers.filter((w) => !this.#quarantine.has(w.id));
  }

  /** Takes the worker out of the endpoint's routing for QUARANTINE_MS; false when it was out already. */
  quarantine(endpointId: string, workerId: string): boolean {
    if (this.#quarantine.has(workerId)) return false;
    this.#quarantine.set(workerId, this.#o.clock() + QUARANTINE_MS);
    const dispatcher = this.#dispatchers.get(endpointId);
    dispatcher?.setWorkers(this.#routable(endpointId));
    // Its last worker gone (killed while the engine is away, say) and no new one can come: nobody waits for one.
    const endpoint = this.#o.routing.endpointById(endpointId);
    const refused = endpoint && this.refusalOf(endpoint);
    if (refused) dispatcher?.rejectQueued(refused);
    return true;
  }
}

/** Whether a strict request here waits for a routable worker of which this replica holds no slot. */
function awaitsSharelessWorker(dispatcher: EndpointDispatcher, routable: readonly RoutableWorker[]): boolean {
  const shareless = new Set(routable.filter((w) => w.slots === 0).map((w) => w.id));
  return shareless.size > 0 && dispatcher.stats().awaited.some((a) => shareless.has(a.id));
}
