/**
 * The one interface every worker runtime implements (docker, local, fake). The controller
 * only ever talks to this. A worker is one container / process / pod running one endpoint revision.
 */
import type { ImagePullPolicy } from '../domain/endpoint.js';
import type { MachineModelCaches } from '../ports/model-cache.js';
import type { IdleTier, IdleTiers } from './idle-tiers.js';

export const LABEL_PREFIX = 'corral.dev/';
export const LABELS = {
  managed: `${LABEL_PREFIX}managed`,
  endpoint: `${LABEL_PREFIX}endpoint`,
  worker: `${LABEL_PREFIX}worker`,
  revision: `${LABEL_PREFIX}revision`,
  owner: `${LABEL_PREFIX}owner`,
  /** The id of the installation that made it: Corral adopts and removes only its own installation's workers. */
  installation: `${LABEL_PREFIX}installation`,
} as const;

/** The labels every runtime puts on a worker: the spec's own plus Corral's, which win. */
export function workerLabels(spec: WorkerSpec): Record<string, string> {
  return {
    ...spec.labels,
    [LABELS.managed]: 'true',
    [LABELS.endpoint]: spec.endpointId,
    [LABELS.worker]: spec.workerId,
    [LABELS.revision]: String(spec.revision),
    [LABELS.owner]: spec.ownerId,
  };
}

export interface RuntimeGpu {
  index: number;
  uuid: string;
  /** A GPU of a simulated inventory (`--gpus h100-80g:2`): named to the worker, never requested from a device. */
  simulated?: boolean;
}

export type RuntimeVolume =
  | { type: 'local'; name: string; sizeGB: number; mountPath: string }
  | { type: 'network'; hostPath: string; mountPath: string; readOnly?: boolean }
  /**
   * A model of the endpoint (issue 34), by its `name` (`org/name`): its repository directory in the machine's hub cache (`repoDir`, as
   * `models--org--name`, under `hostPath`'s parent), mounted read-only; only the models named, never the whole cache.
   */
  | { type: 'model'; name: string; hostPath: string; repoDir: string; mountPath: string };

export interface RegistryAuth {
  username: string;
  password: string;
  /** Registry host the credentials are for, e.g. registry.example.com; empty for Docker Hub. */
  server: string;
}

/** When a node pulls a worker's image: the endpoint's word (Kubernetes' spelling), one type for both. */
export type { ImagePullPolicy };

/** Everything needed to start one worker; built by the controller from the endpoint (pure). */
export interface WorkerSpec {
  workerId: string;
  endpointId: string;
  ownerId: string;
  revision: number;
  image: string;
  /** argv; empty means the image's default command. */
  command: string[];
  /** The endpoint's envs plus PORT, CORRAL_ENDPOINT_ID, CORRAL_WORKER_ID (and NVIDIA_VISIBLE_DEVICES). */
  env: Record<string, string>;
  /** The port the app listens on inside the worker. */
  port: number;
  /**
   * Every GPU placement gave this worker, real or simulated. The runtime keeps their uuids with the worker and
   * gives them back as RuntimeWorker.gpuUuids, so that a restarted controller knows which GPUs are held.
   */
  gpus: RuntimeGpu[];
  volumes: RuntimeVolume[];
  labels: Record<string, string>;
  /**
   * Registry credentials for the image, decrypted when called. Only a runtime's pull path calls it: an image present
   * locally never asks, so the password is not read or passed around when no pull happens.
   */
  registryAuth?: () => Promise<RegistryAuth | undefined>;
  /** Where the runtime can enforce it (Docker with a supporting storage driver, Kubernetes). */
  rootfsSizeGB?: number;
  /** Host memory limit in bytes (Docker: HostConfig.Memory, no swap beyond it); undefined: none. */
  memoryBytes?: number;
  /**
   * What a runtime whose scheduler places workers (Kubernetes) needs besides: the endpoint's product (the pod's node
   * selector), its GPUs per worker, its registry credential id ('' for a public image) and the endpoint's image pull
   * policy (absent: the installation's). Other runtimes ignore it.
   */
  placement?: {
    product: string;
    gpuNum: number;
    authId: string;
    /** The endpoint's own pull policy; absent: the installation's, else by the tag (`latestTag`). */
    pullPolicy?: ImagePullPolicy;
    /** The image names the tag `latest`, or no tag and no digest (domain/image-name.ts, floatsOnLatest). */
    latestTag?: boolean;
  };
}

/**
 * What the runtime says of a worker; health is the controller's business, not the runtime's. `pending`: a runtime
 * whose own scheduler places workers (kubernetes) has not placed it yet (no node has the GPUs); the others never
 * say it.
 */
