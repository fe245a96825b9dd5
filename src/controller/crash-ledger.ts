/**
 * Consecutive worker failures per endpoint, with the backoff they impose: the planner starts no new worker before
 * `retryAt`, the endpoint's status turns `failed` on a pull failure or a crash loop, and a worker becoming ready
 * clears it. The arithmetic is backoff.ts's; this is the bookkeeping.
 */
import type { WorkerErrorCode } from '../domain/worker.js';
import { type BackoffPolicy, type CrashRecord, NO_CRASHES, recordFailure } from './backoff.js';

export class CrashLedger {
  readonly #policy: BackoffPolicy;
  readonly #records = new Map<string, CrashRecord>();

  constructor(options: { policy: BackoffPolicy }) {
    this.#policy = options.policy;
  }

  get policy(): BackoffPolicy {
    return this.#policy;
  }

  of(endpointId: string): CrashRecord {
    return this.#records.get(endpointId) ?? NO_CRASHES;
  }

  /** One more failure of the endpoint's workers. */
  record(endpointId: string, failure: { code: WorkerErrorCode; message: string; at: number }): CrashRecord {
    const record = recordFailure(this.of(endpointId), failure, this.#policy);
    this.#records.set(endpointId, record);
    return record;
  }

  /** A running worker died: recorded as RUNTIME_ERROR; the code its record gets is CRASH_LOOP once that many died. */
  recordDeath(endpointId: string, message: string, at: number): WorkerErrorCode {
    const record = this.record(endpointId, { code: 'RUNTIME_ERROR', message, at });
    return record.failures >= this.#policy.crashLoopAfter ? 'CRASH_LOOP' : 'RUNTIME_ERROR';
  }

  /** A worker became ready: the endpoint's run of failures is over. */
  clear(endpointId: string): void {
    this.#records.delete(endpointId);
  }
}
