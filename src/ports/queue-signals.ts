/**
 * What the autoscaler reads of an endpoint's traffic: its queue and the load on each worker, and a signal each
 * time a request queues. Today the one implementation is the in-process gateway (`Gateway` has these methods);
 * with several gateway replicas, an implementation that sums every replica's signals plugs in here.
 */

/** Why requests wait for one worker alone (gateway/affinity.ts): `strict`, or `resume` (it is to be woken). */
export type AffineWait = 'strict' | 'resume';

/** One endpoint's queue and its workers' load, as the gateway(s) see them now. */
export interface EndpointQueueSignal {
  /**
   * Requests waiting for a slot any worker may serve: those waiting for one worker alone (strict affinity) are not
   * counted, since a new worker cannot serve them.
   */
  queueLength: number;
  /** When the oldest waiting request arrived (ms); null with an empty queue. */
  oldestEnqueuedAt: number | null;
  /** Requests in flight on the worker now (0 for a worker no gateway routes to). */
  inFlight(workerId: string): number;
  /** When the worker last had a request in flight (ms); undefined when no gateway has seen it busy. */
  lastBusyAt(workerId: string): number | undefined;
  /**
   * Whether strict requests wait for the worker (it must not be scaled down), and strict-resume ones (it is to be
   * woken from frozen or suspended); absent or undefined: none.
   */
  awaited?(workerId: string): AffineWait | undefined;
}

export interface QueueSignals {
  /**
   * The endpoint's signal, or undefined when no request has reached it yet. `exists` says which workers still
   * exist, so that what a gateway remembers of departed ones can go.
   */
  queueSignal(endpointId: string, exists: (workerId: string) => boolean): EndpointQueueSignal | undefined;
  /** Called (with the endpoint id) each time a request has to wait: a wake or a scale-up may be due at once. */
  onQueued(listener: (endpointId: string) => void): () => void;
}