export type RuntimePhase = 'pending' | 'pulling' | 'starting' | 'running' | 'exited';

/** The phases of a worker on its way to running: what a create's progress and an adopted worker's wait show. */
export type WaitingPhase = Extract<RuntimePhase, 'pending' | 'pulling' | 'starting'>;

export function isWaitingPhase(phase: RuntimePhase): phase is WaitingPhase {
  return phase === 'pending' || phase === 'pulling' || phase === 'starting';
}

/** `out-of-memory`: the kernel's OOM killer ended the worker (it went over its memory limit). */
export type ExitReason = 'out-of-memory';

export interface RuntimeWorker {
  workerId: string;
  endpointId: string;
  revision: number;
  labels: Record<string, string>;
  phase: RuntimePhase;
  /** Where the worker's HTTP port is reachable from Corral, once it is running. */
  address?: { host: string; port: number };
  exitCode?: number;
  /** Why it exited, where the runtime can tell (set only with phase `exited`). */
  exitReason?: ExitReason;
  /** The host memory limit it runs under, in bytes (WorkerSpec.memoryBytes), where the runtime keeps it. */
  memoryLimitBytes?: number;
  /** Human detail: pull progress, exit reason. */
  message: string;
  createdAt: number;
  /** When it exited (epoch ms), where the runtime keeps it (Docker's State.FinishedAt): the usage ledger's end. */
  finishedAt?: number;
  /** The uuids of the GPUs the worker was created with (spec.gpus, real or simulated), in the same order. */
  gpuUuids: string[];
  /**
   * The idle tier it is in (idle-tiers.ts), where the runtime can tell: a paused container is `frozen`; one whose
   * GPU processes the driver holds checkpointed is `suspended`. Absent: not in a tier.
   */
  tier?: IdleTier;
  /**
   * Suspended: the GPU memory its processes held when suspended, per GPU uuid, in bytes, where the runtime recorded
   * it (a restarted Corral adopts it with it; without it the worker's whole GPUs must be free to restore it).
   */
  suspendedGpuBytes?: Record<string, number>;
}

export interface PullProgress {
  /** 0-100, or undefined when the registry does not say. */
  percent?: number;
  /** The whole line the worker's state shows, e.g. `pulling nginx:latest: 42% (120/285 MB)`. */
  message: string;
  /**
   * Where the create is (the worker's state meanwhile); default `pulling`. A runtime whose scheduler places workers
   * says `pending` while no node has room (with the scheduler's words as the message) and `starting` while the
   * container is being started.
   */
  phase?: WaitingPhase;
}

export interface WorkerStats {
  cpuPercent: number;
  memoryBytes: number;
}

export interface LogOptions {
  follow: boolean;
  /** Last N lines; undefined for all. */
  tail?: number;
  signal?: AbortSignal;
  /**
   * Called once the stream is attached (before its first line, also when there is none): a removal begun after it
   * cannot take lines the stream would have read. The output keeper waits for it before a worker is removed.
   */
  onOpen?: () => void;
}

/**
 * What a runtime pushes as it happens. `started` also follows an engine's restart of the worker (`docker restart`),
 * after which its address may differ: the next listing has the new one. `stopping`: someone told the engine to stop
 * or kill it (`docker stop`, `restart`, `kill`), its exit follows; `paused`/`resumed`: the engine froze or thawed it
 * (`docker pause`/`unpause`). Only runtimes whose engine can be told so send these three (Docker).
 */
export type RuntimeEvent =
  | { type: 'exited'; workerId: string; exitCode: number }
  | { type: 'started'; workerId: string }
  | { type: 'removed'; workerId: string }
  | { type: 'stopping'; workerId: string }
  | { type: 'paused'; workerId: string }
  | { type: 'resumed'; workerId: string };

/** An image the engine holds (docs/workers.md, Private images). */
export interface LocalImage {
  id: string;
  /** `repository@sha256:...` for each registry it was pulled from or pushed to; empty for an image built here. */
  repoDigests: string[];
}

/** An image to make present: its reference and, for a private one, the owner's registry credentials. */
export interface ImageRequest {
  image: string;
  /** As WorkerSpec.registryAuth: called only when a pull happens. */
  registryAuth?: () => Promise<RegistryAuth | undefined>;
  /** For logs: the worker the image is for, when a create prepares it. */
  workerId?: string;
  /**
   * Where a runtime whose scheduler places workers (Kubernetes) makes the image present, and how: the nodes of the
   * endpoint's products (none named: every GPU node), pulled as its workers' pods pull (the owner's registry
   * credential id, '' for a public image; the endpoint's pull policy and whether the image floats on `latest`, as in
   * WorkerSpec.placement). Other runtimes ignore it.
   */
  endpoint?: {
    ownerId: string;
    authId: string;
    productIds: readonly string[];
    pullPolicy?: ImagePullPolicy;
    latestTag?: boolean;
  };
}

