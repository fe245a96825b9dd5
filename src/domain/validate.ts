/**
 * Validation of a complete spec against the server's limits and what exists for the owner (products, credentials,
 * network storages): every problem found, each with a stable reason, in the domain's words. Pure.
 */
import type { EndpointSpec } from './endpoint.js';
import { envBoundProblem, resolvedEnvSize } from './env-bounds.js';
import { imageNameProblem } from './image-name.js';
import { jobsPathProblem, MAX_JOBS_PATH_LENGTH } from './jobs-path.js';
import { inRange, type Limits, type Range } from './limits.js';
import { MODEL_LIMITS, modelIssues, modelNameProblem } from './model-refs.js';
import { mountPathProblem, normalMountPath } from './mount-path.js';
import { openaiModelProblem } from './openai-model.js';
import { secretReferences } from './secret-refs.js';

/** Why a field was rejected; each is a stable reason in the API's error catalogue. */
export type ValidationReason =
  | 'INVALID_FIELD'
  | 'OUT_OF_RANGE'
  | 'MIN_ABOVE_MAX'
  | 'RESERVED_PORT'
  | 'UNKNOWN_PRODUCT'
  | 'UNKNOWN_CREDENTIALS'
  | 'UNKNOWN_STORAGE'
  | 'CLUSTER_MISMATCH'
  | 'STORAGE_NOT_ALLOWED'
  | 'UNKNOWN_SECRET'
  | 'QUEUE_UNREACHABLE';

export interface ValidationIssue {
  /** Path in the domain model, e.g. `workers.minWorkers`; the contract maps it to the wire name. */
  field: string;
  reason: ValidationReason;
  /**
   * In the domain's words: a field whose domain name differs from the one clients know is named by its path in
   * backticks (`workers.minWorkers`), which the contract writes as clients know it (minNum).
   */
  message: string;
  /** Facts that help fix it, such as the allowed range. */
  details?: Record<string, unknown>;
}

/** What exists on this server and for this owner, looked up before validation. */
export interface ValidationCatalog {
  productIds: ReadonlySet<string>;
  /** Network storage id -> its cluster id. */
  networkStorages: ReadonlyMap<string, string>;
  credentialIds: ReadonlySet<string>;
  /** Network storages that exist but are not shared with this owner. */
  forbiddenStorages?: ReadonlySet<string>;
  /** The owner's secret names, which env values may reference; absent: references are not checked. */
  secretNames?: ReadonlySet<string>;
  /**
   * The UTF-8 size of each secret the env references, for the bound on the resolved env (env-bounds.ts); a secret
   * not in it counts as empty here (each worker start checks the bound again with the values it resolves).
   */
  secretBytes?: ReadonlyMap<string, number>;
  /** Why this server's runtime has no idle tiers (kubernetes: no freezer a pod can use); absent: it has them. */
  idleTiersOff?: string;
  /** Why queue endpoints cannot work on this server (its workers could not reach Corral); absent: they can. */
  queueOff?: string;
}

/** The seconds a worker may stay in an idle tier (keepFrozen, keepSuspended): up to a week. */
export const IDLE_TIER_SECONDS: Range = { min: 0, max: 604_800 };

export const MAX_NAME_LENGTH = 220;
export const MAX_CLUSTER_ID_LENGTH = 255;
export const MAX_APP_NAME_LENGTH = 63;
export const RESERVED_PORTS: readonly number[] = [2222, 2223, 2224];

/**
 * How large a spec may be, so that one owner cannot make every list, event and reconcile pass carry megabytes
 * (the body limit of create and update bounds the whole; these name the field at fault).
 */
export const SPEC_SIZE_LIMITS = {
  envs: 100,
  envKeyLength: 128,
  envValueLength: 16_384,
  commandLength: 4_096,
  imageLength: 1_024,
  volumeMounts: 16,
  mountPathLength: 1_024,
  products: 16,
  healthPathLength: 1_024,
} as const;
const RESERVED_ENV_KEYS = new Set(['CORRAL_ENDPOINT_ID', 'CORRAL_WORKER_ID']);
export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const APP_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

