/**
 * One endpoint's worker slots and FIFO request queue, in process. Every routable worker has `maxConcurrent` slots; a
 * request takes a slot on the least-loaded worker at once, or waits in the queue until a slot frees, a worker is
 * added, the queue timeout passes, or its client goes away.
 *
 * Invariants (property-tested in dispatcher.test.ts):
 * - a grant never takes a worker to more than `maxConcurrent` leases (lowering `maxConcurrent` leaves the leases
 *   already granted alone; the worker gets no new ones until it is below the new limit);
 * - every lease is counted once and freed once; a removed worker keeps its leases until they are released, then
 *   is forgotten;
 * - after every operation no queued request could be served by a free slot (the dispatcher is work-conserving);
 * - queued requests are served in arrival order. The exceptions are `exclude` and strict affinity: a request that
 *   must avoid a worker (a retry), or that waits for one worker alone (`strict <id>`: affinity.ts), does not hold
 *   back the requests behind it from the slots it cannot take; a strict request waits while other workers have
 *   free slots, and no other request is given a slot on its worker before it while it waits.
 *
 * Time comes from an injected clock and timer functions, so tests run with no real sleeps.
 */

import type { GatewayError } from '../errors/gateway-catalogue.js';
import type { Clock, Timers } from '../ports/clock.js';
import type { Affinity } from './affinity.js';
import type {
  AcquireOptions,
  DispatcherOptions,
  DispatcherSettings,
  DispatcherStats,
  Lease,
  RoutableWorker,
  WorkerAddress,
} from './dispatcher-types.js';
import {
  AFFINE_WORKER_LEFT,
  checkSettings,
  clientGone,
  queueFull,
  retryAfterSeconds,
  waitingFor,
  waitTimedOut,
} from './queue-refusals.js';

export type {
  AcquireOptions,
  AwaitedWorker,
  DispatcherOptions,
  DispatcherSettings,
  DispatcherStats,
  DispatcherWorkerStats,
  Lease,
  RoutableWorker,
  WorkerAddress,
} from './dispatcher-types.js';

interface WorkerSlots {
  readonly id: string;
  address: WorkerAddress;
  /** This gateway's cap on the worker's leases; undefined: maxConcurrent. */
  slots: number | undefined;
  inFlight: number;
  lastBusyAt: number;
  routable: boolean;
  /** Sequence number of the last grant or release on this worker (ties in load go to the most recent). */
  activity: number;
  granted: number;
}

interface Waiter {
  readonly seq: number;
  readonly enqueuedAt: number;
  readonly exclude: ReadonlySet<string> | undefined;
  /** Strict affinity: the one worker it may be granted a slot on; `resume`: strict-resume (the worker is woken). */
  readonly only: { workerId: string; resume: boolean } | undefined;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (lease: Lease) => void;
  readonly reject: (error: GatewayError) => void;
  readonly onAbort: () => void;
  timer: unknown;
}

