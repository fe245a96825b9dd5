/** Allowed ranges for endpoint settings; the server's configuration supplies them. */
export interface Range {
  min: number;
  max: number;
}

export interface Limits {
  rootfsSizeGB: Range & { free: number };
  localVolumeSizeGB: Range & { free: number };
  workers: Range;
  idleTimeoutSeconds: Range;
  concurrency: Range;
  queueWaitSeconds: Range;
  requestCount: Range;
  gpus: Range;
  requestTimeoutSeconds: Range;
  cudaVersions: string[];
}

export const DEFAULT_LIMITS: Omit<Limits, 'cudaVersions'> = {
  rootfsSizeGB: { min: 100, max: 100, free: 100 },
  localVolumeSizeGB: { min: 0, max: 100, free: 30 },
  workers: { min: 0, max: 20 },
  idleTimeoutSeconds: { min: 1, max: 3600 },
  concurrency: { min: 1, max: 256 },
  queueWaitSeconds: { min: 1, max: 300 },
  requestCount: { min: 1, max: 1000 },
  gpus: { min: 1, max: 8 },
  requestTimeoutSeconds: { min: 1, max: 3600 },
};

export function inRange(value: number, range: Range): boolean {
  return Number.isInteger(value) && value >= range.min && value <= range.max;
}
