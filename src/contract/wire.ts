/**
 * Wire shapes exactly as clients of the original service see them. Shared by the API (which
 * produces them) and the typed client (which consumes them); nothing else should import this.
 */
import type { Product } from '../gpu/products.js';
import type { UsageState } from '../ports/usage.js';

export interface WireState {
  state: string;
  error: string;
  message: string;
}

export interface WireWorker {
  id: string;
  state: WireState;
  log: string;
  metrics: string;
  healthy: boolean;
  /**
   * Its owner drained it (`POST endpoint/worker/drain`); waverless's Novita types read it as `drain`. Always sent;
   * optional for clients of servers older than the drain operation.
   */
  drain?: boolean;
}

export interface WireEndpoint<PortType extends string | number = string | number> {
  id: string;
  name: string;
  appName: string;
  state: WireState;
  url: string;
  workerConfig: {
    minNum: number;
    maxNum: number;
    freeTimeout: string;
    maxConcurrent: string;
    gpuNum: number;
    cudaVersion: string;
    requestTimeout: number;
    /** Corral extension: seconds an idle worker stays frozen, then suspended (docs/workers.md, Idle tiers). */
    keepFrozen: number;
    keepSuspended: number;
  };
  policy: { type: string; value: string };
  image: { image: string; authId: string; command: string };
  rootfsSize: number;
  volumeMounts: { type: string; id: string; size: number; mountPath: string }[];
  envs: { key: string; value: string }[];
  ports: { port: PortType }[];
  workers: WireWorker[];
  products: { id: string }[];
  healthy: {
    path: string;
    initialDelay: number;
    period: number;
    timeout: number;
    successThreshold: number;
    failureThreshold: number;
  };
  clusterID?: string;
  log: string;
  /** GET endpoint/metrics for this endpoint (a Corral extension). */
  metrics: string;
  /** Corral extension: the URL answers without a key. */
  public: boolean;
  /** Corral extension: `http` or `queue` (workers pull jobs over the RunPod worker protocol). */
  type: 'http' | 'queue';
  /** Corral extension: where a job of an `http` endpoint is delivered (`POST {jobsPath}`). */
  jobsPath: string;
  /**
   * Corral extension: the endpoint's jobs API on the gateway (RunPod's `/v2/{endpoint}/...`), where a queue endpoint
   * is called. Absent from servers before it.
   */
  jobUrls?: WireJobUrls;
  /** Corral extension: hub repositories its workers load from the machine's model cache. Absent from servers before it. */
  models?: WireModel[];
  /** Corral extension: the model name OpenAI clients send as `model` (the model router's); absent when none. */
  openaiModel?: string;
}

/** A model an endpoint names (docs/models.md); `tokenSecret` is the name of the owner's secret, never its value. */
export interface WireModel {
  name: string;
  revision: string;
  allowPatterns: string[];
  tokenSecret: string | null;
}

/** An endpoint's jobs API: `POST run` and `runsync` with `{"input": {...}}`, `GET status/{jobId}`, `GET health`. */
export interface WireJobUrls {
  run: string;
  runsync: string;
  /** `{jobId}` stands for the id `run` answered. */
  status: string;
  health: string;
}

export interface WireLimits {
  minRootfsSize: number;
  maxRootfsSize: number;
  freeRootfsSize: number;
  minLocalVolumeSize: number;
  maxLocalVolumeSize: number;
  freeLocalVolumeSize: number;
  minWorkerNum: number;
  maxWorkerNum: number;
  minFreeTimeout: number;
  maxFreeTimeout: number;
  minConcurrencyNum: number;
  maxConcurrencyNum: number;
  minQueueWaitTime: number;
  maxQueueWaitTime: number;
  minRequestNum: number;
  maxRequestNum: number;
  minGPUNum: number;
  maxGPUNum: number;
  minRequestTimeout: number;
  maxRequestTimeout: number;
  cudaVersionList: string[];
}

/** A GPU product of the server's catalogue; the catalogue's own record is sent as it is. */
export type WireProduct = Product;

export interface WireCredential {
  id: string;
  name: string;
  username: string;
  createdAt: string;
}

/** An invoke key as listed (Corral extension): never the key itself. */
export interface WireInvokeKey {
  id: string;
  endpointId: string;
  name: string;
  createdAt: string;
  /** When it was revoked; null while it works. */
  revokedAt: string | null;
}

