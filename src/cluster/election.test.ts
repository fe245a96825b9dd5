/** Leader election's decisions, as tables on a plain monotonic clock (milliseconds). */
import { describe, expect, it } from 'vitest';
import {
  afterOutcome,
  atDeadline,
  type ElectionAction,
  type ElectionOutcome,
  type ElectionState,
  type ElectionTiming,
  FOLLOWER,
  leadsAt,
  nextAction,
} from './election.js';

const timing: ElectionTiming = { ttlMs: 5_000, renewEveryMs: 1_000, marginMs: 1_000 };
const leader = (token: number, validUntil: number, since = 0): ElectionState => ({
  role: 'leader',
  term: { token, since, validUntil },
});

describe('nextAction', () => {
  it.each<[string, ElectionState, number, ElectionAction]>([
    ['a follower tries to take the lease', FOLLOWER, 0, 'acquire'],
    ['a leader within its validity renews', leader(3, 4_000), 3_999, 'renew'],
    ['a leader at its validity steps down', leader(3, 4_000), 4_000, 'step-down'],
    ['a leader resumed long after (SIGSTOP) steps down', leader(3, 4_000), 34_000, 'step-down'],
  ])('%s', (_, state, now, action) => {
    expect(nextAction(state, now)).toBe(action);
  });
});

describe('afterOutcome', () => {
  it.each<
    [
      string,
      ElectionState,
      ElectionAction,
      ElectionOutcome,
      number,
      number,
      ElectionState,
      string | undefined,
    ]
  >([
    // name, state, action, outcome, sentAt, now, next state, change
    [
      'a follower takes a free lease',
      FOLLOWER,
      'acquire',
      { kind: 'acquired', token: 7 },
      100,
      150,
      leader(7, 4_100, 150),
      'elected',
    ],
    ['a follower finds it held', FOLLOWER, 'acquire', { kind: 'refused' }, 100, 150, FOLLOWER, undefined],
    [
      'a follower cannot reach the database',
      FOLLOWER,
      'acquire',
      { kind: 'failed' },
      100,
      150,
      FOLLOWER,
      undefined,
    ],
    [
      'an acquisition answered after its validity (paused meanwhile) does not lead',
      FOLLOWER,
      'acquire',
      { kind: 'acquired', token: 7 },
      100,
      4_100,
      FOLLOWER,
      undefined,
    ],
    [
      'a renewal extends from when it was sent',
      leader(7, 4_100),
      'renew',
      { kind: 'renewed' },
      1_000,
      1_020,
      leader(7, 5_000),
      undefined,
    ],
    [
      'a renewal sent before the last one succeeded never shortens the validity',
      leader(7, 5_000),
      'renew',
      { kind: 'renewed' },
      900,
      1_100,
      leader(7, 5_000),
      undefined,
    ],
    [
      'a refused renewal deposes',
      leader(7, 4_100),
      'renew',
      { kind: 'refused' },
      1_000,
      1_020,
      FOLLOWER,
      'deposed',
    ],
    [
      'a failed renewal keeps the term until its validity',
      leader(7, 4_100),
      'renew',
      { kind: 'failed' },
      1_000,
      3_000,
      leader(7, 4_100),
      undefined,
    ],
    [
      'a failed renewal at the validity deposes',
      leader(7, 4_100),
      'renew',
      { kind: 'failed' },
      1_000,
      4_100,
      FOLLOWER,
      'deposed',
    ],
    [
      'a successful renewal answered after its own validity (paused in between) deposes',
      leader(7, 4_100),
      'renew',
      { kind: 'renewed' },
      3_000,
      30_000,
      FOLLOWER,
      'deposed',
    ],
    [
      'stepping down deposes a leader',
      leader(7, 4_100),
      'step-down',
      { kind: 'failed' },
      5_000,
      5_000,
      FOLLOWER,
      'deposed',
    ],
    [
      'stepping down leaves a follower as it is',
      FOLLOWER,
      'step-down',
      { kind: 'failed' },
      5_000,
      5_000,
      FOLLOWER,
      undefined,
    ],
  ])('%s', (_, state, action, outcome, sentAt, now, next, change) => {
    expect(afterOutcome(state, action, outcome, sentAt, now, timing)).toEqual({ state: next, change });
  });
});

describe('atDeadline and leadsAt', () => {
  it.each<[string, ElectionState, number, boolean, string | undefined]>([
    ['before the validity a leader leads', leader(2, 4_000), 3_999, true, undefined],
    ['at the validity it does not, and steps down', leader(2, 4_000), 4_000, false, 'deposed'],
    ['a follower never leads', FOLLOWER, 0, false, undefined],
  ])('%s', (_, state, now, leads, change) => {
    expect(leadsAt(state, now)).toBe(leads);
    expect(atDeadline(state, now).change).toBe(change);
    expect(atDeadline(state, now).state.role).toBe(change === 'deposed' ? 'follower' : state.role);
  });

  it('the leader stops acting at least the margin before the database lets another take the lease', () => {
    // The database expires the lease ttl after it received the statement, which is no earlier than it was sent.
    for (const [sentAt, receivedAt, answeredAt] of [
      [0, 0, 1],
      [0, 3_000, 3_500],
      [10_000, 10_001, 19_000],
    ] as const) {
      const { state } = afterOutcome(
        leader(1, sentAt + 1),
        'renew',
        { kind: 'renewed' },
        sentAt,
        sentAt,
        timing,
      );
      const databaseExpiry = receivedAt + timing.ttlMs;
      const lastLocalAct = state.role === 'leader' ? state.term.validUntil - 1 : -Infinity;
      expect(databaseExpiry - lastLocalAct).toBeGreaterThan(timing.marginMs);
      // And an answer that comes after the validity deposes rather than extends.
      expect(
        afterOutcome(leader(1, sentAt + 1), 'renew', { kind: 'renewed' }, sentAt, answeredAt, timing).change,
      ).toBe(answeredAt >= sentAt + timing.ttlMs - timing.marginMs ? 'deposed' : undefined);
    }
  });
});
