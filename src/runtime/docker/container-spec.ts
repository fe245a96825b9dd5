/**
 * WorkerSpec -> Docker engine request bodies. Pure: no I/O, no clock, no config; tested by tables.
 */
import type { ContainerCreateOptions, HostConfig, MountSettings, VolumeCreateOptions } from 'dockerode';
import type { WorkerSandbox } from '../../config/config.js';
import { LABEL_PREFIX, type WorkerSpec, workerLabels } from '../types.js';
import { NETWORK_LABEL, sandboxHostConfig, workerNetwork } from './sandbox.js';

/**
 * Docker-only bookkeeping labels, written next to the worker's own labels so that a listing (which carries no
 * HostConfig) can rebuild the worker's GPU ids, app port and own labels (a container also inherits its image's
 * labels, which are not the worker's). They are not part of RuntimeWorker.labels.
 */
export const DOCKER_LABELS = {
  gpus: `${LABEL_PREFIX}gpus`,
  port: `${LABEL_PREFIX}port`,
  /** Comma-separated keys of the worker's own labels. */
  keys: `${LABEL_PREFIX}label-keys`,
  /** On a local volume: the name the endpoint gave it. */
  volume: `${LABEL_PREFIX}volume`,
} as const;

/**
 * Simulated GPUs (`--gpus h100-80g:2` on a machine without one) have uuids like `GPU-simulated-h100-80g-0`. They
 * get NVIDIA_VISIBLE_DEVICES like real ones but no device request, which the engine would refuse without a driver.
 */
export const SIMULATED_GPU_PREFIX = 'GPU-simulated-';

export interface ContainerSpecOptions {
  /** Host address the worker's port is published on; 127.0.0.1 keeps workers off the network. */
  hostIp: string;
  /** Container (and local volume) names are `${namePrefix}${workerId}`. */
  namePrefix: string;
  /** Set `StorageOpt.size` from rootfsSizeGB; only overlay2 on xfs with pquota (and a few others) accept it. */
  enforceRootfsSize?: boolean;
  /**
   * Ask the engine for the worker's GPUs (an nvidia device request); default true. False where the GPU inventory
   * is simulated: workers then see their GPU ids only in NVIDIA_VISIBLE_DEVICES.
   */
  requestGpuDevices?: boolean;
  /** Capabilities, no-new-privileges, pids and log limits, the worker's network; none: Docker's defaults. */
  sandbox?: WorkerSandbox;
}

export function containerName(workerId: string, options: Pick<ContainerSpecOptions, 'namePrefix'>): string {
  return `${options.namePrefix}${workerId}`;
}

/** The n-th (0-based) local volume of a worker, among the worker's local volumes. */
export function localVolumeName(
  workerId: string,
  n: number,
  options: Pick<ContainerSpecOptions, 'namePrefix'>,
): string {
  return `${options.namePrefix}${workerId}-${n}`;
}

/** The named volumes to create before the container (one per `local` volume), labelled like the worker. */
export function localVolumes(spec: WorkerSpec, options: Pick<ContainerSpecOptions, 'namePrefix'>) {
  const labels = workerLabels(spec);
  return spec.volumes
    .filter((volume) => volume.type === 'local')
    .map((volume, n): VolumeCreateOptions & { Name: string } => ({
      Name: localVolumeName(spec.workerId, n, options),
      Driver: 'local',
      Labels: { ...labels, [DOCKER_LABELS.volume]: volume.name },
    }));
}

export function isSimulatedGpu(uuid: string): boolean {
  return uuid.startsWith(SIMULATED_GPU_PREFIX);
}

function environment(spec: WorkerSpec): string[] {
  const env = { ...spec.env };
  if (env.NVIDIA_VISIBLE_DEVICES === undefined) {
    // `void` hides every GPU even where the nvidia runtime is the default and the image says `all`.
    env.NVIDIA_VISIBLE_DEVICES = spec.gpus.length > 0 ? spec.gpus.map((gpu) => gpu.uuid).join(',') : 'void';
  }
  return Object.entries(env).map(([key, value]) => `${key}=${value}`);
}

function mounts(spec: WorkerSpec, options: Pick<ContainerSpecOptions, 'namePrefix'>): MountSettings[] {
  let n = 0;
  return spec.volumes.map((volume): MountSettings => {
    if (volume.type === 'model')
      return { Type: 'bind', Source: volume.hostPath, Target: volume.mountPath, ReadOnly: true };
    if (volume.type === 'network') {
      return {
        Type: 'bind',
        Source: volume.hostPath,
        Target: volume.mountPath,
        ...(volume.readOnly ? { ReadOnly: true } : {}),
      };
    }
    const name = localVolumeName(spec.workerId, n, options);
    n += 1;
    return { Type: 'volume', Source: name, Target: volume.mountPath };
  });
}

function deviceRequests(spec: WorkerSpec, options: ContainerSpecOptions) {
  if (options.requestGpuDevices === false) return undefined;
  const ids = spec.gpus.filter((gpu) => !gpu.simulated && !isSimulatedGpu(gpu.uuid)).map((gpu) => gpu.uuid);
  if (ids.length === 0) return undefined;
  return [{ Driver: 'nvidia', DeviceIDs: ids, Capabilities: [['gpu']] }];
}

/** @types/dockerode marks CgroupPermissions required; the engine does not know it. */
export type DockerContainerSpec = Omit<ContainerCreateOptions, 'HostConfig'> & {
  name: string;
  HostConfig: Omit<HostConfig, 'CgroupPermissions'>;
};

/** The body of `POST /containers/create` for one worker (dockerode passes `name` as the query parameter). */
export function containerSpec(spec: WorkerSpec, options: ContainerSpecOptions): DockerContainerSpec {
  const port = `${spec.port}/tcp`;
  const own = workerLabels(spec);
  const labels: Record<string, string> = {
    ...own,
    [DOCKER_LABELS.keys]: Object.keys(own).sort().join(','),
    [DOCKER_LABELS.port]: String(spec.port),
    [DOCKER_LABELS.gpus]: spec.gpus.map((gpu) => gpu.uuid).join(','),
  };
  const network = options.sandbox && workerNetwork(spec, options.sandbox, options.namePrefix);
  if (network) labels[NETWORK_LABEL] = network.Name;
  const devices = deviceRequests(spec, options);
  const storage =
    options.enforceRootfsSize && spec.rootfsSizeGB !== undefined
      ? { StorageOpt: { size: `${spec.rootfsSizeGB}G` } }
      : {};
  return {
    name: containerName(spec.workerId, options),
    Image: spec.image,
    Cmd: spec.command.length > 0 ? [...spec.command] : undefined,
    Env: environment(spec),
    Labels: labels,
    ExposedPorts: { [port]: {} },
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    HostConfig: {
      PortBindings: { [port]: [{ HostIp: options.hostIp, HostPort: '' }] },
      RestartPolicy: { Name: 'no' },
      Mounts: mounts(spec, options),
      ...(devices ? { DeviceRequests: devices } : {}),
      // MemorySwap equal to Memory: no swap beyond the limit, so that it is a real one.
      ...(spec.memoryBytes === undefined ? {} : { Memory: spec.memoryBytes, MemorySwap: spec.memoryBytes }),
      ...storage,
      ...(options.sandbox ? sandboxHostConfig(options.sandbox, network?.Name) : {}),
    },
  };
}
