/**
 * How a worker's exit reads in its state message, the same for every runtime: `ran out of memory: limit 256 MiB
 * (exit code 137)` only when the runtime says the OOM killer ended it (Docker's State.OOMKilled, Kubernetes'
 * `reason: OOMKilled`); `killed (signal 9, exit code 137)` for an exit code that says a signal ended it (128 + the
 * signal: a `docker kill` under a memory limit is not an OOM); else `exited with code 1`.
 */
import type { RuntimeWorker } from './types.js';

const MIB = 1024 * 1024;

export function exitDescription(
  worker: Pick<RuntimeWorker, 'exitCode' | 'exitReason' | 'memoryLimitBytes'>,
): string {
  const code = worker.exitCode ?? 'unknown';
  if (worker.exitReason === 'out-of-memory') {
    const limit =
      worker.memoryLimitBytes === undefined
        ? 'no limit known'
        : `limit ${mebibytes(worker.memoryLimitBytes)}`;
    return `ran out of memory: ${limit} (exit code ${code})`;
  }
  const signal = exitSignal(worker.exitCode);
  return signal === undefined ? `exited with code ${code}` : `killed (signal ${signal}, exit code ${code})`;
}

/**
 * The signal an exit code says ended the process: shells and container runtimes report 128 + the signal's number
 * (137: SIGKILL, 143: SIGTERM). Undefined for any other code.
 */
export function exitSignal(exitCode: number | undefined): number | undefined {
  if (exitCode === undefined || exitCode <= 128 || exitCode > 128 + 64) return undefined;
  return exitCode - 128;
}

/** 268435456 -> "256 MiB", 8 GiB -> "8192 MiB": one unit, the one memory limits are set in. */
export function mebibytes(bytes: number): string {
  const mib = bytes / MIB;
  return `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB`;
}
