/**
 * Per-owner quotas: what an owner may declare (endpoints, GPUs held by minNum and reachable by maxNum, workers),
 * keep (secrets, registry credentials, invoke keys) and leave to the jobs store (jobs not finished, bytes of jobs
 * kept), the defaults for a GPU inventory, which of them apply to an
 * owner and why (the operator is not held to the default GPU quotas), and the arithmetic that admits or refuses a
 * change. Pure: the use comes from the store, the quota from the configuration.
 */
import type { WorkerSettings } from './endpoint.js';

/** Each quota an owner has. */
export const QUOTA_NAMES = [
  'endpoints',
  'minGpus',
  'maxGpus',
  'workers',
  'credentials',
  'secrets',
  'invokeKeys',
  'queuedJobs',
  'jobBytes',
] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];

/** The quotas an endpoint counts toward (the counted things below are counted on their own). */
export const ENDPOINT_QUOTA_NAMES = ['endpoints', 'minGpus', 'maxGpus', 'workers'] as const;
export type EndpointQuotaName = (typeof ENDPOINT_QUOTA_NAMES)[number];

/** The quotas on how many of a thing an owner keeps: each save of a new one counts one. */
export const COUNT_QUOTA_NAMES = ['credentials', 'secrets', 'invokeKeys'] as const;
export type CountQuotaName = (typeof COUNT_QUOTA_NAMES)[number];

/** The quotas on an owner's jobs, checked by each submission in the write that queues it. */
export const JOB_QUOTA_NAMES = ['queuedJobs', 'jobBytes'] as const;
export type JobQuotaName = (typeof JOB_QUOTA_NAMES)[number];
/** What an owner's jobs take now: jobs not finished, and the bytes of every job the store keeps. */
export type JobUse = Record<JobQuotaName, number>;

/** The quotas the operator is not held to by default. */
const GPU_QUOTA_NAMES: readonly QuotaName[] = ['minGpus', 'maxGpus'];

/** An owner's limits; `UNLIMITED` (Infinity) where there is none. */
export type Quota = Record<QuotaName, number>;
/** What an owner's endpoints declare, summed over its live endpoints (stopped ones included). */
export type EndpointUse = Record<EndpointQuotaName, number>;

export const UNLIMITED = Number.POSITIVE_INFINITY;
export const NO_ENDPOINT_USE: EndpointUse = { endpoints: 0, minGpus: 0, maxGpus: 0, workers: 0 };

/** How people read each quota (messages and docs). */
export const QUOTA_DESCRIPTIONS: Record<QuotaName, string> = {
  endpoints: 'endpoints',
  minGpus: 'GPUs held by minNum (the sum of minNum x gpuNum over your endpoints)',
  maxGpus: 'GPUs reachable by maxNum (the sum of maxNum x gpuNum over your endpoints)',
  workers: 'workers (the sum of maxNum over your endpoints)',
  credentials: 'registry credentials',
  secrets: 'secrets',
  invokeKeys: 'active invoke keys (over all your endpoints)',
  queuedJobs: 'jobs not finished (IN_QUEUE and IN_PROGRESS, over all your endpoints)',
  jobBytes:
    'bytes of your kept jobs (inputs and outputs of jobs queued, running and finished within their retention)',
};

/** A change that would take an owner past a quota: which, its limit, the use now and after the change. */
export interface QuotaBreach {
  quota: QuotaName;
  limit: number;
  used: number;
  usedAfter: number;
}

/** What one endpoint counts toward its owner's quotas. */
export function endpointUse(
  workers: Pick<WorkerSettings, 'minWorkers' | 'maxWorkers' | 'gpusPerWorker'>,
): EndpointUse {
  return {
    endpoints: 1,
    minGpus: workers.minWorkers * workers.gpusPerWorker,
    maxGpus: workers.maxWorkers * workers.gpusPerWorker,
    workers: workers.maxWorkers,
  };
}

/**
 * Whether a create (`before` undefined) or an update (`before`: the endpoint's own use, part of `current`) fits the
 * quota; the first quota it would break, or undefined. Only a change that adds to a quota's use is refused, so an
 * owner already above a quota (lowered since) can still shrink its endpoints or change what counts toward nothing.
 */
export function endpointQuotaBreach(
  quota: Quota,
  current: EndpointUse,
  before: EndpointUse | undefined,
  after: EndpointUse,
): QuotaBreach | undefined {
  for (const name of ENDPOINT_QUOTA_NAMES) {
    const usedAfter = current[name] - (before?.[name] ?? 0) + after[name];
    if (usedAfter > quota[name] && usedAfter > current[name]) {
      return { quota: name, limit: quota[name], used: current[name], usedAfter };
    }
  }
  return undefined;
}

/** Whether one more of the counted thing `name` (the owner keeps `saved` now) fits the quota. */
export function countQuotaBreach(quota: Quota, name: CountQuotaName, saved: number): QuotaBreach | undefined {
  return saved + 1 > quota[name]
    ? { quota: name, limit: quota[name], used: saved, usedAfter: saved + 1 }
    : undefined;
}

/**
 * Whether one more job of `inputBytes` fits the job quotas, its owner's jobs taking `use` now; the first quota it
 * would break, or undefined.
 */
export function jobQuotaBreach(quota: Quota, use: JobUse, inputBytes: number): QuotaBreach | undefined {
  const after: JobUse = { queuedJobs: use.queuedJobs + 1, jobBytes: use.jobBytes + inputBytes };
  for (const name of JOB_QUOTA_NAMES) {
    if (after[name] > quota[name])
      return { quota: name, limit: quota[name], used: use[name], usedAfter: after[name] };
  }
  return undefined;
}