export function isValidAppName(appName: string): boolean {
  return appName.length <= MAX_APP_NAME_LENGTH && APP_NAME.test(appName);
}

/** Checks a complete spec against the server's limits and catalogue; returns every problem found. */
export function validateSpec(
  spec: EndpointSpec,
  limits: Limits,
  catalog: ValidationCatalog,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const add = (issue: ValidationIssue) => issues.push(issue);
  const range = (field: string, value: number, allowed: Range, what = `\`${field}\``) => {
    if (!inRange(value, allowed)) {
      add({
        field,
        reason: 'OUT_OF_RANGE',
        message: `${what} must be an integer from ${allowed.min} to ${allowed.max}, got ${value}`,
        details: { min: allowed.min, max: allowed.max, value },
      });
    }
  };

  if (spec.name.length > MAX_NAME_LENGTH) {
    add({
      field: 'name',
      reason: 'INVALID_FIELD',
      message: `name is longer than ${MAX_NAME_LENGTH} characters`,
    });
  }
  if (!isValidAppName(spec.appName)) {
    add({
      field: 'appName',
      reason: 'INVALID_FIELD',
      message: `appName must be a lowercase DNS label (a-z, 0-9, '-', at most ${MAX_APP_NAME_LENGTH} characters, no leading or trailing '-')`,
    });
  }
  if (spec.clusterId.length > MAX_CLUSTER_ID_LENGTH) {
    add({
      field: 'clusterId',
      reason: 'INVALID_FIELD',
      message: `\`clusterId\` is longer than ${MAX_CLUSTER_ID_LENGTH} characters`,
    });
  }

  const tooLarge = validateSizes(spec, add);
  validateWorkers(spec, limits, range, add);
  validateIdleTiers(spec, catalog, add);
  if (spec.type === 'queue' && catalog.queueOff !== undefined) {
    add({
      field: 'type',
      reason: 'QUEUE_UNREACHABLE',
      message: `queue endpoints cannot run here: ${catalog.queueOff}`,
    });
  }
  validateScaling(spec, limits, range);
  validatePort(spec.port, add);
  validateImage(spec, catalog, add);
  range('rootfsSizeGB', spec.rootfsSizeGB, limits.rootfsSizeGB);
  validateProducts(spec, catalog, add);
  validateVolumes(spec, limits, catalog, range, add);
  // 20,000 environment variables are refused by their count, not each by name as well.
  if (!tooLarge) validateEnv(spec, add);
  validateSecretReferences(spec, catalog, add);
  if (!tooLarge) validateResolvedEnv(spec, catalog, add);
  validateHealth(spec, add);
  validateJobsPath(spec, add);
  validateModels(spec, catalog, add);
  const modelProblem = spec.openaiModel === undefined ? undefined : openaiModelProblem(spec.openaiModel);
  if (modelProblem !== undefined)
    add({ field: 'openaiModel', reason: 'INVALID_FIELD', message: `openaiModel ${modelProblem}` });
  return issues;
}

type Add = (issue: ValidationIssue) => void;

