/**
 * The routing facts of one endpoint as the `routes` table holds them (JSON text), written by the leader and read
 * by every replica. An endpoint object is encoded once (the controller keeps the same object until it changes), so
 * that a pass over thousands of unchanged endpoints costs no serialization.
 */

import type { Endpoint } from '../domain/endpoint.js';
import type { EndpointCondition, RoutableWorker } from '../ports/routing-view.js';

export interface DecodedRoute {
  endpoint: Endpoint;
  workers: readonly RoutableWorker[];
  condition: EndpointCondition | undefined;
}

const encoded = new WeakMap<object, string>();

function cached(value: object): string {
  let text = encoded.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    encoded.set(value, text);
  }
  return text;
}

export function encodeEndpoint(endpoint: Endpoint): string {
  return cached(endpoint);
}

/**
 * Ids, addresses and the wake that brought a worker (so that a follower's answers carry its `Server-Timing` too);
 * not a share of slots, which is each replica's own.
 */
export function encodeWorkers(workers: readonly RoutableWorker[]): string {
  if (workers.length === 0) return '[]';
  let text = encoded.get(workers);
  if (text === undefined) {
    text = JSON.stringify(
      workers.map((w) =>
        w.wake ? { id: w.id, address: w.address, wake: w.wake } : { id: w.id, address: w.address },
      ),
    );
    encoded.set(workers, text);
  }
  return text;
}

export function encodeCondition(condition: EndpointCondition | undefined): string | null {
  return condition === undefined ? null : cached(condition);
}

export function decodeRoute(row: {
  endpoint: string;
  workers: string;
  condition: string | null;
}): DecodedRoute {
  return {
    endpoint: JSON.parse(row.endpoint) as Endpoint,
    workers: Object.freeze(JSON.parse(row.workers) as RoutableWorker[]),
    condition: row.condition === null ? undefined : (JSON.parse(row.condition) as EndpointCondition),
  };
}