/** A GPU product as a runtime's own scheduler sees it (the kubernetes runtime: its nodes), as last seen. */
export interface ScheduledProduct {
  id: string;
  /** What the nodes call the GPU (`NVIDIA-H100-80GB-HBM3`), where they say. */
  gpuModel?: string;
  gpuMemoryGB?: number;
  /** GPUs the product's schedulable nodes offer (their allocatable GPUs). */
  gpusTotal: number;
  /** The most GPUs one of those nodes offers: a worker (one pod, on one node) can have no more. */
  gpusPerNodeMax?: number;
  /** gpusTotal less what pods hold on those nodes. */
  gpusFree: number;
  /** The highest CUDA version every one of its nodes' drivers supports (`12.4`), where every node says. */
  cudaVersion?: string;
}

/**
 * A runtime whose own scheduler places workers on GPUs (kubernetes): Corral's GPU inventory decides nothing there,
 * a worker is handed to the scheduler at once, and the products are the scheduler's.
 */
export interface GpuScheduler {
  /** The products, as last seen (no call to the cluster): configured ones first, then those its nodes show. */
  products(): ScheduledProduct[];
}

export interface WorkerRuntime {
  readonly name: 'docker' | 'kubernetes' | 'local' | 'fake';
  /**
   * Freezing and suspending idle workers (idle-tiers.ts); absent where the runtime has no freezer (kubernetes without
   * its node agents: node-agent-tiers.ts).
   */
  readonly idleTiers?: IdleTiers;
  /** Present where the runtime's scheduler places workers on GPUs, not Corral's inventory (kubernetes). */
  readonly gpuScheduler?: GpuScheduler;
  /**
   * Present where the workers' machines keep their own model caches, filled by the runtime (kubernetes with node
   * agents: each GPU node's cache); absent: the models are fetched into this machine's cache (docs/models.md).
   */
  readonly modelCache?: MachineModelCaches | undefined;
  /**
   * True where `create` makes the image present on the machine the worker runs on by itself, sharing a pull under way
   * there (kubernetes: the kubelet pulls through the node's containerd): a worker start need not wait for the
   * endpoint's prepareImage, which then only fails a missing image early. Absent: a start waits for it (Docker: one
   * pull for all the workers of the machine).
   */
  readonly createPullsWhereItRuns?: boolean;
  /** The image under that name, or undefined when the engine has none; only runtimes that hold images have it. */
  localImage?(image: string): Promise<LocalImage | undefined>;
  /**
   * Makes the image present so that a create needs no pull: resolves at once when it is there, else pulls it
   * (reporting progress). Throws RuntimeError IMAGE_PULL_FAILED when the image cannot be had, UNAVAILABLE when the
   * engine cannot be reached. A runtime without images (local) resolves at once.
   */
  prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void>;
  /**
   * Pulls the image when it is not present (reporting progress), creates and starts the worker. Throws
   * RuntimeError IMAGE_PULL_FAILED when the image cannot be had, RUNTIME_ERROR for anything else.
   * Returns once the worker is started (not healthy).
   */
  create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker>;
  /** Stops (SIGTERM, then SIGKILL after the grace period) and removes the worker and its local volumes. Idempotent. */
  remove(workerId: string, options?: { graceSeconds?: number }): Promise<void>;
  /** Workers whose labels include every given label. */
  list(selector: Record<string, string>): Promise<RuntimeWorker[]>;
  inspect(workerId: string): Promise<RuntimeWorker | undefined>;
  /**
   * The worker's output, line by line. Throws RuntimeError NOT_FOUND for an unknown worker. A followed log ends once
   * the worker has exited or been removed, after its last lines.
   */
  logs(workerId: string, options: LogOptions): AsyncIterable<string>;
  stats(workerId: string): Promise<WorkerStats | undefined>;
  /** Pushes starts (restarts too), exits, removals and pauses as they happen; returns an unsubscribe function. */
  watch(onEvent: (event: RuntimeEvent) => void): () => void;
  close(): Promise<void>;
}

export type RuntimeErrorCode = 'IMAGE_PULL_FAILED' | 'RUNTIME_ERROR' | 'NOT_FOUND' | 'UNAVAILABLE';

/** Every runtime fails the same way: with one of these codes. */
export class RuntimeError extends Error {
  override name = 'RuntimeError';

  constructor(
    readonly code: RuntimeErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