/** Adds an issue for each list with too many entries and each string too long; true when a list was too long. */
function validateSizes(spec: EndpointSpec, add: Add): boolean {
  const S = SPEC_SIZE_LIMITS;
  const count = (field: string, what: string, length: number, max: number) => {
    if (length <= max) return false;
    add({
      field,
      reason: 'INVALID_FIELD',
      message: `\`${field}\` has ${length} ${what}; at most ${max} are allowed`,
      details: { max, value: length },
    });
    return true;
  };
  const length = (field: string, value: string, max: number) => {
    if (value.length <= max) return;
    add({
      field,
      reason: 'INVALID_FIELD',
      message: `\`${field}\` is ${value.length} characters long; at most ${max} are allowed`,
      details: { max, value: value.length },
    });
  };
  const tooMany = [
    count('env', 'entries', spec.env.length, S.envs),
    count('volumes', 'entries', spec.volumes.length, S.volumeMounts),
    count('productIds', 'entries', spec.productIds.length, S.products),
  ].some(Boolean);
  if (tooMany) return true;
  length('image.ref', spec.image.ref, S.imageLength);
  length('image.command', spec.image.command, S.commandLength);
  length('health.path', spec.health.path, S.healthPathLength);
  spec.env.forEach(({ key, value }, index) => {
    length(`env.${index}.key`, key, S.envKeyLength);
    length(`env.${index}.value`, value, S.envValueLength);
  });
  spec.volumes.forEach((volume, index) => {
    length(`volumes.${index}.mountPath`, volume.mountPath, S.mountPathLength);
  });
  return false;
}
/** Adds OUT_OF_RANGE unless the value is in range; the message names the field, or `what` where given. */
type RangeCheck = (field: string, value: number, allowed: Range, what?: string) => void;

function validateWorkers(spec: EndpointSpec, limits: Limits, range: RangeCheck, add: Add): void {
  const w = spec.workers;
  range('workers.minWorkers', w.minWorkers, limits.workers);
  range('workers.maxWorkers', w.maxWorkers, limits.workers);
  if (w.minWorkers > w.maxWorkers) {
    add({
      field: 'workers.minWorkers',
      reason: 'MIN_ABOVE_MAX',
      message: `\`workers.minWorkers\` (${w.minWorkers}) is greater than \`workers.maxWorkers\` (${w.maxWorkers})`,
    });
  }
  range('workers.idleTimeoutSeconds', w.idleTimeoutSeconds, limits.idleTimeoutSeconds);
  range('workers.maxConcurrent', w.maxConcurrent, limits.concurrency);
  range('workers.gpusPerWorker', w.gpusPerWorker, limits.gpus);
  range('workers.requestTimeoutSeconds', w.requestTimeoutSeconds, limits.requestTimeoutSeconds);
  range('workers.keepFrozenSeconds', w.keepFrozenSeconds, IDLE_TIER_SECONDS);
  range('workers.keepSuspendedSeconds', w.keepSuspendedSeconds, IDLE_TIER_SECONDS);
  if (w.cudaVersion !== 'any' && !limits.cudaVersions.includes(w.cudaVersion)) {
    add({
      field: 'workers.cudaVersion',
      reason: 'INVALID_FIELD',
      message: `\`workers.cudaVersion\` must be "any" or one of: ${limits.cudaVersions.join(', ') || '(none on this server)'}`,
      details: { allowed: limits.cudaVersions },
    });
  }
}

/** Idle tiers on a runtime without them (kubernetes): refused, naming the runtime's reason. */
function validateIdleTiers(spec: EndpointSpec, catalog: ValidationCatalog, add: Add): void {
  const off = catalog.idleTiersOff;
  if (off === undefined) return;
  for (const field of ['keepFrozenSeconds', 'keepSuspendedSeconds'] as const) {
    if (spec.workers[field] > 0)
      add({
        field: `workers.${field}`,
        reason: 'INVALID_FIELD',
        message: `\`workers.${field}\` must be 0: ${off}`,
      });
  }
}

function validateScaling(spec: EndpointSpec, limits: Limits, range: RangeCheck): void {
  const { type, value } = spec.scaling;
  if (type === 'queue')
    range('scaling.value', value, limits.queueWaitSeconds, '`scaling.value` (queue wait seconds)');
  else range('scaling.value', value, limits.requestCount, '`scaling.value` (queued request count)');
}

function validateJobsPath(spec: EndpointSpec, add: Add): void {
  const problem = jobsPathProblem(spec.jobsPath);
  if (problem === undefined) return;
  add({
    field: 'jobsPath',
    reason: 'INVALID_FIELD',
    message: `jobsPath must be a normalised path starting with / (no . or .. segments, no encoded dots or slashes, no backslashes, no //, ? or #, at most ${MAX_JOBS_PATH_LENGTH} characters): it ${problem}, got ${JSON.stringify(spec.jobsPath.slice(0, 64))}`,
  });
}

