/** The client's options, parameters and results; the wire shapes themselves are contract/wire.ts's. */
import type { WireEndpoint, WireEvent, WireWorkerMetrics } from '../contract/wire.js';

export interface CorralClientOptions {
  /** Server root, e.g. `http://127.0.0.1:8080`; may carry a path prefix when behind a proxy. */
  baseUrl: string;
  apiKey: string;
  /** Replaces the global `fetch` (tests, custom agents). */
  fetch?: typeof fetch;
  /** Per-request deadline; default 30 000 ms. 0 disables it. */
  timeoutMs?: number;
}

export interface ListEndpointsParams {
  pageSize?: number;
  /** Zero-based page number. */
  pageNum?: number;
}

export interface ListEndpointsResult {
  endpoints: WireEndpoint<string>[];
  total: number;
}

export interface EndpointLogParams {
  /** Return events after this cursor (the `next` of the previous page). */
  after?: number;
  limit?: number;
}

export interface EndpointLogPage {
  events: WireEvent[];
  /** Pass as `after` to read the following page. */
  next: number;
}

export interface SaveCredentialInput {
  name: string;
  username: string;
  password: string;
}

export interface SavedSecret {
  name: string;
  /** A secret of that name existed and its value was replaced. */
  replaced: boolean;
}

export interface CreatedResult {
  id: string;
}

/** `GET endpoint/worker/metrics`: one worker's state, health, GPUs and resource use. */
export type WorkerMetrics = WireWorkerMetrics;

export interface WorkerLogOptions {
  /** Keep streaming new lines until `signal` aborts or the worker goes away. */
  follow?: boolean;
  /** Start with only the last N lines. */
  tail?: number;
  /** Aborting it ends the iteration without an error and closes the connection. */
  signal?: AbortSignal;
}
