/**
 * Consecutive worker failures per endpoint, with the backoff they impose: the planner starts no new worker before
 * `retryAt`, the endpoint's status turns `failed` on a pull failure or a crash loop, and the run ends when a worker
 * has become ready (after a run of flapping workers: has stayed healthy for `resetAfterMs`) or a new revision comes.
 * The arithmetic is backoff.ts's; this is the bookkeeping.
 */
import type { WorkerErrorCode } from '../../domain/worker.js';
import type { ManagedWorker } from '../workers/managed-worker.js';
import {
  type BackoffPolicy,
  type CrashRecord,
  DEFAULT_CRASH_RESET_MS,
  type Failure,
  NO_CRASHES,
  recordFailure,
  runIsOver,
} from './backoff.js';

export class CrashLedger {
  readonly #policy: BackoffPolicy;
  readonly #resetAfterMs: number;
  readonly #records = new Map<string, CrashRecord>();
  /** The revision each endpoint had when last settled: a new one starts with a clean slate. */
  readonly #revisions = new Map<string, number>();

  constructor(options: { policy: BackoffPolicy; resetAfterMs?: number | undefined }) {
    this.#policy = options.policy;
    this.#resetAfterMs = options.resetAfterMs ?? DEFAULT_CRASH_RESET_MS;
  }

  get policy(): BackoffPolicy {
    return this.#policy;
  }

  of(endpointId: string): CrashRecord {
    return this.#records.get(endpointId) ?? NO_CRASHES;
  }

  /** One more failure of the endpoint's workers. */
  record(endpointId: string, failure: Failure): CrashRecord {
    const record = recordFailure(this.of(endpointId), failure, this.#policy);
    this.#records.set(endpointId, record);
    return record;
  }

  /**
   * A started worker died: recorded as RUNTIME_ERROR; the code its record gets is CRASH_LOOP once that many died.
   * `afterReady`: it had passed its health check, so only a worker that stays healthy ends the run.
   */
  recordDeath(endpointId: string, message: string, at: number, afterReady = false): WorkerErrorCode {
    const record = this.record(endpointId, { code: 'RUNTIME_ERROR', message, at, afterReady });
    return record.failures >= this.#policy.crashLoopAfter ? 'CRASH_LOOP' : 'RUNTIME_ERROR';
  }

  /**
   * Ends the endpoint's run of failures when it is over (see runIsOver) or the endpoint has a new revision.
   * A worker turning ready does not end it by itself: the next pass's settle does, if that is enough.
   */
  settle(
    endpointId: string,
    revision: number,
    workers: readonly Pick<ManagedWorker, 'state' | 'readyAt'>[],
    now: number,
  ): void {
    const readySince = workers.flatMap((w) =>
      w.state === 'running' && w.readyAt !== null ? [w.readyAt] : [],
    );
    const seen = this.#revisions.get(endpointId);
    this.#revisions.set(endpointId, revision);
    if (seen !== undefined && seen !== revision) this.clear(endpointId);
    const record = this.#records.get(endpointId);
    if (record && runIsOver(record, readySince, now, this.#resetAfterMs)) this.clear(endpointId);
  }

  /** The endpoint's run of failures is over. */
  clear(endpointId: string): void {
    this.#records.delete(endpointId);
  }

  /** Forgets endpoints that no longer exist. */
  retain(exists: (endpointId: string) => boolean): void {
    for (const endpointId of this.#revisions.keys()) {
      if (!exists(endpointId)) {
        this.#revisions.delete(endpointId);
        this.#records.delete(endpointId);
      }
    }
  }
}
