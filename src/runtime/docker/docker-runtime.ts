/**
 * WorkerRuntime on a Docker engine (dockerode). One container per worker, found again by its labels; I/O only:
 * request bodies come from container-spec.ts, engine answers are read by worker-state.ts; images (inspect, pull) are
 * engine-images.ts's, worker networks worker-networks.ts's.
 */
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { DEFAULT_SANDBOX, type WorkerSandbox } from '../../config/config.js';
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import type { SuspendRecords } from '../suspend-records.js';
import {
  type ImageRequest,
  LABELS,
  type LocalImage,
  type LogOptions,
  type PullProgress,
  RuntimeError,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
} from '../types.js';
import { type ContainerSpecOptions, containerSpec, localVolumes } from './container-spec.js';
import { DockerIdleTiers } from './docker-tiers.js';
import { engineError, isNotFound, reasonOf, statusOf } from './engine-errors.js';
import { EngineImages } from './engine-images.js';
import { isStorageOptRefused } from './engine-limits.js';
import { refuseEngineRedirects } from './engine-redirects.js';
import { createContainerOptions } from './engine-requests.js';
import { EventWatch } from './event-watch.js';
import type { HostGuard } from './host-guard.js';
import { logLines } from './log-lines.js';
import { NETWORK_LABEL, workerNetwork } from './sandbox.js';
import { WorkerNetworks } from './worker-networks.js';
import {
  computeStats,
  phaseOf,
  type RawStats,
  workerFromInspect,
  workerFromListing,
} from './worker-state.js';

export interface DockerRuntimeOptions {
  docker: Dockerode;
  /** Where worker ports are published; default 127.0.0.1 (never reachable from the network). */
  hostIp?: string;
  /** Container and local volume names start with this; default `corral-`. */
  namePrefix?: string;
  logger: Logger;
  clock?: () => number;
  /**
   * Pass rootfsSizeGB as StorageOpt.size; default false since most storage drivers refuse it (selectRuntime turns it
   * on where `docker info` says the driver can: engineLimits). Should the engine refuse it all the same (xfs
   * without pquota), the limit is dropped with a warning and the worker created without it.
   */
  enforceRootfsSize?: boolean;
  /** Request the worker's GPUs from the engine (nvidia device request); default true, false for a simulated
   * inventory (`--gpus h100-80g:2`), where the worker only sees NVIDIA_VISIBLE_DEVICES. */
  requestGpuDevices?: boolean;
  /** Reconnect backoff of the event stream; defaults 200 ms doubling up to 5 s. */
  eventBackoff?: { initialMs: number; maxMs: number };
  /**
   * How long a listing may take before the engine counts as unreachable (UNAVAILABLE); default 10 s. An engine
   * that accepts connections and never answers would otherwise hold every controller pass.
   */
  listTimeoutMs?: number;
  /** How workers are confined (capabilities, pids, logs, their network); default DEFAULT_SANDBOX. */
  sandbox?: WorkerSandbox;
  /** Changes the host for the sandbox (firewall rules, nosuid storage mounts); none: the host is left alone. */
  hostGuard?: HostGuard;
  /** What suspends a worker's GPU state (the CUDA driver's checkpoint API); none: no suspended tier. */
  checkpointer?: GpuCheckpointer | undefined;
  /** Where suspended workers' GPU memory is recorded (suspend-records.ts), in Corral's data dir. */
  suspendRecords?: SuspendRecords;
}

const DEFAULT_GRACE_SECONDS = 10;
/** The container events watch follows (worker-state.ts's eventFromDocker reads them). */
export const WORKER_EVENTS = ['start', 'restart', 'kill', 'die', 'destroy', 'pause', 'unpause'] as const;
const DEFAULT_LIST_TIMEOUT_MS = 10_000;
const VOLUME_REMOVE_ATTEMPTS = 10;

/** Where dockerode talks to, for messages: the socket path or the TCP address. */
export function engineAddress(docker: Dockerode): string {
  const modem = docker.modem as unknown as {
    socketPath?: unknown;
    host?: string;
    port?: unknown;
    protocol?: string;
  };
  if (typeof modem.socketPath === 'string') return modem.socketPath;
  if (modem.host) return `${modem.protocol ?? 'http'}://${modem.host}${modem.port ? `:${modem.port}` : ''}`;
  return '/var/run/docker.sock';
}

