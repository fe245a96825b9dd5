/**
 * Where each endpoint's traffic may go: the live endpoints and their routable workers, as the controller last
 * published them. The controller writes it; the gateway reads it and asks it for a fresh look. Being its own
 * object (not the controller) lets the gateway be built before the controller, and lets another source (a change
 * feed from the store, for replicas without the controller) fill it later.
 */
import type { Endpoint } from '../domain/endpoint.js';
import type { EndpointCondition, RoutableWorker, RoutingView } from '../ports/routing-view.js';

const NONE: readonly RoutableWorker[] = Object.freeze([]);

export class RoutingTable implements RoutingView {
  #byId = new Map<string, Endpoint>();
  #byAppName = new Map<string, Endpoint>();
  #routable = new Map<string, readonly RoutableWorker[]>();
  #conditions = new Map<string, EndpointCondition>();
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
    this.#conditions = new Map(conditions);
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

  /**
   * Replaces one endpoint (a reconcile of it alone): its record (undefined: deleted, so that it leaves the view),
   * its routable workers and its condition, and tells the readers. Not a whole publication.
   */
  publishEndpoint(
    endpointId: string,
    endpoint: Endpoint | undefined,
    workers: readonly RoutableWorker[],
    condition: EndpointCondition | undefined,
  ): void {
    const before = this.#byId.get(endpointId);
    if (before && this.#byAppName.get(before.spec.appName) === before)
      this.#byAppName.delete(before.spec.appName);
    if (endpoint) {
      this.#byId.set(endpointId, endpoint);
      this.#byAppName.set(endpoint.spec.appName, endpoint);
    } else {
      this.#byId.delete(endpointId);
    }
    if (endpoint && workers.length > 0) this.#routable.set(endpointId, workers);
    else this.#routable.delete(endpointId);
    if (endpoint && condition) this.#conditions.set(endpointId, condition);
    else this.#conditions.delete(endpointId);
    this.#notify();
  }

  #notify(): void {
    for (const listener of this.#listeners) listener();
  }
}
