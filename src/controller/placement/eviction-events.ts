/**
 * What an eviction says (pure; docs/workers.md, Idle tiers): a frozen worker moved down (suspended or stopped) to
 * free its GPUs for a worker of another endpoint is written in the evicted endpoint's events, naming the endpoint
 * that needed the GPUs, and in that endpoint's events, naming the worker that made room. Another owner's endpoint
 * is never named (docs/security.md: nothing of another owner's is to be read): it is "another owner's endpoint".
 */
import type { Endpoint } from '../../domain/endpoint.js';
import type { NewEvent } from '../../domain/records.js';

/** The endpoint as messages name it: its name, else its appName, else its id. */
export function endpointName(endpoint: Pick<Endpoint, 'id' | 'spec'>): string {
  return endpoint.spec.name || endpoint.spec.appName || endpoint.id;
}

export interface Eviction {
  /** The frozen worker moved down, and its endpoint. */
  workerId: string;
  evicted: Pick<Endpoint, 'id' | 'ownerId' | 'spec'>;
  /** The GPUs it gives up. */
  gpuUuids: readonly string[];
  /** The endpoint whose worker needed them, and whether that worker waits to start or to be restored. */
  needed: Pick<Endpoint, 'id' | 'ownerId' | 'spec'>;
  neededBy: 'pending' | 'suspended';
  /** Suspended where the runtime can and its endpoint keeps suspended workers, else stopped. */
  outcome: 'suspended' | 'stopped';
  at: number;
}

/** For whom the GPUs are freed, as the evicted worker's message and its endpoint's event say it. */
export function forWhom(e: Pick<Eviction, 'evicted' | 'needed' | 'neededBy'>): string {
  const worker = e.neededBy === 'suspended' ? 'a suspended worker' : 'a worker';
  const endpoint =
    e.needed.ownerId === e.evicted.ownerId
      ? `endpoint ${endpointName(e.needed)}`
      : "another owner's endpoint";
  return `${worker} of ${endpoint}`;
}

/** The `eviction` events of both endpoints' logs (docs/api.md, Read an endpoint's events). */
export function evictionEvents(e: Eviction): [endpointId: string, event: NewEvent][] {
  const sameOwner = e.needed.ownerId === e.evicted.ownerId;
  const gpus = [...e.gpuUuids];
  const evictedEvent: NewEvent = {
    at: e.at,
    type: 'eviction',
    message: `frozen worker ${e.workerId} ${e.outcome} to free its GPUs for ${forWhom(e)}`,
    data: {
      workerId: e.workerId,
      outcome: e.outcome,
      gpus,
      forEndpointId: sameOwner ? e.needed.id : null,
    },
  };
  // Another owner's worker id names its endpoint (the id's first part): left out too.
  const whose = sameOwner
    ? `frozen worker ${e.workerId} of endpoint ${endpointName(e.evicted)}`
    : "a frozen worker of another owner's endpoint";
  const mine = e.neededBy === 'suspended' ? 'suspended worker' : 'waiting worker';
  const neededEvent: NewEvent = {
    at: e.at,
    type: 'eviction',
    message: `${whose} ${e.outcome} to free its GPUs for this endpoint's ${mine}`,
    data: {
      workerId: sameOwner ? e.workerId : null,
      outcome: e.outcome,
      gpus,
      fromEndpointId: sameOwner ? e.evicted.id : null,
    },
  };
  return [
    [e.evicted.id, evictedEvent],
    [e.needed.id, neededEvent],
  ];
}
