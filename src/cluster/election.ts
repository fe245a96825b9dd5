/**
 * Leader election's decisions (pure, on an injected monotonic clock): what a replica does at each tick (take the
 * lease, renew it, or step down) and what it knows after the database answered. A leader counts its lease as valid
 * until `sentAt + ttlMs - marginMs`, where `sentAt` is when it sent the renewal (or acquisition) that succeeded:
 * the database's expiry is `ttlMs` after it *received* that statement, so the leader stops acting at least
 * `marginMs` before any other replica can take the lease, whatever the delays, and however long it was paused.
 */

export interface ElectionTiming {
  /** How long a taken or renewed lease lasts on the database's clock. */
  ttlMs: number;
  /** Between ticks: a leader renews, a follower tries to take the lease. */
  renewEveryMs: number;
  /** Taken off the lease's length on the leader's side (clock rate drift, the time to stop acting). */
  marginMs: number;
}

/** Lease 5 s, renewed every second, a leader stops acting 1 s before its lease could be taken. */
export const DEFAULT_ELECTION_TIMING: ElectionTiming = { ttlMs: 5_000, renewEveryMs: 1_000, marginMs: 1_000 };

export interface Term {
  /** The fencing token of this term. */
  token: number;
  /** When it became leader (monotonic). */
  since: number;
  /** Until when it may act as leader without another successful renewal (monotonic). */
  validUntil: number;
}

export type ElectionState = { role: 'follower' } | { role: 'leader'; term: Term };

export type ElectionAction = 'acquire' | 'renew' | 'step-down';

/** What the database said to an acquisition or a renewal. */
export type ElectionOutcome =
  /** The lease is ours, under this token (an acquisition). */
  | { kind: 'acquired'; token: number }
  /** The renewal went through. */
  | { kind: 'renewed' }
  /** Another replica holds the lease, or ours expired before the renewal arrived. */
  | { kind: 'refused' }
  /** No answer (the database could not be reached, the statement failed). */
  | { kind: 'failed' };

export type ElectionChange = 'elected' | 'deposed' | undefined;

export const FOLLOWER: ElectionState = { role: 'follower' };

/** What to do at a tick at `now`. */
export function nextAction(state: ElectionState, now: number): ElectionAction {
  if (state.role === 'follower') return 'acquire';
  return now >= state.term.validUntil ? 'step-down' : 'renew';
}

/** Whether the state lets this replica act as leader at `now` (the fence's local check). */
export function leadsAt(state: ElectionState, now: number): state is { role: 'leader'; term: Term } {
  return state.role === 'leader' && now < state.term.validUntil;
}

/**
 * The state after `action`, sent at `sentAt`, was answered with `outcome` at `now`, and whether this replica was
 * elected or deposed by it. A leader whose validity ran out while it waited for the answer steps down, even if the
 * answer was a success (it may have been paused: the lease may be another's by now).
 */
export function afterOutcome(
  state: ElectionState,
  action: ElectionAction,
  outcome: ElectionOutcome,
  sentAt: number,
  now: number,
  timing: ElectionTiming,
): { state: ElectionState; change: ElectionChange } {
  const validUntil = sentAt + timing.ttlMs - timing.marginMs;
  if (action === 'step-down') return stepDown(state);
  if (state.role === 'follower') {
    if (action !== 'acquire' || outcome.kind !== 'acquired' || now >= validUntil)
      return { state, change: undefined };
    return {
      state: { role: 'leader', term: { token: outcome.token, since: now, validUntil } },
      change: 'elected',
    };
  }
  const { term } = state;
  if (outcome.kind === 'refused') return stepDown(state);
  const extended = outcome.kind === 'renewed' ? Math.max(term.validUntil, validUntil) : term.validUntil;
  if (now >= extended) return stepDown(state);
  return { state: { role: 'leader', term: { ...term, validUntil: extended } }, change: undefined };
}

/** At the leader's deadline (a timer, so that a renewal that hangs cannot keep it leading). */
export function atDeadline(
  state: ElectionState,
  now: number,
): { state: ElectionState; change: ElectionChange } {
  if (state.role === 'leader' && now >= state.term.validUntil) return stepDown(state);
  return { state, change: undefined };
}

function stepDown(state: ElectionState): { state: ElectionState; change: ElectionChange } {
  return { state: FOLLOWER, change: state.role === 'leader' ? 'deposed' : undefined };
}
