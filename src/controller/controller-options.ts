/**
 * The controller's options and the narrow interfaces of what it is given: the autoscaler's advice, a logger, the
 * health probe. Kept apart from controller.ts so that the wiring (main.ts, benchmarks, tests) reads one short file.
 */

import type { Endpoint, EnvVar } from '../domain/endpoint.js';
import type { ModelRef } from '../domain/models.js';
import type { Gpu } from '../gpu/inventory.js';
import type { BudgetStandings } from '../ports/budgets.js';
import { type Clock, systemTimers, type Timers } from '../ports/clock.js';
import type { MachineModelCaches, ModelCache } from '../ports/model-cache.js';
import type { WorkerUsageSink } from '../ports/usage.js';
import type { WorkerRuntime } from '../runtime/types.js';
import type { LeaseClaim } from '../store/cluster/leases.js';
import type { Store } from '../store/store.js';
import { type BackoffPolicy, DEFAULT_BACKOFF } from './crashes/backoff.js';
import type { HealthProbe } from './health/health-prober.js';
import type { ProbeResult } from './health/probe-result.js';
import type { ControllerMetrics } from './metrics.js';
import type { OutputKeeper } from './output/output-keeper.js';
import type { WorkerPlacement } from './placement/worker-placement.js';
import type { RetryPolicy } from './queue/work-queue.js';
import type { RoutingTable } from './routing-table.js';
import type { ManagedWorker } from './workers/managed-worker.js';
import type { RevealCredentials } from './workers/worker-spec.js';

/**
 * How often a worker that has not passed its health check yet is probed. Short, because a wake from zero waits for
 * it: the probe adds 0 to this much over the worker's own readiness (docs/performance.md, wake from zero).
 */
export const STARTING_PROBE_INTERVAL_MS = 50;

/** What the controller asks the autoscaler (src/autoscaler/scaler.ts); minNum and no victims without one. */
export interface ScalingAdvisor {
  /**
   * Workers of the current revision the endpoint wants, the idle ones to remove first, in order, the busy ones (a
   * request in flight, a job held or being taken, strict requests waiting for it), which no scale-down picks, and
   * the resting ones strict-resume requests wait for, to wake.
   */
  advise(
    endpoint: Endpoint,
    workers: readonly ManagedWorker[],
  ): { desired: number; victims: string[]; busy?: string[]; wake?: string[] };
  /** The endpoints that exist after a pass: what is kept of the others goes. */
  retain(exists: (endpointId: string) => boolean): void;
  /** Called when the answers may have changed by themselves (a request queued, a threshold reached). */
  onRescale(listener: () => void): () => void;
}

export interface ControllerLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
  /** Lines a person at the terminal need not see (a crash loop's repeats); pino's logger has it. */
  debug?(fields: object, message: string): void;
}

/**
 * The leader's fence (several replicas, docs/operations.md): `claim` is the lease this controller acts under, and
 * throws (LeaseLostError) once its term is over. Its worker rows are written in a transaction that checks the
 * claim on the database; with one process (SQLite) there is none.
 */
export interface WriteFence {
  claim(): LeaseClaim;
}

/**
 * Whether the endpoint's owner may run its image, asked before each worker start (docs/api.md, Private images);
 * a refusal fails the worker with IMAGE_PULL_FAILED and the message.
 */
export type StartImageCheck = (request: {
  ownerId: string;
  authId: string;
  image: string;
}) => Promise<{ allowed: true } | { allowed: false; message: string }>;

