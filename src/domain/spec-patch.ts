/**
 * What a create or update asks to change (`SpecPatch`) and how it becomes a spec: the defaults a create starts
 * from, clamped into the server's ranges, and the one-level-deep merge of an update.
 */
import {
  DEFAULT_HEALTH,
  DEFAULT_HEALTH_PATH,
  DEFAULT_JOBS_PATH,
  type EndpointSpec,
  type EndpointType,
  type EnvVar,
  type HealthCheck,
  type ImageSpec,
  type ScalingPolicy,
  type ScalingPolicyType,
  type VolumeMount,
  type WorkerSettings,
} from './endpoint.js';
import { defaultHealthPath, healthPathForType } from './health-path.js';
import type { Limits, Range } from './limits.js';
import type { ModelRef } from './models.js';

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
  /** `pullPolicy: ''` goes back to the installation's policy. */
  image?: Partial<Omit<ImageSpec, 'pullPolicy'>> & { pullPolicy?: ImageSpec['pullPolicy'] | '' };
  productIds?: string[];
  rootfsSizeGB?: number;
  volumes?: VolumeMount[];
  clusterId?: string;
  env?: EnvVar[];
  health?: Partial<HealthCheck> | 'reset';
  public?: boolean;
  type?: EndpointType;
  jobsPath?: string;
  models?: ModelRef[];
  /** `''` removes the endpoint's model name. */
  openaiModel?: string;
}

/** The fixed defaults of a create, before they are clamped into the server's configured ranges. */
export const DEFAULT_WORKERS: WorkerSettings = {
  minWorkers: 0,
  maxWorkers: 1,
  idleTimeoutSeconds: 60,
  maxConcurrent: 1,
  gpusPerWorker: 1,
  cudaVersion: 'any',
  requestTimeoutSeconds: 300,
  keepFrozenSeconds: 0,
  keepSuspendedSeconds: 0,
};

export const DEFAULT_SCALING: ScalingPolicy = { type: 'queue', value: 4 };

/** The nearest value of the range: a fixed default the operator's range leaves out becomes the nearest bound. */
export function clampInto(value: number, range: Range): number {
  return Math.min(Math.max(value, range.min), range.max);
}

/**
 * The worker settings a create starts from: each fixed default clamped into its configured range, so that a create
 * that leaves a field out is never refused for a value the client did not send (with `minFreeTimeout: 120` in the
 * config file, an omitted freeTimeout is 120, not 60).
 */
export function defaultWorkers(limits: Limits): WorkerSettings {
  const d = DEFAULT_WORKERS;
  return {
    minWorkers: clampInto(d.minWorkers, limits.workers),
    maxWorkers: clampInto(d.maxWorkers, limits.workers),
    idleTimeoutSeconds: clampInto(d.idleTimeoutSeconds, limits.idleTimeoutSeconds),
    maxConcurrent: clampInto(d.maxConcurrent, limits.concurrency),
    gpusPerWorker: clampInto(d.gpusPerWorker, limits.gpus),
    cudaVersion: d.cudaVersion,
    requestTimeoutSeconds: clampInto(d.requestTimeoutSeconds, limits.requestTimeoutSeconds),
    keepFrozenSeconds: d.keepFrozenSeconds,
    keepSuspendedSeconds: d.keepSuspendedSeconds,
  };
}

/** The policy value a create uses when it names none: the default, clamped into the range of the policy's type. */
export function defaultScaling(type: ScalingPolicyType, limits: Limits): ScalingPolicy {
  const range = type === 'queue' ? limits.queueWaitSeconds : limits.requestCount;
  return { type, value: clampInto(DEFAULT_SCALING.value, range) };
}

/**
 * The spec a create starts from before the request's fields are applied. `policyType` is the type the request
 * names, since the default value must lie in that type's range.
 */
export function defaultSpec(
  id: string,
  limits: Limits,
  policyType: ScalingPolicyType = DEFAULT_SCALING.type,
): EndpointSpec {
  return {
    name: '',
    appName: id,
    workers: defaultWorkers(limits),
    port: 0,
    scaling: defaultScaling(policyType, limits),
    image: { ref: '', authId: '', command: '' },
    productIds: [],
    rootfsSizeGB: limits.rootfsSizeGB.free,
    volumes: [],
    clusterId: '',
    env: [],
    health: { path: DEFAULT_HEALTH_PATH, ...DEFAULT_HEALTH },
    public: false,
    type: 'http',
    jobsPath: DEFAULT_JOBS_PATH,
    models: [],
  };
}

/** The spec a create makes: the defaults for the request's policy type, with the request's fields on top. */
export function createSpec(id: string, limits: Limits, patch: SpecPatch): EndpointSpec {
  return applyPatch(defaultSpec(id, limits, patch.scaling?.type), patch);
}

export function applyPatch(base: EndpointSpec, patch: SpecPatch): EndpointSpec {
  const type = patch.type ?? base.type;
  const health =
    patch.health === 'reset'
      ? { path: defaultHealthPath(type), ...DEFAULT_HEALTH }
      : mergeDefined(base.health, patch.health);
  // A queue endpoint has no health path unless one is named (its workers' polls are their health).
  const named = patch.health !== 'reset' && patch.health?.path !== undefined;
  health.path = healthPathForType(health.path, base.type, type, named);
  if (named) health.pathNamed = true;
  const spec: EndpointSpec = {
    name: patch.name ?? base.name,
    appName: patch.appName ?? base.appName,
    workers: mergeDefined(base.workers, patch.workers),
    port: patch.port ?? base.port,
    scaling: mergeDefined(base.scaling, patch.scaling),
    image: mergeImage(base.image, patch.image),
    productIds: patch.productIds ?? base.productIds,
    rootfsSizeGB: patch.rootfsSizeGB ?? base.rootfsSizeGB,
    volumes: patch.volumes ?? base.volumes,
    clusterId: patch.clusterId ?? base.clusterId,
    env: patch.env ?? base.env,
    health,
    public: patch.public ?? base.public,
    type,
    jobsPath: patch.jobsPath ?? base.jobsPath,
    models: patch.models ?? base.models,
  };
  const openaiModel = patch.openaiModel ?? base.openaiModel;
  if (openaiModel !== undefined && openaiModel !== '') spec.openaiModel = openaiModel;
  return spec;
}

/** The image merged as every object is (mergeDefined), its `pullPolicy: ''` removing the endpoint's own. */
function mergeImage(base: ImageSpec, patch: SpecPatch['image']): ImageSpec {
  const { pullPolicy, ...rest } = patch ?? {};
  const merged = mergeDefined(base, rest);
  if (pullPolicy === '') delete merged.pullPolicy;
  else if (pullPolicy !== undefined) merged.pullPolicy = pullPolicy;
  return merged;
}

/** Like `{...base, ...patch}` but a key whose value is undefined keeps the base value. */
function mergeDefined<T extends object>(base: T, patch: Partial<T> | undefined): T {
  const merged = { ...base };
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  return merged;
}
