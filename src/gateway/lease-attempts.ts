/**
 * The gateway's lease-and-retry loop, one for requests (request-path.ts) and upgrades (upgrade-path.ts): a slot from
 * the endpoint's dispatcher (taken at once, or waited for in its queue), one attempt on its worker, and another
 * worker when that one could not be reached, MAX_ATTEMPTS in all. A queued call the dispatcher diverts (another
 * replica holds the slots) goes there, or queues here again without the attempt counting. A strict call (affinity.ts)
 * waits for its one worker only: refused when that worker no longer exists, never retried on another. What an
 * attempt sends and how an end is answered are the caller's.
 */
import type { GatewayError } from '../errors/gateway-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { Affinity } from './affinity.js';
import type { EndpointDispatcher, Lease } from './dispatcher.js';
import { DIVERTED, MAX_ATTEMPTS } from './gateway-context.js';
import { AFFINE_WORKER_LEFT } from './queue-refusals.js';

/** How a call's attempts ended. */
export type AttemptsEnd =
  /** A worker got it (whatever it answered), or another replica took it. */
  | { kind: 'done' }
  /** No slot: the queue refused it (full, timed out, client gone), or a retry the endpoint cannot serve now. */
  | { kind: 'refused'; error: unknown; queuedMs: number }
  /** MAX_ATTEMPTS workers could not be reached. */
  | { kind: 'unreached'; queuedMs: number };

export interface LeaseAttempts {
  dispatcher: EndpointDispatcher;
  clock: Clock;
  /** A slot taken at once (the request path's synchronous case); none: the loop asks the dispatcher. */
  granted?: Lease;
  /** The worker the call names (affinity.ts): soft, the first wait prefers it; strict, every wait is for it alone. */
  affinity?: Affinity;
  /**
   * A strict call's worker is not routable here (before its first wait, or it left routing while the call waited):
   * AFFINITY_WORKER_GONE when it no longer exists; undefined, it may come back (frozen, starting): the call waits.
   */
  affinityGone?: () => Promise<GatewayError | undefined>;
  /** Before each wait in the queue, with the attempt it is for: the signal that takes the call out of the queue. */
  waitSignal: (attempt: number) => AbortSignal;
  /** Why a retry whose workers all failed is answered now rather than queued (the endpoint can get no new one). */
  refusalOnRetry: () => GatewayError | undefined;
  /** The queued call was diverted: true, another replica took it; false, it queues here again. */
  diverted: () => Promise<boolean>;
  /** One attempt on `lease`, which it releases: 'not-sent' when the worker could not be reached. */
  send: (lease: Lease) => Promise<'sent' | 'not-sent'>;
}

export async function attemptOnLeases(o: LeaseAttempts): Promise<AttemptsEnd> {
  let lease = o.granted;
  let tried: Set<string> | undefined;
  let queuedMs = 0;
  const strict = o.affinity !== undefined && o.affinity.mode !== 'soft';
  // A strict call's whole wait, however often it queues again, is bounded by the one queue timeout.
  let since: number | undefined;
  let checkGone = strict && !lease;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; ) {
    if (!lease) {
      const refused = tried && o.refusalOnRetry();
      if (refused) return { kind: 'refused', error: refused, queuedMs: 0 };
      const gone = checkGone ? await o.affinityGone?.() : undefined;
      if (gone)
        return { kind: 'refused', error: gone, queuedMs: since === undefined ? 0 : o.clock() - since };
      checkGone = false;
      const signal = o.waitSignal(attempt);
      const waitFrom = o.clock();
      if (strict) since ??= waitFrom;
      try {
        lease = await o.dispatcher.acquire({
          signal,
          exclude: tried,
          ...(o.affinity ? { affinity: o.affinity } : {}),
          ...(since === undefined ? {} : { since }),
        });
      } catch (error) {
        if (error === AFFINE_WORKER_LEFT) {
          checkGone = true;
          continue;
        }
        if (error !== DIVERTED) return { kind: 'refused', error, queuedMs: o.clock() - (since ?? waitFrom) };
        // Diverted: forwarded to the replica holding the slots, or back in the queue (not an attempt).
        if (await o.diverted()) return { kind: 'done' };
        continue;
      }
    }
    queuedMs = lease.queuedMs;
    if ((await o.send(lease)) === 'sent') return { kind: 'done' };
    // Its one worker could not be reached (and is in quarantine now): no other may take a strict call.
    if (strict) return { kind: 'unreached', queuedMs };
    attempt += 1;
    tried ??= new Set();
    tried.add(lease.workerId);
    lease = attempt <= MAX_ATTEMPTS ? o.dispatcher.tryAcquire(tried) : undefined;
  }
  return { kind: 'unreached', queuedMs };
}