function validatePort(port: number, add: Add): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    add({ field: 'port', reason: 'OUT_OF_RANGE', message: 'port must be an integer from 1 to 65535' });
  } else if (RESERVED_PORTS.includes(port)) {
    add({
      field: 'port',
      reason: 'RESERVED_PORT',
      message: `port ${port} is reserved (${RESERVED_PORTS.join(', ')} are internal)`,
    });
  }
}

function validateImage(spec: EndpointSpec, catalog: ValidationCatalog, add: Add): void {
  // Only a reference the registry's grammar reads is stored: any other would reach the runtime (an engine's API
  // path) as written, e.g. `../../x` or `a//b`.
  const problem = imageNameProblem(spec.image.ref);
  if (problem !== undefined) {
    add({
      field: 'image.ref',
      reason: 'INVALID_FIELD',
      message: `\`image.ref\` must be an image reference ([registry/]repository[:tag][@digest]): ${problem}`,
      details: { image: spec.image.ref },
    });
  }
  if (spec.image.authId !== '' && !catalog.credentialIds.has(spec.image.authId)) {
    add({
      field: 'image.authId',
      reason: 'UNKNOWN_CREDENTIALS',
      message: `no registry credentials with id "${spec.image.authId}"`,
    });
  }
}

function validateProducts(spec: EndpointSpec, catalog: ValidationCatalog, add: Add): void {
  spec.productIds.forEach((id, index) => {
    if (!catalog.productIds.has(id)) {
      add({
        field: `productIds.${index}`,
        reason: 'UNKNOWN_PRODUCT',
        message: `unknown product "${id}"; GET products lists this server's products`,
        details: { allowed: [...catalog.productIds] },
      });
    }
  });
}

function validateVolumes(
  spec: EndpointSpec,
  limits: Limits,
  catalog: ValidationCatalog,
  range: RangeCheck,
  add: Add,
): void {
  const mounted: { path: string; index: number }[] = [];
  spec.volumes.forEach((volume, index) => {
    const field = `volumes.${index}`;
    const problem = mountPathProblem(volume.mountPath, mounted);
    if (problem) add({ field: `${field}.mountPath`, reason: 'INVALID_FIELD', message: problem });
    else mounted.push({ path: normalMountPath(volume.mountPath), index });
    if (volume.type === 'local') {
      range(`${field}.sizeGB`, volume.sizeGB, limits.localVolumeSizeGB, 'local volume size');
      return;
    }
    const cluster = catalog.networkStorages.get(volume.storageId);
    if (cluster === undefined) {
      add({
        field: `${field}.storageId`,
        reason: 'UNKNOWN_STORAGE',
        message: `unknown network storage "${volume.storageId}"`,
      });
    } else if (catalog.forbiddenStorages?.has(volume.storageId)) {
      add({
        field: `${field}.storageId`,
        reason: 'STORAGE_NOT_ALLOWED',
        message: `network storage "${volume.storageId}" is not shared with you; the server's operator decides who may mount it`,
        details: { storage: volume.storageId },
      });
    } else if (cluster !== spec.clusterId) {
      add({
        field: 'clusterId',
        reason: 'CLUSTER_MISMATCH',
        message: `network storage "${volume.storageId}" is in cluster "${cluster}"; \`clusterId\` must equal it`,
        details: { expected: cluster },
      });
    }
  });
}

