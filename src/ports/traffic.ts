/**
 * What the API reads of an endpoint's traffic and history (the gateway's counts, the history's samples): the
 * shapes between the gateway, the history and the API, so that neither imports the other.
 */

/** What the API's `endpoint/metrics` shows of one endpoint's traffic through this process's gateway. */
export interface EndpointTraffic {
  /** What the figures cover: everything this gateway saw since it started (ms since the epoch), and how long ago. */
  window: { since: number; seconds: number };
  requests: { total: number; byStatus: Record<string, number> };
  latencyMs: Distribution;
  queueWaitMs: Distribution;
  queueDepth: number;
  inFlight: number;
  coldStarts: { count: number; meanMs: number | null };
  /** The same wakes from zero by the tier the worker came from (docs/workers.md, Idle tiers). */
  wakes: Record<WakeTier, { count: number; meanMs: number | null }>;
}

/** Where a woken worker came from: frozen (a thaw), suspended (a restore), or nowhere (a cold start). */
export type WakeTier = 'thaw' | 'restore' | 'cold';

/**
 * Percentiles estimated from the histogram's buckets (within the smallest and largest values seen), and the exact
 * mean; null before any request.
 */
export interface Distribution {
  p50: number | null;
  p99: number | null;
  mean: number | null;
}

/** A worker as the per-endpoint worker gauge counts it. */
export interface EndpointWorker {
  endpointId: string;
  state: string;
}

/** One endpoint's samples, oldest first, in columns; `null` where a figure had no value (no request). */
export interface EndpointHistory {
  intervalSeconds: number;
  /** The most samples kept (the ring's length). */
  capacity: number;
  /** When each sample was taken, ms since the epoch. */
  at: number[];
  /** Requests that ended in each interval, by status: below 400, 4xx (499: the client left), 5xx. */
  requests: { ok: number[]; clientErrors: number[]; serverErrors: number[] };
  /** Of the requests that ended in each interval (queue wait included). */
  latencyMs: { p50: (number | null)[]; p99: (number | null)[] };
  /** At each sample: requests waiting for a slot, and how long the oldest had waited. */
  queue: { depth: number[]; oldestWaitMs: number[] };
  inFlight: number[];
  /** Workers in each state at each sample (every state, zeros included). */
  workers: Record<string, number[]>;
  /** The autoscaler's desired count at each sample; null where this server's scaler had not decided. */
  desiredWorkers: (number | null)[];
  /** Wakes from zero that completed in each interval, and their mean duration. */
  coldStarts: { count: number[]; meanMs: (number | null)[] };
}

/** An endpoint's traffic over its last minutes (the Endpoints list). */
export interface RecentTraffic {
  /** What the figures cover: the samples kept within the window asked for. */
  seconds: number;
  requests: number;
  requestsPerMinute: number;
  latencyMs: { p50: number | null; p99: number | null };
}
