/** The shapes of an endpoint's dispatcher (dispatcher.ts): its settings, the workers it routes to, a lease and its stats. */
import type { Clock, Timers } from '../ports/clock.js';
import type { Affinity } from './affinity.js';

export interface DispatcherSettings {
  /** Slots per worker (workerConfig.maxConcurrent); an integer >= 1. */
  maxConcurrent: number;
  /** Requests that may wait; an integer >= 0 (0: no queue, QUEUE_FULL when every slot is taken). */
  maxQueueLength: number;
  /** How long a request may wait for a slot before QUEUE_TIMEOUT; finite, >= 0. */
  queueTimeoutMs: number;
}

export interface DispatcherOptions extends DispatcherSettings {
  clock: Clock;
  timers: Timers;
  /**
   * Called synchronously on every enqueue (after the request is in the queue), so that the controller can scale up
   * or wake the endpoint at once. Best effort: an exception it throws is swallowed.
   */
  onQueued?: () => void;
  /** Told when a worker's requests in flight go from none to some (busy) and back (the usage ledger). */
  onWorkerBusy?: (workerId: string, busy: boolean, at: number) => void;
  /**
   * Why no worker is routable (a pending worker's message, a pull's progress), asked when a request times out in
   * the queue so that its QUEUE_TIMEOUT says why it waited; undefined when nothing is known.
   */
  whyNoWorker?: () => string | undefined;
}

export interface WorkerAddress {
  host: string;
  port: number;
}

export interface RoutableWorker {
  id: string;
  address: WorkerAddress;
  /**
   * This gateway's share of the worker's slots when several replicas route to it (cluster/slot-shares.ts); absent:
   * `maxConcurrent`, all of them. 0: the worker is routable but takes no request from this gateway now.
   */
  slots?: number;
}

export interface AcquireOptions {
  /** Aborting it while queued leaves the queue at once and rejects with CLIENT_GONE. Ignored once granted. */
  signal?: AbortSignal;
  /** Workers this request must not be sent to (already tried by a retry of a request that never reached one). */
  exclude?: ReadonlySet<string>;
  /**
   * The worker the request names (affinity.ts). Soft: a slot on it when it has one free now, else on any, as without
   * it (a request that queues is served in order, on whichever worker frees a slot first). Strict and strict-resume:
   * a slot on it alone, waited for up to the queue timeout (AFFINITY_TIMEOUT), while other workers may be free.
   */
  affinity?: Affinity;
  /** When the request began waiting, when it waits again (its worker left routing): the queue timeout counts from it. */
  since?: number;
}

/** One slot on one worker. The holder must call release() exactly when the request is over (extra calls are no-ops). */
export interface Lease {
  readonly workerId: string;
  /** The worker's address when the slot was granted. */
  readonly address: WorkerAddress;
  /** Time spent in the queue (0 when granted at once). */
  readonly queuedMs: number;
  release(): void;
}

export interface DispatcherWorkerStats {
  id: string;
  inFlight: number;
  /** Last time the worker went from busy to idle, or when it was added; meaningful when inFlight is 0. */
  lastBusyAt: number;
  /** False for a worker that setWorkers no longer lists and that still finishes its leases (draining). */
  routable: boolean;
  /** Leases granted since the worker was added (it is forgotten once unlisted and idle). */
  granted: number;
}

/** A worker strict requests wait for (affinity.ts): it must not be scaled down; `resume`: it is to be woken. */
export interface AwaitedWorker {
  id: string;
  /** Strict requests waiting for it (counted in queueLength too). */
  waiting: number;
  /** Some of them are strict-resume. */
  resume: boolean;
}

export interface DispatcherStats {
  /** Every waiting request, strict ones included. */
  queueLength: number;
  /** When the request at the head of the queue arrived; null when the queue is empty. */
  oldestEnqueuedAt: number | null;
  /** Routable workers and draining ones that still hold leases, in the order they were added. */
  workers: DispatcherWorkerStats[];
  /** The workers strict requests wait for, routable or not. */
  awaited: AwaitedWorker[];
}