/** A refusal's sentence: which quota, what the change would make it, its limit, the use now. */
export function describeBreach(breach: QuotaBreach): string {
  const { quota, limit, used, usedAfter } = breach;
  return `quota exceeded: ${QUOTA_DESCRIPTIONS[quota]} would be ${usedAfter}, above your quota of ${limit} (in use now: ${used}); GET quota shows your quotas`;
}

export const DEFAULT_ENDPOINT_QUOTA = 100;
export const DEFAULT_WORKER_QUOTA = 100;
export const DEFAULT_CREDENTIAL_QUOTA = 50;
/** A secret of 32 Ki ASCII characters is 43,737 bytes sealed: 100 keep an owner's secrets near 4.4 MB of disk. */
export const DEFAULT_SECRET_QUOTA = 100;
/** Per owner, not per endpoint: two active keys for each of the 100 endpoints the default allows (room to rotate). */
export const DEFAULT_INVOKE_KEY_QUOTA = 200;
/** Jobs an owner may have queued or running at once: a large batch, well short of flooding the queue table. */
export const DEFAULT_QUEUED_JOB_QUOTA = 10_000;
/**
 * Bytes an owner's kept jobs may take in the store (inputs and outputs, until retention deletes them): 1 GiB, about
 * 100 of the largest `run` inputs (10 MB) or 50 of the largest results (20 MB).
 */
export const DEFAULT_JOB_BYTES_QUOTA = 1024 * 1024 * 1024;

/**
 * The defaults for a server with `gpuCount` GPUs. GPUs held by minNum are never placed elsewhere, so one owner may
 * hold at most half of them (at least 1): the rest always remain for the others. maxNum only declares how far an
 * endpoint may burst, and a worker above minNum goes when idle: four times the inventory lets an owner spread
 * bursts over many scale-to-zero endpoints, while fair placement decides who gets a GPU when they are short.
 * Without GPUs no worker can be placed and the GPU quotas do not apply.
 */
export function defaultQuota(gpuCount: number): Quota {
  return {
    endpoints: DEFAULT_ENDPOINT_QUOTA,
    minGpus: gpuCount > 0 ? Math.max(1, Math.floor(gpuCount / 2)) : UNLIMITED,
    maxGpus: gpuCount > 0 ? 4 * gpuCount : UNLIMITED,
    workers: DEFAULT_WORKER_QUOTA,
    credentials: DEFAULT_CREDENTIAL_QUOTA,
    secrets: DEFAULT_SECRET_QUOTA,
    invokeKeys: DEFAULT_INVOKE_KEY_QUOTA,
    queuedJobs: DEFAULT_QUEUED_JOB_QUOTA,
    jobBytes: DEFAULT_JOB_BYTES_QUOTA,
  };
}

/** The configured quotas: values over the defaults, and per owner over those. */
export interface QuotaSettings {
  defaults: Partial<Quota>;
  owners: Readonly<Record<string, Partial<Quota>>>;
}

/**
 * Where an owner's quota comes from: `config` (the config file's quotas, for this owner or for everyone),
 * `operator` (an owner holding an admin key: the default GPU quotas do not apply), `default` (the inventory's).
 */
export type QuotaSource = 'config' | 'operator' | 'default';

/** One owner's quota, where each value comes from, and in one sentence why it applies. */
export interface OwnerQuota {
  quota: Quota;
  sources: Record<QuotaName, QuotaSource>;
  /** Which applies to the owner as a whole: its own config entry, else the operator's, else the config's or the defaults. */
  source: QuotaSource;
  reason: string;
}

/**
 * One owner's quota: the inventory's defaults, then the configured defaults, then the owner's own. The operator
 * (`operator`: the owner holds an admin key, as the key printed at the first start is) is held to no GPU quota but
 * one configured for it by owner id: the defaults keep tenants from starving each other, not the operator from
 * using its own machine. Every other default still applies to it.
 */
export function quotaFor(
  ownerId: string,
  gpuCount: number,
  settings: QuotaSettings,
  operator = false,
): OwnerQuota {
  const own = Object.hasOwn(settings.owners, ownerId) ? settings.owners[ownerId] : undefined;
  const quota = { ...defaultQuota(gpuCount) };
  const sources = {} as Record<QuotaName, QuotaSource>;
  for (const name of QUOTA_NAMES) {
    const configured =
      own?.[name] ?? (operator && GPU_QUOTA_NAMES.includes(name) ? undefined : settings.defaults[name]);
    if (configured !== undefined) {
      quota[name] = configured;
      sources[name] = 'config';
    } else if (operator && GPU_QUOTA_NAMES.includes(name)) {
      quota[name] = UNLIMITED;
      sources[name] = 'operator';
    } else {
      sources[name] = 'default';
    }
  }
  return { quota, sources, ...why(ownerId, gpuCount, settings, own !== undefined, operator) };
}

function why(
  ownerId: string,
  gpuCount: number,
  settings: QuotaSettings,
  ownEntry: boolean,
  operator: boolean,
): { source: QuotaSource; reason: string } {
  const rest = operator
    ? "the rest are the operator's (no GPU quota) or the defaults"
    : 'the rest are the defaults';
  if (ownEntry) {
    return {
      source: 'config',
      reason: `the config file sets quotas for owner "${ownerId}" (quotas.owners); ${rest}`,
    };
  }
  if (operator) {
    return {
      source: 'operator',
      reason: 'this owner holds an admin key: the default GPU quotas do not apply to the operator',
    };
  }
  if (Object.keys(settings.defaults).length > 0) {
    return {
      source: 'config',
      reason: "the config file's quotas apply to every owner; the rest are the defaults",
    };
  }
  return { source: 'default', reason: `the defaults for a server with ${gpuCount} GPU(s)` };
}
