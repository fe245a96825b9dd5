/**
 * Crash-loop backoff, pure: the delay before the next worker after consecutive failures (doubling up to a cap),
 * and when the endpoint counts as failed. crash-ledger.ts keeps the records per endpoint.
 */
import type { WorkerErrorCode } from '../domain/worker.js';

/** Consecutive worker failures of one endpoint; a worker becoming ready resets it. */
export interface CrashRecord {
  failures: number;
  lastCode: WorkerErrorCode | '';
  lastMessage: string;
  /** No new worker is started before this time. */
  retryAt: number;
}

export const NO_CRASHES: CrashRecord = { failures: 0, lastCode: '', lastMessage: '', retryAt: 0 };

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
  /** Failures in a row after which the endpoint is reported failed (it keeps retrying at the cap). */
  crashLoopAfter: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1000, capMs: 60_000, crashLoopAfter: 5 };

export function recordFailure(
  record: CrashRecord,
  failure: { code: WorkerErrorCode; message: string; at: number },
  policy: BackoffPolicy,
): CrashRecord {
  const failures = record.failures + 1;
  const delay = Math.min(policy.capMs, policy.baseMs * 2 ** (failures - 1));
  return { failures, lastCode: failure.code, lastMessage: failure.message, retryAt: failure.at + delay };
}

/** Whether the endpoint should show `failed`: a pull that failed, or a crash loop. */
export function endpointFailure(
  record: CrashRecord,
  policy: BackoffPolicy,
): { code: WorkerErrorCode; message: string } | undefined {
  if (record.failures === 0) return undefined;
  if (record.lastCode === 'IMAGE_PULL_FAILED')
    return { code: 'IMAGE_PULL_FAILED', message: record.lastMessage };
  if (record.failures >= policy.crashLoopAfter) {
    return {
      code: 'CRASH_LOOP',
      message: `${record.failures} workers failed in a row; last: ${record.lastMessage}`,
    };
  }
  return undefined;
}
