import { describe, expect, it } from 'vitest';
import { ALONE, integerShare, membershipOf, rateLimitShare } from './shares.js';

describe('membershipOf', () => {
  const rows = [
    { id: 'rep-b', lastSeenAt: 10_000 },
    { id: 'rep-a', lastSeenAt: 9_000 },
    { id: 'rep-c', lastSeenAt: 3_000 },
  ];
  it.each([
    // [what, self, now, expected]
    ['ranked by id, the stale one left out', 'rep-b', 10_000, { count: 2, rank: 1 }],
    ['the first by id ranks 0', 'rep-a', 10_000, { count: 2, rank: 0 }],
    ['a row seen exactly staleAfterMs ago is live', 'rep-a', 9_000, { count: 3, rank: 0 }],
    ['itself, though its own row is stale', 'rep-c', 10_000, { count: 3, rank: 2 }],
    ['itself, with no row yet', 'rep-0', 10_000, { count: 3, rank: 0 }],
  ] as const)('%s', (_what, self, now, expected) => {
    expect(membershipOf(rows, self, now, 6_000)).toEqual(expected);
  });
  it('alone when no row is there', () => {
    expect(membershipOf([], 'rep-a', 0, 6_000)).toEqual(ALONE);
  });
});

describe('integerShare', () => {
  it.each([
    // [total, count, shares by rank]
    [100, 1, [100]],
    [100, 3, [34, 33, 33]],
    [10, 4, [3, 3, 2, 2]],
    [2, 3, [1, 1, 0]],
    [0, 2, [0, 0]],
  ])('%i over %i replicas: %j, adding up to the total', (total, count, shares) => {
    const got = shares.map((_, rank) => integerShare(total, { count, rank }));
    expect(got).toEqual(shares);
    expect(got.reduce((a, b) => a + b, 0)).toBe(total);
  });
});

describe('rateLimitShare', () => {
  it.each([
    // [limit, count, per rank]
    [{ requestsPerSecond: 50, burst: 100 }, 1, [{ requestsPerSecond: 50, burst: 100 }]],
    [
      { requestsPerSecond: 50, burst: 100 },
      3,
      [
        { requestsPerSecond: 50 / 3, burst: 34 },
        { requestsPerSecond: 50 / 3, burst: 33 },
        { requestsPerSecond: 50 / 3, burst: 33 },
      ],
    ],
    [
      { requestsPerSecond: 1, burst: 2 },
      3,
      [
        { requestsPerSecond: 1 / 3, burst: 1 },
        { requestsPerSecond: 1 / 3, burst: 1 },
        // A burst below the replica count: each keeps one, or its every request would be refused.
        { requestsPerSecond: 1 / 3, burst: 1 },
      ],
    ],
  ])('%j over %i replicas', (limit, count, expected) => {
    expect(expected.map((_, rank) => rateLimitShare(limit, { count, rank }))).toEqual(expected);
  });
});
