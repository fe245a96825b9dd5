/**
 * Per-owner quotas: what an owner may declare (endpoints, GPUs held by minNum and reachable by maxNum, workers,
 * registry credentials), the defaults for a GPU inventory, and the arithmetic that admits or refuses a change.
 * Pure: the use comes from the store, the quota from the configuration.
 */
import type { WorkerSettings } from './endpoint.js';

/** Each quota an owner has. */
export const QUOTA_NAMES = ['endpoints', 'minGpus', 'maxGpus', 'workers', 'credentials'] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];

/** The quotas an endpoint counts toward (credentials are counted on their own). */
export const ENDPOINT_QUOTA_NAMES = ['endpoints', 'minGpus', 'maxGpus', 'workers'] as const;
export type EndpointQuotaName = (typeof ENDPOINT_QUOTA_NAMES)[number];

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

/** Whether one more set of registry credentials fits the quota. */
export function credentialQuotaBreach(quota: Quota, saved: number): QuotaBreach | undefined {
  return saved + 1 > quota.credentials
    ? { quota: 'credentials', limit: quota.credentials, used: saved, usedAfter: saved + 1 }
    : undefined;
}

export const DEFAULT_ENDPOINT_QUOTA = 100;
export const DEFAULT_WORKER_QUOTA = 100;
export const DEFAULT_CREDENTIAL_QUOTA = 50;

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
  };
}

/** The configured quotas: values over the defaults, and per owner over those. */
export interface QuotaSettings {
  defaults: Partial<Quota>;
  owners: Readonly<Record<string, Partial<Quota>>>;
}

/** One owner's quota: the inventory's defaults, then the configured defaults, then the owner's own. */
export function quotaFor(ownerId: string, gpuCount: number, settings: QuotaSettings): Quota {
  const own = Object.hasOwn(settings.owners, ownerId) ? settings.owners[ownerId] : undefined;
  return { ...defaultQuota(gpuCount), ...settings.defaults, ...own };
}
