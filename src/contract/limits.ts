/** The limits record on the wire: its keys, and how they map to and from the domain's Limits. */
import type { Limits } from '../domain/limits.js';
import type { WireLimits } from './wire.js';

/** A range of the domain's Limits (every key but the CUDA version list). */
export type LimitRange = Exclude<keyof Limits, 'cudaVersions'>;
type Bound = 'min' | 'max' | 'free';

/** Each wire field of the limits record and where it lives in the domain's Limits. */
export const WIRE_LIMIT_FIELDS: Record<Exclude<keyof WireLimits, 'cudaVersionList'>, [LimitRange, Bound]> = {
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

/** The wire keys of one range: its minimum, maximum and, where the wire has one, default. */
export function wireLimitKeys(range: LimitRange): Partial<Record<Bound, keyof WireLimits>> {
  const keys: Partial<Record<Bound, keyof WireLimits>> = {};
  for (const [wireKey, [domainKey, bound]] of Object.entries(WIRE_LIMIT_FIELDS)) {
    if (domainKey === range) keys[bound] = wireKey as keyof WireLimits;
  }
  return keys;
}