export interface ControllerOptions {
  store: Pick<Store, 'endpoints' | 'workers' | 'events' | 'leases'>;
  runtime: WorkerRuntime;
  /** Corral's GPU inventory, where the default placement (`inventoryPlacement`) hands out its GPUs. */
  gpus: Gpu[];
  /**
   * Who places waiting workers on GPUs (worker-placement.ts): default Corral, on `gpus`; `schedulerPlacement` where
   * the runtime's own scheduler does (kubernetes).
   */
  placement?: WorkerPlacement;
  probe: HealthProbe;
  logger: ControllerLogger;
  clock: Clock;
  /** The controller's loop and health probes run on these (tests advance them by hand). */
  timers?: Timers;
  /** Where the controller publishes each endpoint's routable workers (the gateway reads it). */
  routes: RoutingTable;
  /**
   * This installation's id, put on every worker it makes; workers of another installation on the same engine are
   * neither adopted nor removed. Undefined (tests, benchmarks): every managed worker is this controller's.
   */
  installationId?: string;
  /** Network storage id -> host path. */
  storagePaths: ReadonlyMap<string, string>;
  /** Network storages mounted read-only. */
  readOnlyStorages?: ReadonlySet<string>;
  /** A worker's host memory limit per GPU, in GiB (one share without GPUs); undefined: no limit. */
  memoryGBPerGpu?: number;
  /**
   * Host memory suspended workers' GPU state may take, in bytes (`suspendedMemoryGB`); past it the oldest suspended
   * worker is stopped. Default: half the machine's memory.
   */
  suspendBudgetBytes?: number;
  /** Registry credentials for an image pull, decrypted only for it. */
  revealCredentials: RevealCredentials;
  /** Checked before each worker start; absent: the runtime's pull is the only check. */
  imageAccess?: StartImageCheck;
  /**
   * The env a worker starts with, its `{{ CORRAL_SECRET_name }}` references replaced by the owner's values (the
   * secret service); throws, naming the env and the secret, when one is missing. Absent: env values as written.
   */
  resolveEnv?: (ownerId: string, env: Readonly<Record<string, string>>) => Promise<Record<string, string>>;
  /**
   * The RunPod worker protocol's variables of a `queue` endpoint's worker (the jobs side's URLs and token); the
   * endpoint's own envs override them. Absent: a queue worker gets none.
   */
  protocolEnv?: (endpointId: string, workerId: string) => EnvVar[];
  /**
   * The machine's model cache and the owners' hub tokens (issue 34): a worker of an endpoint that names models waits
   * in `downloading`, holding no GPU, until they are here, and gets them mounted. Absent: no models.
   */
  models?: {
    cache: Pick<ModelCache, 'hubDir' | 'ensure' | 'onRemoved'> &
      Partial<Pick<MachineModelCaches, 'lacking' | 'fillLacking'>>;
    token: (ownerId: string, model: ModelRef) => Promise<string | null>;
  };
  /**
   * A `queue` endpoint's worker's health check in place of an HTTP probe: ready once it has polled for a job,
   * unhealthy once its polls and pings stop. Absent: queue workers are probed over HTTP like any other.
   */
  queueProbe?: (endpointId: string, workerId: string) => Promise<ProbeResult>;
  /**
   * Told when a worker is chosen for removal (draining), stops, fails, and once its container is gone: the jobs it
   * held go back to the queue at once (each call finds what is left; most find nothing).
   */
  onWorkerEnded?: (endpointId: string, workerId: string, reason: string) => void;
  /** Owners' budgets (ports/budgets.ts): past one, no new worker of the owner's starts beyond minNum. */
  budgets?: BudgetStandings;
  /** The usage ledger (usage/recorder.ts): told each worker's state as it changes, and the workers of each pass. */
  usage?: WorkerUsageSink;
  /** How many workers scaling asks for, and which go first; minNum when absent. */
  scaling?: ScalingAdvisor;
  startupTimeoutMs?: number;
  /**
   * How long a worker that had passed its health check may stay unhealthy before it is failed (UNHEALTHY) and
   * replaced, freeing its GPUs. Default DEFAULT_UNHEALTHY_TIMEOUT_MS.
   */
  unhealthyTimeoutMs?: number;
  /**
   * How long after its exit event a worker whose container is listed exited is given to start again (a
   * `docker restart`) before it counts as dead. Default DEFAULT_RESTART_GRACE_MS.
   */
  restartGraceMs?: number;
  backoff?: BackoffPolicy;
  /**
   * How long a worker must run healthy before the failures of flapping workers (ones that died after passing their
   * health check) stop counting toward the crash loop. Default 10 min, as the kubelet (docs/workers.md says why).
   */
  crashResetMs?: number;
  /** Probing interval while a worker has not passed yet (fast, so a cold start is served at once). */
  startingProbeIntervalMs?: number;
  /** The whole pass (the work queue's resync: every endpoint, and the runtime's whole listing) every this long. */
  intervalMs?: number;
  /** Endpoints reconciled at once by the work queue (queue/work-queue.ts); the whole pass runs alone. Default 4. */
  reconcileConcurrency?: number;
  /**
   * How long a create that ended waits for the others of its endpoint (its workers' creates end together) before
   * their endpoint's reconcile: they share one. Default DEFAULT_COALESCE_MS. Other changes (a health flip, an exit)
   * are reconciled on the next turn, so that the store follows routing at once.
   */
  coalesceMs?: number;
  /** When a reconcile that failed is tried again (per endpoint, doubling). Default DEFAULT_RETRY. */
  retry?: RetryPolicy;
  /** Failed workers kept per endpoint so that the API can show why. */
  failedKept?: number;
  metrics?: ControllerMetrics;
  /** Resolves once no request is in flight on the worker (the gateway's drain); removal waits for it. */
  awaitDrained?: (endpointId: string, workerId: string) => Promise<void>;
  /** Keeps the last output of workers it removes (output-keeper.ts); absent: nothing is kept. */
  outputs?: Pick<OutputKeeper, 'begin' | 'retain'>;
  /** The leader's fence on its store writes; absent (one process): unfenced. */
  fence?: WriteFence;
}

/** Two seconds: a `docker restart` starts the container again well within it; a real death waits that long more. */
export const DEFAULT_RESTART_GRACE_MS = 2_000;

/** One minute: long past any probe's failureThreshold, short against the hours a stuck worker would hold a GPU. */
export const DEFAULT_UNHEALTHY_TIMEOUT_MS = 60_000;

/** The creates of an endpoint ending within this long share its reconcile (controller-options.ts, coalesceMs). */
export const DEFAULT_COALESCE_MS = 20;

/** The options a controller leaves out. */
type OptionalOptions =
  | 'placement'
  | 'scaling'
  | 'budgets'
  | 'metrics'
  | 'awaitDrained'
  | 'memoryGBPerGpu'
  | 'imageAccess'
  | 'installationId'
  | 'crashResetMs'
  | 'readOnlyStorages'
  | 'resolveEnv'
  | 'protocolEnv'
  | 'models'
  | 'queueProbe'
  | 'onWorkerEnded'
  | 'usage'
  | 'outputs'
  | 'suspendBudgetBytes'
  | 'fence'
  | 'retry';

/** The options with every default filled in. */
export type ResolvedControllerOptions = Required<Omit<ControllerOptions, OptionalOptions>> &
  Pick<ControllerOptions, OptionalOptions>;

export function withDefaults(options: ControllerOptions): ResolvedControllerOptions {
  return {
    startupTimeoutMs: 300_000,
    unhealthyTimeoutMs: DEFAULT_UNHEALTHY_TIMEOUT_MS,
    restartGraceMs: DEFAULT_RESTART_GRACE_MS,
    backoff: DEFAULT_BACKOFF,
    startingProbeIntervalMs: STARTING_PROBE_INTERVAL_MS,
    intervalMs: 1000,
    reconcileConcurrency: 4,
    coalesceMs: DEFAULT_COALESCE_MS,
    failedKept: 3,
    timers: systemTimers,
    ...options,
  };
}
