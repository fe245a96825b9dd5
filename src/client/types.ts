import type { WireEndpoint, WireEvent } from '../contract/wire.js';

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

export interface CreatedResult {
  id: string;
}

/** `GET endpoint/worker/metrics`: one worker's state, health, GPUs and resource use. */
export interface WorkerMetrics {
  id: string;
  state: string;
  healthy: boolean;
  /** UUIDs of the GPUs the worker holds. */
  gpus: string[];
  /** Requests the gateway has given the worker, and those in flight now; null where no gateway runs. */
  requests: number | null;
  inFlight: number | null;
  /** CPU use as the runtime reports it (100 = one core); null when unknown. */
  cpuPercent: number | null;
  /** Memory in use; null when unknown. */
  memoryBytes: number | null;
  /** ISO time the worker was created. */
  startedAt: string;
  /** ISO time it first passed its health check; null until then. */
  readyAt: string | null;
}

export interface WorkerLogOptions {
  /** Keep streaming new lines until `signal` aborts or the worker goes away. */
  follow?: boolean;
  /** Start with only the last N lines. */
  tail?: number;
  /** Aborting it ends the iteration without an error and closes the connection. */
  signal?: AbortSignal;
}
