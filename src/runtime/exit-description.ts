/**
 * How a worker's exit reads in its state message, the same for every runtime: `ran out of memory: limit 256 MiB
 * (exit code 137)` when the OOM killer ended it, else `exited with code 1`.
 */
import type { RuntimeWorker } from './types.js';

const MIB = 1024 * 1024;

export function exitDescription(
  worker: Pick<RuntimeWorker, 'exitCode' | 'exitReason' | 'memoryLimitBytes'>,
): string {
  const code = worker.exitCode ?? 'unknown';
  if (worker.exitReason !== 'out-of-memory') return `exited with code ${code}`;
  const limit =
    worker.memoryLimitBytes === undefined ? 'no limit known' : `limit ${mebibytes(worker.memoryLimitBytes)}`;
  return `ran out of memory: ${limit} (exit code ${code})`;
}

/** 268435456 -> "256 MiB", 8 GiB -> "8192 MiB": one unit, the one memory limits are set in. */
export function mebibytes(bytes: number): string {
  const mib = bytes / MIB;
  return `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB`;
}