/** Each model a hub repository and revision that can be a directory, its token a secret the owner has. */
function validateModels(spec: EndpointSpec, catalog: ValidationCatalog, add: Add): void {
  const L = MODEL_LIMITS;
  if (spec.models.length > L.models) {
    add({
      field: 'models',
      reason: 'INVALID_FIELD',
      message: `\`models\` has ${spec.models.length} entries; at most ${L.models} are allowed`,
      details: { max: L.models, value: spec.models.length },
    });
    return;
  }
  const seen = new Set<string>();
  spec.models.forEach((model, index) => {
    for (const issue of modelIssues(model, `models.${index}`, catalog.secretNames)) add(issue);
    if (modelNameProblem(model.name) === undefined && seen.has(model.name))
      add({
        field: `models.${index}.name`,
        reason: 'INVALID_FIELD',
        message: `model ${model.name} is named twice`,
      });
    seen.add(model.name);
  });
}

function validateEnv(spec: EndpointSpec, add: Add): void {
  const seen = new Set<string>();
  spec.env.forEach(({ key, value }, index) => {
    const field = `env.${index}.key`;
    if (!ENV_KEY.test(key)) {
      add({ field, reason: 'INVALID_FIELD', message: `"${key}" is not a valid environment variable name` });
    } else if (key === 'PORT' && value !== String(spec.port)) {
      add({
        field,
        reason: 'INVALID_FIELD',
        message: `PORT is set by Corral to the endpoint's port (${spec.port})`,
      });
    } else if (RESERVED_ENV_KEYS.has(key)) {
      add({ field, reason: 'INVALID_FIELD', message: `${key} is set by Corral and cannot be overridden` });
    } else if (seen.has(key)) {
      add({ field, reason: 'INVALID_FIELD', message: `environment variable ${key} is set twice` });
    }
    seen.add(key);
  });
}

/** `{{ CORRAL_SECRET_name }}` must name a secret of the owner (it is resolved only when a worker starts). */
function validateSecretReferences(spec: EndpointSpec, catalog: ValidationCatalog, add: Add): void {
  const names = catalog.secretNames;
  if (names === undefined) return;
  spec.env.forEach(({ key, value }, index) => {
    for (const secret of secretReferences(value)) {
      if (names.has(secret)) continue;
      add({
        field: `env.${index}.value`,
        reason: 'UNKNOWN_SECRET',
        message: `environment variable ${key} references secret "${secret}", which you do not have (save it first)`,
        details: { env: key, secret },
      });
    }
  });
}

/** The env with the owner's secrets as they are now stays within RESOLVED_ENV_LIMITS. */
function validateResolvedEnv(spec: EndpointSpec, catalog: ValidationCatalog, add: Add): void {
  const sizes = catalog.secretBytes ?? new Map<string, number>();
  const size = resolvedEnvSize(
    spec.env.map((e) => [e.key, e.value] as const),
    (name) => sizes.get(name),
  );
  const problem = envBoundProblem(size);
  if (!problem) return;
  add({
    field: 'env',
    reason: 'INVALID_FIELD',
    message: problem.message,
    details: { limit: problem.limit, max: problem.max, value: problem.value },
  });
}

function validateHealth(spec: EndpointSpec, add: Add): void {
  const h = spec.health;
  // A queue endpoint's '' is "no HTTP probe" (health-path.ts); an http endpoint always has one.
  if (!h.path.startsWith('/') && !(spec.type === 'queue' && h.path === '')) {
    const empty = spec.type === 'queue' ? ' (or be empty: no HTTP probe)' : '';
    add({
      field: 'health.path',
      reason: 'INVALID_FIELD',
      message: `health path must start with "/"${empty}`,
    });
  }
  const timings: [keyof typeof h, number, number][] = [
    ['initialDelaySeconds', 0, 3600],
    ['periodSeconds', 1, 300],
    ['timeoutSeconds', 1, 300],
    ['successThreshold', 1, 100],
    ['failureThreshold', 1, 100],
  ];
  for (const [key, min, max] of timings) {
    const value = h[key] as number;
    if (!inRange(value, { min, max })) {
      add({
        field: `health.${key}`,
        reason: 'OUT_OF_RANGE',
        message: `\`health.${key}\` must be an integer from ${min} to ${max}`,
        details: { min, max, value },
      });
    }
  }
}