/** True when the engine answers `/_ping` within `timeoutMs`; used to pick the default runtime. */
export async function dockerReachable(docker: Dockerode, timeoutMs = 1_500): Promise<boolean> {
  const signal = AbortSignal.timeout(timeoutMs);
  const ping = docker.ping as unknown as (options: { abortSignal: AbortSignal }) => Promise<unknown>;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs + 100);
  });
  try {
    return await Promise.race([ping.call(docker, { abortSignal: signal }).then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class DockerRuntime implements WorkerRuntime {
  readonly name = 'docker' as const;
  readonly #docker: Dockerode;
  readonly #logger: Logger;
  readonly #clock: () => number;
  readonly #hostIp: string;
  #specOptions: ContainerSpecOptions;
  readonly #address: string;
  readonly #watches = new Set<EventWatch>();
  readonly #streams = new Set<{ destroy(): unknown }>();
  readonly #options: DockerRuntimeOptions;
  readonly #networks: WorkerNetworks;
  readonly #images: EngineImages;
  readonly idleTiers: DockerIdleTiers;

  constructor(options: DockerRuntimeOptions) {
    this.#options = options;
    this.#docker = options.docker;
    this.#logger = options.logger.child({ runtime: 'docker' });
    this.#clock = options.clock ?? Date.now;
    this.#hostIp = options.hostIp ?? '127.0.0.1';
    this.#specOptions = {
      hostIp: this.#hostIp,
      namePrefix: options.namePrefix ?? 'corral-',
      enforceRootfsSize: options.enforceRootfsSize ?? false,
      requestGpuDevices: options.requestGpuDevices ?? true,
      sandbox: options.sandbox ?? DEFAULT_SANDBOX,
    };
    this.#address = engineAddress(options.docker);
    refuseEngineRedirects();
    this.#networks = new WorkerNetworks({
      docker: options.docker,
      logger: this.#logger,
      subnets: this.#specOptions.sandbox?.subnets,
    });
    this.#images = new EngineImages({ docker: options.docker, logger: this.#logger, address: this.#address });
    this.idleTiers = new DockerIdleTiers({
      docker: options.docker,
      checkpointer: options.checkpointer,
      containerIds: (workerId) => this.#containerIds(workerId),
      address: this.#address,
      records: options.suspendRecords,
    });
  }

  /** Whether workers get StorageOpt.size (false once the engine has refused it). */
  get enforcesRootfsSize(): boolean {
    return this.#specOptions.enforceRootfsSize === true;
  }

  async create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    if ((await this.#containerIds(spec.workerId)).length > 0) {
      throw new RuntimeError('RUNTIME_ERROR', `worker ${spec.workerId} already exists`);
    }
    await this.prepareImage(spec, onProgress);
    await this.#guardHost(spec);
    const volumes: string[] = [];
    let container: Dockerode.Container | undefined;
    const network = this.#network(spec);
    try {
      const make = async () => {
        for (const volume of localVolumes(spec, this.#specOptions)) {
          await this.#docker.createVolume(volume);
          volumes.push(volume.Name);
        }
        return this.#createContainer(spec);
      };
      container = network ? await this.#networks.withNetwork(network, make) : await make();
      await container.start();
      const worker = workerFromInspect(await container.inspect(), this.#hostIp);
      // The controller says each start and failure with its endpoint's name (worker-log.ts); this is the engine's detail.
      this.#logger.debug(
        { workerId: spec.workerId, container: container.id, address: worker.address },
        'container started',
      );
      return worker;
    } catch (error) {
      const failure = engineError(
        error,
        `cannot start worker ${spec.workerId} (image ${spec.image})`,
        this.#address,
      );
      if (failure.code !== 'UNAVAILABLE') {
        await this.#undoCreate(spec.workerId, container, volumes);
        if (network) await this.#releaseNetwork(network.Name);
      }
      throw failure;
    }
  }

  async remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    const grace = options?.graceSeconds ?? DEFAULT_GRACE_SECONDS;
    try {
      const containers = await this.#listContainers({ [LABELS.worker]: workerId });
      for (const { Id } of containers) await this.#removeContainer(Id, grace);
      await this.#removeVolumes(workerId);
      const networks = new Set(
        containers.map((c) => c.Labels?.[NETWORK_LABEL]).filter((n) => n !== undefined),
      );
      for (const name of networks) await this.#releaseNetwork(name);
      this.idleTiers.forget(workerId);
    } catch (error) {
      throw engineError(error, `cannot remove worker ${workerId}`, this.#address);
    }
    this.#logger.debug({ workerId }, 'container removed');
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    const containers = await this.#listContainers(selector);
    // A container with the managed label but no worker id was not made by Corral (an image may carry the label).
    return Promise.all(
      containers
        .filter((container) => container.Labels?.[LABELS.worker])
        .map((container) =>
          phaseOf(container.State) === 'exited'
            ? this.#exitedWorker(container)
            : this.idleTiers.refine(workerFromListing(container, this.#hostIp)),
        ),
    );
  }

  /**
   * A listing does not say why a container exited: an exited one (few, and removed soon) is inspected for the OOM
   * killer and its memory limit. Gone meanwhile, or the engine failing: the listing's entry.
   */
  async #exitedWorker(container: Dockerode.ContainerInfo): Promise<RuntimeWorker> {
    try {
      return workerFromInspect(await this.#docker.getContainer(container.Id).inspect(), this.#hostIp);
    } catch {
      return workerFromListing(container, this.#hostIp);
    }
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    const [id] = await this.#containerIds(workerId);
    if (!id) return undefined;
    try {
      return workerFromInspect(await this.#docker.getContainer(id).inspect(), this.#hostIp);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw engineError(error, `cannot inspect worker ${workerId}`, this.#address);
    }
  }

  async *logs(workerId: string, options: LogOptions): AsyncGenerator<string> {
    const [id] = await this.#containerIds(workerId);
    if (!id) throw new RuntimeError('NOT_FOUND', `worker ${workerId} does not exist`);
    if (options.signal?.aborted) return;
    const request = {
      stdout: true,
      stderr: true,
      ...(options.tail === undefined ? {} : { tail: options.tail }),
      ...(options.signal ? { abortSignal: options.signal } : {}),
    };
    const container = this.#docker.getContainer(id);
    if (!options.follow) {
      const body = await container.logs({ ...request, follow: false }).catch((error: unknown) => {
        throw this.#logError(error, workerId);
      });
      options.onOpen?.();
      yield* logLines([body]);
      return;
    }
    const stream = await container.logs({ ...request, follow: true }).catch((error: unknown) => {
      throw this.#logError(error, workerId);
    });
    options.onOpen?.();
    yield* this.#followLogs(stream as NodeJS.ReadableStream & { destroy(): unknown }, options.signal);
  }

  async stats(workerId: string): Promise<WorkerStats | undefined> {
    const [id] = await this.#containerIds(workerId);
    if (!id) return undefined;
    try {
      const raw = await this.#docker.getContainer(id).stats({ stream: false });
      return computeStats(raw as unknown as RawStats);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw engineError(error, `cannot read stats of worker ${workerId}`, this.#address);
    }
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    const watch = new EventWatch({
      open: (since, signal) => this.#openEvents(since, signal),
      onEvent,
      logger: this.#logger,
      clock: this.#clock,
      initialBackoffMs: this.#options.eventBackoff?.initialMs,
      maxBackoffMs: this.#options.eventBackoff?.maxMs,
    });
    this.#watches.add(watch);
    return () => {
      watch.close();
      this.#watches.delete(watch);
    };
  }

  async close(): Promise<void> {
    for (const watch of this.#watches) watch.close();
    this.#watches.clear();
    for (const stream of this.#streams) stream.destroy();
    this.#streams.clear();
    // The worker-facing listener's hole goes with this process; other installations' rules stay.
    await this.#options.hostGuard?.release();
  }

  // --- image ---

  localImage(image: string): Promise<LocalImage | undefined> {
    return this.#images.localImage(image);
  }

  prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void> {
    return this.#images.prepareImage(request, onProgress);
  }

  /** Removes the worker networks no worker uses any more; a failure is logged (they go at a later removal). */
  async pruneNetworks(installationId?: string): Promise<void> {
    await this.#networks.pruneUnused(installationId).catch((error: unknown) => {
      this.#logger.warn({ err: error }, 'cannot list worker networks');
    });
  }

  // --- sandbox ---

  #network(spec: WorkerSpec) {
    const { sandbox, namePrefix } = this.#specOptions;
    return sandbox ? workerNetwork(spec, sandbox, namePrefix) : undefined;
  }

  /** Before the first worker on a network or a storage path: the host-side part of the sandbox (once each). */
  async #guardHost(spec: WorkerSpec): Promise<void> {
    const guard = this.#options.hostGuard;
    if (!guard) return;
    if (this.#network(spec)) await guard.firewall();
    for (const volume of spec.volumes) {
      if (volume.type === 'network') await guard.protectStorage(volume.hostPath);
    }
  }

  /** A network left unused is removed; failing that is logged, never the removal's failure. */
  async #releaseNetwork(name: string): Promise<void> {
    await this.#networks.releaseIfUnused(name).catch((error: unknown) => {
      this.#logger.warn({ network: name, err: error }, 'cannot check whether a worker network is still used');
    });
  }

  // --- containers and volumes ---

  /** Creates the container; drops the rootfs size limit for good if the engine refuses it. */
  async #createContainer(spec: WorkerSpec): Promise<Dockerode.Container> {
    const create = () =>
      this.#docker.createContainer(
        // The env (secrets resolved) in the body only, never in the URL.
        createContainerOptions(containerSpec(spec, this.#specOptions)) as Dockerode.ContainerCreateOptions,
      );
    try {
      return await create();
    } catch (error) {
      const limited = this.#specOptions.enforceRootfsSize && spec.rootfsSizeGB !== undefined;
      if (!limited || statusOf(error) === undefined || !isStorageOptRefused(reasonOf(error))) throw error;
      this.#logger.warn(
        { workerId: spec.workerId, reason: reasonOf(error) },
        'the engine refuses a rootfs size limit; workers run without one from now on',
      );
      this.#specOptions = { ...this.#specOptions, enforceRootfsSize: false };
      return await create();
    }
  }

  async #listContainers(selector: Record<string, string>): Promise<Dockerode.ContainerInfo[]> {
    const label = [
      `${LABELS.managed}=true`,
      ...Object.entries(selector)
        .filter(([key]) => key !== LABELS.managed)
        .map(([key, value]) => `${key}=${value}`),
    ];
    const timeoutMs = this.#options.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS;
    const abortSignal = AbortSignal.timeout(timeoutMs);
    try {
      return await this.#docker.listContainers({ all: true, filters: { label }, abortSignal });
    } catch (error) {
      if (abortSignal.aborted) {
        throw new RuntimeError(
          'UNAVAILABLE',
          `cannot reach the Docker engine at ${this.#address}: no answer to a listing within ${timeoutMs} ms`,
          { cause: error },
        );
      }
      throw engineError(error, 'cannot list workers', this.#address);
    }
  }

  /** The containers labelled as this worker (normally one; names are not trusted: the prefix may change). */
  async #containerIds(workerId: string): Promise<string[]> {
    const containers = await this.#listContainers({ [LABELS.worker]: workerId });
    return containers.map((container) => container.Id);
  }

  async #removeContainer(id: string, graceSeconds: number): Promise<void> {
    const container = this.#docker.getContainer(id);
    // A paused (frozen) container would take its stop signal only when thawed: it is thawed first.
    await container.unpause().catch(() => undefined);
    try {
      await container.stop({ t: graceSeconds });
    } catch (error) {
      // 304: already stopped; 404: already gone; 409: removal already in progress.
      if (![304, 404, 409].includes(statusOf(error) ?? 0)) throw error;
    }
    try {
      await container.remove({ v: true, force: true });
    } catch (error) {
      if (![404, 409].includes(statusOf(error) ?? 0)) throw error;
    }
  }

  /** Removes the worker's local volumes, waiting out a container removal still holding them. */
  async #removeVolumes(workerId: string): Promise<void> {
    const filters = { label: [`${LABELS.managed}=true`, `${LABELS.worker}=${workerId}`] };
    const { Volumes } = await this.#docker.listVolumes({ filters });
    for (const volume of Volumes ?? []) {
      for (let attempt = 1; ; attempt += 1) {
        try {
          await this.#docker.getVolume(volume.Name).remove();
          break;
        } catch (error) {
          if (isNotFound(error)) break;
          if (statusOf(error) !== 409 || attempt >= VOLUME_REMOVE_ATTEMPTS) throw error;
          await delay(100 * attempt);
        }
      }
    }
  }

  /** Removes what a failed create made (and only that: a name clash must not remove the other worker). */
  async #undoCreate(workerId: string, container: Dockerode.Container | undefined, volumes: string[]) {
    try {
      if (container) await this.#removeContainer(container.id, 0);
      for (const name of volumes) await this.#docker.getVolume(name).remove();
    } catch (error) {
      this.#logger.warn({ workerId, err: error }, 'cleanup after a failed create failed');
    }
  }

  // --- streams ---

  #logError(error: unknown, workerId: string): RuntimeError {
    if (isNotFound(error)) return new RuntimeError('NOT_FOUND', `worker ${workerId} does not exist`);
    return engineError(error, `cannot read the log of worker ${workerId}`, this.#address);
  }

  async *#followLogs(
    stream: NodeJS.ReadableStream & { destroy(): unknown },
    signal: AbortSignal | undefined,
  ): AsyncGenerator<string> {
    this.#streams.add(stream);
    try {
      yield* logLines(stream as AsyncIterable<Buffer>);
    } catch (error) {
      if (signal?.aborted || isAbort(error)) return;
      throw engineError(error, 'log stream failed', this.#address);
    } finally {
      this.#streams.delete(stream);
      stream.destroy();
    }
  }

  async #openEvents(since: number | undefined, signal: AbortSignal): Promise<AsyncIterable<Buffer>> {
    const stream = await this.#docker.getEvents({
      ...(since === undefined ? {} : { since }),
      filters: { type: ['container'], event: [...WORKER_EVENTS], label: [`${LABELS.managed}=true`] },
      abortSignal: signal,
    } as Dockerode.GetEventsOptions);
    return stream as AsyncIterable<Buffer>;
  }
}

function isAbort(error: unknown): boolean {
  const name = (error as { name?: string } | null)?.name;
  const code = (error as { code?: string } | null)?.code;
  return name === 'AbortError' || code === 'ABORT_ERR' || code === 'ECONNRESET';
}