/** `POST endpoint/invoke-key/create`: the key, shown this once. */
export interface WireNewInvokeKey extends WireInvokeKey {
  key: string;
}

/** An owner's secret as listed: never its value. */
export interface WireSecret {
  name: string;
  createdAt: string;
  updatedAt: string;
}

export interface WireEvent {
  id: number;
  at: string;
  type: string;
  message: string;
  data: Record<string, unknown>;
}

export interface WireError {
  code: number;
  reason: string;
  message: string;
  metadata: Record<string, unknown>;
}

/**
 * Percentiles (estimated from histogram buckets, within the smallest and largest values seen) and the exact mean,
 * in ms; null before any request.
 */
export interface WireDistribution {
  p50: number | null;
  p99: number | null;
  mean: number | null;
}

/**
 * `GET endpoint/metrics`: workers by state, and the traffic the gateway of the answering server has seen since it
 * started (null where that server runs no gateway); with several replicas the queue depth and in-flight requests
 * now are every live replica's.
 */
export interface WireEndpointMetrics {
  id: string;
  /** state -> how many workers are in it (only states that have workers). */
  workers: Record<string, number>;
  /** Workers serving now (running and healthy); failed ones are only in `workers.failed`. */
  readyWorkers: number;
  /**
   * What the since-start figures (requests, latencyMs, queueWaitMs, wakes) cover: since the answering server's
   * gateway started; null where none runs. With several replicas `replica` names the answering replica (those
   * figures are its gateway's only; queueDepth and inFlight are every live replica's); null with one process.
   */
  window: { since: string; seconds: number; replica: string | null } | null;
  requests: { total: number; byStatus: Record<string, number> } | null;
  latencyMs: WireDistribution | null;
  queueWaitMs: WireDistribution | null;
  queueDepth: number | null;
  inFlight: number | null;
  /**
   * Wakes from zero apart by where the worker came from (docs/workers.md, Idle tiers): cold starts (a new worker;
   * before servers had `thaws`, every wake was counted here), thaws (a frozen one) and restores (a suspended one).
   * `thaws` and `restores` are absent from older servers.
   */
  coldStarts: WireWakes | null;
  thaws?: WireWakes | null;
  restores?: WireWakes | null;
  /** The same three by tier (`cold` is `coldStarts`), as servers before `thaws` answered them. */
  wakes?: Record<'thaw' | 'restore' | 'cold', WireWakes> | null;
  /**
   * The workers the autoscaler wants now, within minNum and maxNum (0 while stopped); null where the answering
   * server's controller has not decided (it does not lead, or has not passed yet).
   */
  desiredWorkers: number | null;
  /** The traffic of the last minutes from the history (GET endpoint/metrics/history); null where none is kept. */
  recent: WireRecentTraffic | null;
  /** The endpoint's jobs (docs/jobs.md, Watching jobs); absent from servers before them. */
  jobs?: WireEndpointMetricsJobs;
  /**
   * The usage ledger's GPU time and its price over the last hour and the last day (docs/usage.md), every replica's;
   * absent from servers before the ledger, and where the answering server keeps none.
   */
  usage?: { lastHour: WireUsageTotals; lastDay: WireUsageTotals };
}

/** GPU-seconds per state, worker time and its price over some span (docs/usage.md). */
export interface WireUsageTotals {
  gpuSeconds: Record<UsageState, number>;
  timeBilledMs: number;
  amount: number;
  currency: string;
}

/** Wakes from zero of one tier: how many, and their mean duration (ms; null without any). */
export interface WireWakes {
  count: number;
  meanMs: number | null;
}

/** Wakes of one tier in each interval of a history: how many, and their mean duration (ms; null without any). */
export interface WireWakeColumns {
  count: number[];
  meanMs: (number | null)[];
}

/** An endpoint's jobs in `GET endpoint/metrics`. */
export interface WireEndpointMetricsJobs {
  /** Jobs IN_QUEUE and IN_PROGRESS now, as the store counts them (every replica's). */
  inQueue: number;
  inProgress: number;
  /**
   * The jobs that finished over the history's last minutes (every replica's), by outcome, those sent back to the
   * queue for another attempt, and the finished jobs' delay and execution times; null where no history is kept.
   */
  recent: WireRecentJobs | null;
}