/** Weight of the newest lease duration in the running mean used to estimate Retry-After. */
const HOLD_EWMA_WEIGHT = 0.2;
/** Node clamps longer delays to 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

export class EndpointDispatcher {
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #onQueued: (() => void) | undefined;
  readonly #onWorkerBusy: DispatcherOptions['onWorkerBusy'];
  readonly #whyNoWorker: (() => string | undefined) | undefined;
  #settings: DispatcherSettings;
  /** Routable and draining workers, by id, in the order they were added. */
  readonly #workers = new Map<string, WorkerSlots>();
  /** Waiting requests by arrival sequence; a Map keeps insertion order and removes from the middle in O(1). */
  readonly #queue = new Map<number, Waiter>();
  #nextSeq = 0;
  #activity = 0;
  #meanHoldMs: number | undefined;
  /**
   * lastBusyAt of workers forgotten while the controller may still have them (unlisted for a moment: a quarantine,
   * a failed health check), so that listing one again, or asking about it, does not make it look idle for longer
   * than it is. Pruned by `retainDeparted`.
   */
  readonly #departed = new Map<string, number>();
  /** Who waits for a worker to hold no lease (a drain before removal), by worker id. */
  readonly #idleWaiters = new Map<string, (() => void)[]>();
  #closedWith: GatewayError | undefined;
  #sharesNone = false;

  constructor(options: DispatcherOptions) {
    this.#clock = options.clock;
    this.#timers = options.timers;
    this.#onQueued = options.onQueued;
    this.#onWorkerBusy = options.onWorkerBusy;
    this.#whyNoWorker = options.whyNoWorker;
    this.#settings = checkSettings({
      maxConcurrent: options.maxConcurrent,
      maxQueueLength: options.maxQueueLength,
      queueTimeoutMs: options.queueTimeoutMs,
    });
  }

  /** The slots per worker now (the gateway compares it with the endpoint's on every request). */
  get maxConcurrent(): number {
    return this.#settings.maxConcurrent;
  }

  /**
   * Whether the endpoint has routable workers and this gateway's share of each is 0 (another replica holds their
   * slots): its requests are forwarded there rather than queued (gateway.ts). Kept up to date by setWorkers.
   */
  get sharesNone(): boolean {
    return this.#sharesNone;
  }

  /** Requests waiting now. */
  get queueLength(): number {
    return this.#queue.size;
  }

  /**
   * Applies changed endpoint settings in place. A higher maxConcurrent serves queued requests at once; a lower one
   * keeps the leases already granted. A lower maxQueueLength evicts nobody. A new queueTimeoutMs applies to the
   * requests already waiting (counted from their arrival); those already past it time out now.
   */
  updateSettings(settings: Partial<DispatcherSettings>): void {
    const previous = this.#settings;
    this.#settings = checkSettings({ ...previous, ...settings });
    this.#dispatch();
    if (this.#settings.queueTimeoutMs !== previous.queueTimeoutMs) {
      const now = this.#clock();
      const expired: Waiter[] = [];
      for (const waiter of this.#queue.values()) {
        this.#timers.clearTimeout(waiter.timer);
        const remaining = waiter.enqueuedAt + this.#settings.queueTimeoutMs - now;
        if (remaining <= 0) expired.push(waiter);
        else waiter.timer = this.#startTimer(waiter, remaining);
      }
      for (const waiter of expired) this.#timeOut(waiter);
    }
  }

  /**
   * Sets the routable workers (running and healthy). A worker no longer listed gets no new requests and keeps its
   * leases until they are released; listed again meanwhile, it is routable again with the same count. New workers
   * serve queued requests at once.
   */
  setWorkers(workers: readonly RoutableWorker[]): void {
    const listed = new Map<string, RoutableWorker>();
    let sharesNone = workers.length > 0;
    for (const worker of workers) {
      listed.set(worker.id, worker);
      if (worker.slots !== 0) sharesNone = false;
    }
    this.#sharesNone = sharesNone;
    const left = new Set<string>();
    for (const slots of this.#workers.values()) {
      if (listed.has(slots.id)) continue;
      if (slots.routable) left.add(slots.id);
      slots.routable = false;
      if (slots.inFlight === 0) this.#forgetWorker(slots);
    }
    if (left.size > 0) this.rejectAwaiting(left, AFFINE_WORKER_LEFT);
    const now = this.#clock();
    for (const worker of listed.values()) {
      const address = Object.freeze({ host: worker.address.host, port: worker.address.port });
      const slots = this.#workers.get(worker.id);
      if (slots) {
        slots.routable = true;
        slots.address = address;
        slots.slots = worker.slots;
      } else {
        const lastBusyAt = this.#departed.get(worker.id) ?? now;
        this.#departed.delete(worker.id);
        this.#workers.set(worker.id, {
          id: worker.id,
          address,
          slots: worker.slots,
          inFlight: 0,
          lastBusyAt,
          routable: true,
          activity: 0,
          granted: 0,
        });
      }
    }
    this.#dispatch();
  }

  /**
   * The fast path of acquire(): a slot granted now, or undefined when acquire() must decide (no free slot, so the
   * request would queue or be refused; or the dispatcher is closed). Needs no promise and no abort signal, since
   * nothing waits. The caller owns the lease and must release it.
   */
  tryAcquire(exclude?: ReadonlySet<string>, affinity?: Affinity): Lease | undefined {
    if (this.#closedWith) return undefined;
    const worker = this.#pick(exclude, affinity);
    if (!worker) return undefined;
    const now = this.#clock();
    return this.#lease(worker, now, now);
  }

  /**
   * A slot on the least-loaded routable worker with one free (ties: the most recently active, so that light traffic
   * stays on few workers and the others can go idle and be scaled down), or a place in the FIFO queue. Rejects with
   * a GatewayError: QUEUE_FULL (with retryAfterSeconds), QUEUE_TIMEOUT, CLIENT_GONE, or the close() error; a
   * strict one (`affinity`) AFFINITY_TIMEOUT at the queue timeout, or AFFINE_WORKER_LEFT when its worker leaves.
   *
   * Once the promise resolves the caller owns the lease and must release it, even if its signal aborted since.
   */
  acquire(options: AcquireOptions = {}): Promise<Lease> {
    const { signal, exclude, affinity, since } = options;
    if (this.#closedWith) return Promise.reject(this.#closedWith);
    if (signal?.aborted) return Promise.reject(clientGone('before it got a slot', signal.reason));
    const now = this.#clock();
    const worker = this.#pick(exclude, affinity);
    if (worker) return Promise.resolve(this.#lease(worker, since ?? now, now));
    if (this.#queue.size >= this.#settings.maxQueueLength) {
      return Promise.reject(
        queueFull(this.#queue.size, this.#settings.maxQueueLength, this.#retryAfterSeconds(now)),
      );
    }
    const enqueuedAt = Math.min(since ?? now, now);
    return new Promise<Lease>((resolve, reject) => {
      const seq = this.#nextSeq++;
      const waiter: Waiter = {
        seq,
        enqueuedAt,
        exclude: exclude && exclude.size > 0 ? exclude : undefined,
        only:
          affinity && affinity.mode !== 'soft'
            ? { workerId: affinity.workerId, resume: affinity.mode === 'strict-resume' }
            : undefined,
        signal,
        resolve,
        reject,
        onAbort: () => {
          if (this.#queue.get(seq) !== waiter) return;
          this.#leave(waiter);
          reject(clientGone('while queued', signal?.reason));
        },
        timer: undefined,
      };
      this.#queue.set(seq, waiter);
      waiter.timer = this.#startTimer(waiter, Math.max(0, enqueuedAt + this.#settings.queueTimeoutMs - now));
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      try {
        this.#onQueued?.();
      } catch {
        // A scaling hint only: the controller's own tick sees the queue anyway.
      }
    });
  }

  /** Resolves once the worker holds no lease: at once if it holds none or is unknown. */
  whenIdle(workerId: string): Promise<void> {
    const slots = this.#workers.get(workerId);
    if (!slots || slots.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.#idleWaiters.get(workerId);
      if (waiters) waiters.push(resolve);
      else this.#idleWaiters.set(workerId, [resolve]);
    });
  }

  /** Where the workers it may still use listen: routable ones, and draining ones that hold leases. */
  addresses(): WorkerAddress[] {
    return [...this.#workers.values()].map((slots) => slots.address);
  }

  /** Resolves once no worker holds a lease. */
  whenAllIdle(): Promise<void> {
    return Promise.all([...this.#workers.keys()].map((workerId) => this.whenIdle(workerId))).then(
      () => undefined,
    );
  }

  /**
   * When the worker last went idle (or was first listed), also for a worker unlisted since (a quarantine): never
   * earlier than a value returned before, for as long as `retainDeparted` keeps it. Undefined for a worker never
   * listed.
   */
  lastBusyAt(workerId: string): number | undefined {
    return this.#workers.get(workerId)?.lastBusyAt ?? this.#departed.get(workerId);
  }

  /** Forgets the remembered lastBusyAt of unlisted workers that no longer exist (`exists` says which do). */
  retainDeparted(exists: (workerId: string) => boolean): void {
    for (const workerId of this.#departed.keys()) if (!exists(workerId)) this.#departed.delete(workerId);
  }

  stats(): DispatcherStats {
    const head = this.#queue.values().next();
    const awaited = new Map<string, { id: string; waiting: number; resume: boolean }>();
    for (const { only } of this.#queue.values()) {
      if (!only) continue;
      const entry = awaited.get(only.workerId) ?? { id: only.workerId, waiting: 0, resume: false };
      entry.waiting += 1;
      entry.resume ||= only.resume;
      awaited.set(only.workerId, entry);
    }
    return {
      queueLength: this.#queue.size,
      oldestEnqueuedAt: head.done ? null : head.value.enqueuedAt,
      awaited: [...awaited.values()],
      workers: [...this.#workers.values()].map((slots) => ({
        id: slots.id,
        inFlight: slots.inFlight,
        lastBusyAt: slots.lastBusyAt,
        routable: slots.routable,
        granted: slots.granted,
      })),
    };
  }

  /**
   * Rejects every queued request with `error` (ENDPOINT_STOPPED, say) and every later acquire() too. Leases already
   * granted stay valid until released. A stopped endpoint that starts again gets a new dispatcher.
   */
  close(error: GatewayError): void {
    this.#closedWith = error;
    this.rejectQueued(error);
  }

  /**
   * Rejects every request queued now with `error` (NO_CAPACITY: the endpoint can never get a worker); unlike
   * close(), later requests may queue again (the endpoint may be changed so that it fits).
   */
  rejectQueued(error: GatewayError): void {
    const waiters = [...this.#queue.values()];
    for (const waiter of waiters) {
      this.#leave(waiter);
      waiter.reject(error);
    }
  }

  /** Rejects the strict requests waiting for any of `workerIds` with `error` (their worker left, or is gone). */
  rejectAwaiting(workerIds: ReadonlySet<string>, error: GatewayError): void {
    for (const waiter of [...this.#queue.values()]) {
      if (waiter.only === undefined || !workerIds.has(waiter.only.workerId)) continue;
      this.#leave(waiter);
      waiter.reject(error);
    }
  }

  // ---- internals ----

  /**
   * The affinity's worker when it is routable with a free slot and not excluded (affinity.ts); strict: that one or
   * none. Else the least-loaded routable worker with a free slot, not excluded; ties go to the most recently active.
   */
  #pick(exclude: ReadonlySet<string> | undefined, affinity?: Affinity): WorkerSlots | undefined {
    const max = this.#settings.maxConcurrent;
    const free = (slots: WorkerSlots) =>
      slots.routable && slots.inFlight < (slots.slots ?? max) && !exclude?.has(slots.id);
    const preferred = affinity === undefined ? undefined : this.#workers.get(affinity.workerId);
    if (preferred && free(preferred)) return preferred;
    if (affinity && affinity.mode !== 'soft') return undefined;
    let best: WorkerSlots | undefined;
    for (const slots of this.#workers.values()) {
      if (!free(slots)) continue;
      if (
        !best ||
        slots.inFlight < best.inFlight ||
        (slots.inFlight === best.inFlight && slots.activity > best.activity)
      ) {
        best = slots;
      }
    }
    return best;
  }

  #lease(slots: WorkerSlots, enqueuedAt: number, grantedAt = this.#clock()): Lease {
    slots.inFlight += 1;
    if (slots.inFlight === 1) this.#onWorkerBusy?.(slots.id, true, grantedAt);
    slots.granted += 1;
    slots.activity = ++this.#activity;
    let released = false;
    return {
      workerId: slots.id,
      address: slots.address,
      queuedMs: Math.max(0, grantedAt - enqueuedAt),
      release: () => {
        if (released) return;
        released = true;
        this.#release(slots, grantedAt);
      },
    };
  }

  #release(slots: WorkerSlots, grantedAt: number): void {
    const now = this.#clock();
    slots.inFlight -= 1;
    slots.activity = ++this.#activity;
    const held = Math.max(0, now - grantedAt);
    this.#meanHoldMs =
      this.#meanHoldMs === undefined ? held : this.#meanHoldMs + HOLD_EWMA_WEIGHT * (held - this.#meanHoldMs);
    if (slots.inFlight === 0) {
      slots.lastBusyAt = now;
      this.#onWorkerBusy?.(slots.id, false, now);
      if (!slots.routable && this.#workers.get(slots.id) === slots) this.#forgetWorker(slots);
      const idleWaiters = this.#idleWaiters.get(slots.id);
      if (idleWaiters) {
        this.#idleWaiters.delete(slots.id);
        for (const resolve of idleWaiters) resolve();
      }
    }
    this.#dispatch();
  }

  /** Drops an unlisted, idle worker's slots, remembering when it was last busy. */
  #forgetWorker(slots: WorkerSlots): void {
    this.#workers.delete(slots.id);
    this.#departed.set(slots.id, slots.lastBusyAt);
  }

  /** Gives free slots to queued requests, in arrival order. */
  #dispatch(): void {
    for (const waiter of this.#queue.values()) {
      const any = this.#pick(undefined);
      if (!any) return;
      const slots = waiter.only
        ? this.#pick(waiter.exclude, { mode: 'strict', workerId: waiter.only.workerId })
        : waiter.exclude
          ? this.#pick(waiter.exclude)
          : any;
      if (!slots) continue;
      this.#leave(waiter);
      waiter.resolve(this.#lease(slots, waiter.enqueuedAt));
    }
  }

  /** Takes a waiter out of the queue and drops its timer and abort listener. */
  #leave(waiter: Waiter): void {
    this.#queue.delete(waiter.seq);
    this.#timers.clearTimeout(waiter.timer);
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }

  #startTimer(waiter: Waiter, ms: number): unknown {
    return this.#timers.setTimeout(
      () => {
        if (this.#queue.get(waiter.seq) === waiter) this.#timeOut(waiter);
      },
      Math.min(ms, MAX_TIMER_MS),
    );
  }

  #timeOut(waiter: Waiter): void {
    this.#leave(waiter);
    const waitedMs = Math.max(0, this.#clock() - waiter.enqueuedAt);
    const why = waitingFor(this.#routableCount(), this.#settings.maxConcurrent, this.#whyNoWorker?.());
    waiter.reject(waitTimedOut(waitedMs, this.#settings.queueTimeoutMs, why, waiter.only?.workerId));
  }

  #routableCount(): number {
    let routable = 0;
    for (const slots of this.#workers.values()) if (slots.routable) routable += 1;
    return routable;
  }

  /** See queue-refusals.ts's retryAfterSeconds. */
  #retryAfterSeconds(now: number): number {
    const head = this.#queue.values().next();
    return retryAfterSeconds({
      queueLength: this.#queue.size,
      routable: this.#routableCount(),
      meanHoldMs: this.#meanHoldMs,
      settings: this.#settings,
      headLeftInMs: head.done ? 0 : head.value.enqueuedAt + this.#settings.queueTimeoutMs - now,
    });
  }
}
