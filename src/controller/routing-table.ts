/**
 * Where each endpoint's traffic may go: the live endpoints and their routable workers, as the controller last
 * published them. The controller writes it; the gateway reads it and asks it for a fresh look. Being its own
 * object (not the controller) lets the gateway be built before the controller, and lets another source (a change
 * feed from the store, for replicas without the controller) fill it later.
 */
import type { Endpoint } from '../domain/endpoint.js';

export interface RoutableWorker {
  id: string;
  address: { host: string; port: number };
  /** This replica's share of the worker's slots (several replicas, cluster/slot-shares.ts); absent: all of them. */
  slots?: number;
}

/**
 * Why a request that needs a new worker cannot get one now: the endpoint is failed (`reason` is its error code,
 * INSUFFICIENT_GPU among them), has `maxNum: 0`, or the runtime cannot be reached. The gateway answers 503 at once
 * while the endpoint has no routable worker; what Corral still retries (a worker that crashed once, a GPU that is
 * busy) is no refusal: its requests wait.
 */
export interface EndpointRefusal {
  kind: 'failed' | 'no-capacity' | 'no-workers' | 'runtime-unavailable';
  /** The endpoint's error code (IMAGE_PULL_FAILED, CRASH_LOOP, ...; RUNTIME_UNAVAILABLE, NO_WORKERS). */
  reason: string;
  message: string;
  /** The message of the endpoint's most recent worker that did not serve (its failure, or what it waits for). */
  lastWorkerMessage: string;
}

/** What the controller knows of an endpoint beyond its workers, for the gateway's answers. */
export interface EndpointCondition {
  refusal?: EndpointRefusal;
  /** Why its requests wait when no worker is routable (a pending worker's message, pull progress, ...). */
  waitingFor?: string;
}

/** What the gateway needs: where each endpoint's traffic may go. */
export interface RoutingView {
  endpointByAppName(appName: string): Endpoint | undefined;
  /** The live endpoint as of the last publication; undefined once deleted. */
  endpointById(endpointId: string): Endpoint | undefined;
  /** Running, healthy workers of any revision (both serve during a rollout). */
  routableWorkers(endpointId: string): readonly RoutableWorker[];
  /** Why the endpoint cannot get a new worker or what its requests wait for; undefined when nothing is known. */
  conditionOf(endpointId: string): EndpointCondition | undefined;
  /** Called after every publication (each controller pass, each health change). */
  onChange(listener: () => void): () => void;
  /** Asks the source for a fresh look now: a request named an endpoint it lacks, or a worker could not be reached. */
  requestRefresh(): void;
}

const NONE: readonly RoutableWorker[] = Object.freeze([]);

export class RoutingTable implements RoutingView {
  #byId = new Map<string, Endpoint>();
  #byAppName = new Map<string, Endpoint>();
  #routable = new Map<string, readonly RoutableWorker[]>();
  #conditions: ReadonlyMap<string, EndpointCondition> = new Map();
  readonly #listeners = new Set<() => void>();
  readonly #refreshListeners = new Set<() => void>();
  #publications = 0;

  /** The live endpoints as last published (a publisher to other replicas reads the whole table). */
  endpoints(): Iterable<Endpoint> {
    return this.#byId.values();
  }

  /** How many whole publications there were (a controller's passes): one of a new term tells its first. */
  get publications(): number {
    return this.#publications;
  }

  endpointByAppName(appName: string): Endpoint | undefined {
    return this.#byAppName.get(appName);
  }

  endpointById(endpointId: string): Endpoint | undefined {
    return this.#byId.get(endpointId);
  }

  routableWorkers(endpointId: string): readonly RoutableWorker[] {
    return this.#routable.get(endpointId) ?? NONE;
  }

  conditionOf(endpointId: string): EndpointCondition | undefined {
    return this.#conditions.get(endpointId);
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  requestRefresh(): void {
    for (const listener of this.#refreshListeners) listener();
  }

  /** The source's side of requestRefresh. */
  onRefreshRequested(listener: () => void): () => void {
    this.#refreshListeners.add(listener);
    return () => this.#refreshListeners.delete(listener);
  }

  /**
   * Replaces the whole view and tells the readers. `routable` holds only endpoints that have routable workers;
   * the arrays are kept as they are, so the publisher must not change them afterwards. `conditions` holds only
   * endpoints that have one.
   */
  publish(
    endpoints: Iterable<Endpoint>,
    routable: Map<string, readonly RoutableWorker[]>,
    conditions: ReadonlyMap<string, EndpointCondition> = new Map(),
  ): void {
    const byId = new Map<string, Endpoint>();
    const byAppName = new Map<string, Endpoint>();
    for (const endpoint of endpoints) {
      byId.set(endpoint.id, endpoint);
      byAppName.set(endpoint.spec.appName, endpoint);
    }
    this.#byId = byId;
    this.#byAppName = byAppName;
    this.#routable = routable;
    this.#conditions = conditions;
    this.#publications += 1;
    this.#notify();
  }

  /**
   * Replaces one endpoint's routable workers (a health change between two passes) and tells the readers. One
   * endpoint at a time, so that thousands of workers turning healthy together cost one list each, not one table.
   */
  publishRoutable(endpointId: string, workers: readonly RoutableWorker[]): void {
    if (workers.length > 0) this.#routable.set(endpointId, workers);
    else this.#routable.delete(endpointId);
    this.#notify();
  }

  #notify(): void {
    for (const listener of this.#listeners) listener();
  }
}
