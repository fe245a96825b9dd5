/**
 * What the gateway reads of where each endpoint's traffic may go, as its source (the controller's RoutingTable, or a
 * follower's route feed) publishes it: the interface between the controller, the cluster and the gateway.
 */
import type { Endpoint } from '../domain/endpoint.js';

export interface RoutableWorker {
  id: string;
  address: { host: string; port: number };
  /** This replica's share of the worker's slots (several replicas, cluster/slot-shares.ts); absent: all of them. */
  slots?: number;
  /** How the worker came into routing when a wake brought it (a thaw, a restore, a cold start); absent otherwise. */
  wake?: WakeReport;
}

/** A wake's tier and what each of its phases cost, for the `Server-Timing` of the requests that waited for it. */
export interface WakeReport {
  tier: 'thaw' | 'restore' | 'cold';
  /** `thaw` or `restore`; for a cold start (`model`,) `placement`, `pull`, `create`, `ready`. In milliseconds. */
  phases: { name: string; ms: number }[];
  /** When it became routable. */
  at: number;
}

/**
 * Why a request that needs a new worker cannot get one now: the endpoint is failed (`reason` is its error code,
 * INSUFFICIENT_GPU among them), has `maxNum: 0`, or the runtime cannot be reached. The gateway answers 503 at once
 * while the endpoint has no routable worker; what Corral still retries (a worker that crashed once, a GPU that is
 * busy) is no refusal: its requests wait.
 */
export interface EndpointRefusal {
  kind: 'failed' | 'no-capacity' | 'no-workers' | 'runtime-unavailable' | 'budget-exceeded';
  /** The endpoint's error code (IMAGE_PULL_FAILED, CRASH_LOOP, ...; RUNTIME_UNAVAILABLE, NO_WORKERS, BUDGET_EXCEEDED). */
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