export interface WireRecentJobs {
  /** What the figures cover: the history's samples within the last 5 minutes (fewer where it has fewer). */
  seconds: number;
  completed: number;
  failed: number;
  cancelled: number;
  timedOut: number;
  /** A client's retry, or a job whose worker was lost or ended, sent back to the queue. */
  retried: number;
  /** From submission (or a retry) to a worker taking the job, in ms; null without a finished job. */
  delayMs: { p50: number | null; p95: number | null };
  /** On the worker, in ms, of the finished jobs a worker took; null without any. */
  executionMs: { p50: number | null; p95: number | null };
}

/** An endpoint's traffic over its last minutes (`GET endpoint/metrics` `recent`). */
export interface WireRecentTraffic {
  /** What the figures cover: the history's samples within the last 5 minutes (fewer where it has fewer). */
  seconds: number;
  requests: number;
  requestsPerMinute: number;
  /** Of the requests in those samples, in ms; null without any. */
  latencyMs: { p50: number | null; p99: number | null };
}

/**
 * `GET endpoint/metrics/history`: one sample per interval (10 s by default, one hour kept) of an endpoint's
 * traffic and workers, oldest first, in columns (each array has one value per sample, beside `at`). Figures of an
 * interval (requests, latency, cold starts) are of what ended in it; the others are as they were at the sample.
 */
export interface WireEndpointHistory {
  id: string;
  /** Seconds between samples; null where the answering server keeps no history (no gateway, or turned off). */
  intervalSeconds: number | null;
  /** The most samples kept (0 where none are). */
  capacity: number;
  /** When each sample was taken, ms since the epoch. */
  at: number[];
  /** Requests by status: below 400 (2xx, 1xx, 3xx), 4xx (499: the client left), 5xx. */
  requests: { ok: number[]; clientErrors: number[]; serverErrors: number[] };
  /** Latency percentiles of the interval's requests (queue wait included), in ms; null without a request. */
  latencyMs: { p50: (number | null)[]; p99: (number | null)[] };
  /** Requests waiting for a slot, and how long the oldest had waited (ms). */
  queue: { depth: number[]; oldestWaitMs: number[] };
  inFlight: number[];
  /** Workers in each state (every state, zeros included). */
  workers: Record<string, number[]>;
  /** The autoscaler's desired count; null where this server's scaler had not decided. */
  desiredWorkers: (number | null)[];
  /**
   * Wakes from zero completed in the interval, apart by tier as in `GET endpoint/metrics`: cold starts, thaws and
   * restores, each with its mean duration (ms; null without any).
   */
  coldStarts: WireWakeColumns;
  thaws: WireWakeColumns;
  restores: WireWakeColumns;
  /**
   * Jobs: in the queue and in progress at the sample (the store's count), finished in the interval by outcome,
   * sent back to the queue in it, and the delay and execution time percentiles (ms; null without a finished job)
   * of the jobs that finished in it. Absent from servers before them.
   */
  jobs?: WireJobsHistory;
}

export interface WireJobsHistory {
  inQueue: number[];
  inProgress: number[];
  completed: number[];
  failed: number[];
  cancelled: number[];
  timedOut: number[];
  retried: number[];
  delayMs: { p50: (number | null)[]; p95: (number | null)[] };
  executionMs: { p50: (number | null)[]; p95: (number | null)[] };
}

/** `GET endpoint/worker/metrics`: one worker's state, health, GPUs and resource use. */
export interface WireWorkerMetrics {
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

/** `GET endpoint/worker/ended`: a worker that ended and whose last output is kept (a Corral extension). */
export interface WireEndedWorker {
  id: string;
  /** ISO time its container was removed. */
  endedAt: string;
  /** It ended failed (crashed, failed its health checks or its start), not by scaling or a replacement. */
  failed: boolean;
  /** Why it ended, e.g. `worker exited with code 3` or `scaled down`. */
  reason: string;
  /** Older lines were dropped: only its last 1,000 lines (256 KiB) are kept. */
  truncated: boolean;
  /** GET endpoint/worker/log for it: its last output. */
  log: string;
}

/** A create body's `endpoint` or an update body, as a client may send it (loosely typed). */
export type WireEndpointInput = Record<string, unknown>;
