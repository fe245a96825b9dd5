/**
 * The controller's work queue as the controller uses it: keys are endpoint ids, and WHOLE_PASS the whole pass
 * (every endpoint and the runtime's whole listing), which is the periodic resync; it runs alone, before the
 * endpoints waiting, and does their reconciles for them. A failure is
 * logged once while it repeats (a lease lost at the end of a term at info, without a stack) and its key retried
 * with backoff.
 */
import type { Timers } from '../../ports/clock.js';
import { LeaseLostError } from '../../store/cluster/leases.js';
import type { ControllerLogger } from '../controller-options.js';
import { type RetryPolicy, WorkQueue } from './work-queue.js';

/** The key of the whole pass; every other key is an endpoint id (never empty). */
export const WHOLE_PASS = '';

export interface ReconcileQueueOptions {
  timers: Timers;
  /** The whole pass's interval (the resync). */
  intervalMs: number;
  concurrency: number;
  retry: RetryPolicy;
  logger: ControllerLogger;
  whole: () => Promise<void>;
  one: (endpointId: string) => Promise<void>;
}

export function reconcileQueue(o: ReconcileQueueOptions): WorkQueue<string> {
  return new WorkQueue<string>({
    timers: o.timers,
    concurrency: o.concurrency,
    retry: o.retry,
    supersedes: (key) => key === WHOLE_PASS,
    resync: { everyMs: o.intervalMs, keys: () => [WHOLE_PASS] },
    process: (key) => (key === WHOLE_PASS ? o.whole() : o.one(key)),
    onError: (key, error, { repeated }) => {
      if (repeated) return;
      const fields = key === WHOLE_PASS ? {} : { endpointId: key };
      // Expected once the term is over (a graceful step-down, a takeover): said at info, without a stack.
      if (error instanceof LeaseLostError) {
        const { name, token } = error.claim;
        o.logger.info(
          { ...fields, lease: name, token },
          'reconcile pass stopped: the lease is no longer held',
        );
      } else o.logger.error({ ...fields, err: error }, 'reconcile failed; said once while it repeats');
    },
  });
}
