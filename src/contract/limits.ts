import type { Limits } from '../domain/limits.js';
import type { WireLimits } from './wire.js';

type RangeKey = Exclude<keyof Limits, 'cudaVersions'>;

/** Each wire field of the limits record and where it lives in the domain's Limits. */
export const WIRE_LIMIT_FIELDS: Record<
  Exclude<keyof WireLimits, 'cudaVersionList'>,
  [RangeKey, 'min' | 'max' | 'free']
> = {
  minRootfsSize: ['rootfsSizeGB', 'min'],
  maxRootfsSize: ['rootfsSizeGB', 'max'],
  freeRootfsSize: ['rootfsSizeGB', 'free'],
  minLocalVolumeSize: ['localVolumeSizeGB', 'min'],
  maxLocalVolumeSize: ['localVolumeSizeGB', 'max'],
  freeLocalVolumeSize: ['localVolumeSizeGB', 'free'],
  minWorkerNum: ['workers', 'min'],
  maxWorkerNum: ['workers', 'max'],
  minFreeTimeout: ['idleTimeoutSeconds', 'min'],
  maxFreeTimeout: ['idleTimeoutSeconds', 'max'],
  minConcurrencyNum: ['concurrency', 'min'],
  maxConcurrencyNum: ['concurrency', 'max'],
  minQueueWaitTime: ['queueWaitSeconds', 'min'],
  maxQueueWaitTime: ['queueWaitSeconds', 'max'],
  minRequestNum: ['requestCount', 'min'],
  maxRequestNum: ['requestCount', 'max'],
  minGPUNum: ['gpus', 'min'],
  maxGPUNum: ['gpus', 'max'],
  minRequestTimeout: ['requestTimeoutSeconds', 'min'],
  maxRequestTimeout: ['requestTimeoutSeconds', 'max'],
};

export function toWireLimits(limits: Limits): WireLimits {
  const wire: Partial<WireLimits> = {};
  for (const [wireKey, [domainKey, bound]] of Object.entries(WIRE_LIMIT_FIELDS)) {
    (wire as Record<string, number>)[wireKey] =
      (limits[domainKey] as unknown as Record<string, number>)[bound] ?? 0;
  }
  return { ...(wire as WireLimits), cudaVersionList: [...limits.cudaVersions] };
}

/** Applies wire-named overrides (as written in the config file) to the given limits. */
export function applyWireLimits(
  limits: Limits,
  overrides: Partial<Record<keyof typeof WIRE_LIMIT_FIELDS, number>>,
): Limits {
  const next = structuredClone(limits);
  for (const [wireKey, value] of Object.entries(overrides)) {
    const target = WIRE_LIMIT_FIELDS[wireKey as keyof typeof WIRE_LIMIT_FIELDS];
    if (target && value !== undefined)
      (next[target[0]] as unknown as Record<string, number>)[target[1]] = value;
  }
  return next;
}
