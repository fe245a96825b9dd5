import {
  DEFAULT_HEALTH,
  DEFAULT_HEALTH_PATH,
  type EndpointSpec,
  type EnvVar,
  type HealthCheck,
  type ImageSpec,
  type ScalingPolicy,
  type VolumeMount,
  type WorkerSettings,
} from './endpoint.js';
import type { Limits } from './limits.js';

/**
 * The fields a create or update request carried. Omitted fields keep their value; objects merge one
 * level deep, so `{workers: {maxWorkers: 3}}` changes only maxWorkers. `health: 'reset'` restores defaults.
 */
export interface SpecPatch {
  name?: string;
  appName?: string;
  workers?: Partial<WorkerSettings>;
  port?: number;
  scaling?: Partial<ScalingPolicy>;
  image?: Partial<ImageSpec>;
  productIds?: string[];
  rootfsSizeGB?: number;
  volumes?: VolumeMount[];
  clusterId?: string;
  env?: EnvVar[];
  health?: Partial<HealthCheck> | 'reset';
}

export const DEFAULT_WORKERS: Omit<WorkerSettings, 'requestTimeoutSeconds'> = {
  minWorkers: 0,
  maxWorkers: 1,
  idleTimeoutSeconds: 60,
  maxConcurrent: 1,
  gpusPerWorker: 1,
  cudaVersion: 'any',
};

export const DEFAULT_SCALING: ScalingPolicy = { type: 'queue', value: 4 };

/** The spec a create starts from before the request's fields are applied. */
export function defaultSpec(id: string, limits: Limits): EndpointSpec {
  return {
    name: '',
    appName: id,
    workers: { ...DEFAULT_WORKERS, requestTimeoutSeconds: Math.min(300, limits.requestTimeoutSeconds.max) },
    port: 0,
    scaling: { ...DEFAULT_SCALING },
    image: { ref: '', authId: '', command: '' },
    productIds: [],
    rootfsSizeGB: limits.rootfsSizeGB.free,
    volumes: [],
    clusterId: '',
    env: [],
    health: { path: DEFAULT_HEALTH_PATH, ...DEFAULT_HEALTH },
  };
}

export function applyPatch(base: EndpointSpec, patch: SpecPatch): EndpointSpec {
  const health =
    patch.health === 'reset'
      ? { path: DEFAULT_HEALTH_PATH, ...DEFAULT_HEALTH }
      : mergeDefined(base.health, patch.health);
  return {
    name: patch.name ?? base.name,
    appName: patch.appName ?? base.appName,
    workers: mergeDefined(base.workers, patch.workers),
    port: patch.port ?? base.port,
    scaling: mergeDefined(base.scaling, patch.scaling),
    image: mergeDefined(base.image, patch.image),
    productIds: patch.productIds ?? base.productIds,
    rootfsSizeGB: patch.rootfsSizeGB ?? base.rootfsSizeGB,
    volumes: patch.volumes ?? base.volumes,
    clusterId: patch.clusterId ?? base.clusterId,
    env: patch.env ?? base.env,
    health,
  };
}

/** Like `{...base, ...patch}` but a key whose value is undefined keeps the base value. */
function mergeDefined<T extends object>(base: T, patch: Partial<T> | undefined): T {
  const merged = { ...base };
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  return merged;
}
