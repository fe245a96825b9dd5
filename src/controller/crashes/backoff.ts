/**
 * Crash-loop backoff, pure: the delay before the next worker after consecutive failures (doubling up to a cap),
 * and when the endpoint counts as failed. crash-ledger.ts keeps the records per endpoint.
 */
import type { WorkerErrorCode } from '../../domain/worker.js';

/**
 * Consecutive worker failures of one endpoint. A worker becoming ready ends the run, unless a worker that had been
 * ready died in it (`afterReady`, a flapping worker): then only one that stays healthy for a while does.
 */
export interface CrashRecord {
  failures: number;
  /** When the run's first failure happened (the log says "crashed 5 times in 2 min"). */
  firstAt: number;
  lastCode: WorkerErrorCode | '';
  lastMessage: string;
  /** When the last failure happened. */
  lastAt: number;
  /** No new worker is started before this time. */
  retryAt: number;
  /** A worker that had passed its health check died in this run. */
  afterReady: boolean;
  /** How many of the last failures in a row were HEALTH_TIMEOUT (0 when the last was another failure). */
  healthTimeouts: number;
  /** The last failure would repeat on the next worker (Failure.final): the endpoint is failed at once. */
  lastFinal?: true;
}

export const NO_CRASHES: CrashRecord = {
  failures: 0,
  firstAt: 0,
  lastCode: '',
  lastMessage: '',
  lastAt: 0,
  retryAt: 0,
  afterReady: false,
  healthTimeouts: 0,
};

/** How long a worker must run healthy to end a run of failures that flapping workers are in (the kubelet's 10 min). */
export const DEFAULT_CRASH_RESET_MS = 600_000;

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
  /** Failures in a row after which the endpoint is reported failed (it keeps retrying at the cap). */
  crashLoopAfter: number;
  /**
   * HEALTH_TIMEOUTs in a row after which the endpoint is reported failed (HEALTH_TIMEOUT), sooner than
   * crashLoopAfter: each one already took the whole startup deadline. Default DEFAULT_HEALTH_TIMEOUTS_TO_FAIL.
   */
  healthTimeoutsToFail?: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1000, capMs: 60_000, crashLoopAfter: 5 };

/**
 * Two: one worker that misses its startup deadline may have been a slow first start (weights downloading into a
 * cache the next one reads); a second in a row is the endpoint's own problem, and its requests should hear so.
 */
export const DEFAULT_HEALTH_TIMEOUTS_TO_FAIL = 2;

export interface Failure {
  code: WorkerErrorCode;
  message: string;
  at: number;
  /** The worker had passed its health check before it failed. */
  afterReady?: boolean;
  /**
   * The next worker of the same revision would fail the same way (its health path answered 404 on every probe):
   * like a failed pull, one is enough to fail the endpoint, and its requests hear why at once.
   */
  final?: boolean;
}

export function recordFailure(record: CrashRecord, failure: Failure, policy: BackoffPolicy): CrashRecord {
  const failures = record.failures + 1;
  return {
    failures,
    firstAt: record.failures === 0 ? failure.at : record.firstAt,
    lastCode: failure.code,
    lastMessage: failure.message,
    lastAt: failure.at,
    retryAt: failure.at + backoffDelay(failures, policy),
    afterReady: record.afterReady || failure.afterReady === true,
    healthTimeouts: failure.code === 'HEALTH_TIMEOUT' ? record.healthTimeouts + 1 : 0,
    ...(failure.final ? { lastFinal: true } : {}),
  };
}

/** The wait before the next worker after `failures` in a row: base, doubling, up to the cap. */
export function backoffDelay(failures: number, policy: BackoffPolicy): number {
  return Math.min(policy.capMs, policy.baseMs * 2 ** (failures - 1));
}

/**
 * Whether the run of failures is over. A ready worker ends a run of workers that never got ready (a pull, a start, a
 * health check that failed: fixed now). A run in which ready workers died ends only when a worker that became ready
 * after the last failure has run `resetAfterMs` since: a worker that dies soon after turning healthy keeps counting.
 */
export function runIsOver(
  record: CrashRecord,
  readySince: readonly number[],
  now: number,
  resetAfterMs: number,
): boolean {
  if (record.failures === 0) return false;
  const readyAfterLastFailure = readySince.filter((at) => at >= record.lastAt);
  if (!record.afterReady) return readyAfterLastFailure.length > 0;
  return readyAfterLastFailure.some((at) => now - at >= resetAfterMs);
}

/**
 * Whether the endpoint should show `failed`: a pull that failed, a failure that would repeat (Failure.final), workers that missed their startup deadline
 * `healthTimeoutsToFail` times in a row (HEALTH_TIMEOUT), or a crash loop.
 */
export function endpointFailure(
  record: CrashRecord,
  policy: BackoffPolicy,
): { code: WorkerErrorCode; message: string } | undefined {
  if (record.failures === 0) return undefined;
  if (record.lastCode === 'IMAGE_PULL_FAILED')
    return { code: 'IMAGE_PULL_FAILED', message: record.lastMessage };
  if (record.lastFinal && record.lastCode !== '')
    return { code: record.lastCode, message: record.lastMessage };
  const timeouts = record.healthTimeouts;
  if (timeouts > 0 && timeouts >= (policy.healthTimeoutsToFail ?? DEFAULT_HEALTH_TIMEOUTS_TO_FAIL)) {
    return {
      code: 'HEALTH_TIMEOUT',
      message: `${timeouts} workers in a row never passed their health check; last: ${record.lastMessage}`,
    };
  }
  if (record.failures >= policy.crashLoopAfter) {
    return {
      code: 'CRASH_LOOP',
      message: `${record.failures} workers failed in a row; last: ${record.lastMessage}`,
    };
  }
  return undefined;
}
