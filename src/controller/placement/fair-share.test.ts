import { describe, expect, it } from 'vitest';
import { fairShares } from './fair-share.js';

const d = (ownerId: string, wants: number, holds = 0) => ({ ownerId, wants, holds });

describe('fairShares (max-min, whole GPUs)', () => {
  it.each([
    { why: 'one owner wants everything', capacity: 8, demands: [d('a', 20, 8)], shares: { a: 8 } },
    {
      why: 'a hog and a newcomer wanting 1',
      capacity: 8,
      demands: [d('a', 20, 8), d('b', 1)],
      shares: { a: 7, b: 1 },
    },
    {
      why: 'two owners wanting more than half',
      capacity: 8,
      demands: [d('a', 20, 8), d('b', 6)],
      shares: { a: 4, b: 4 },
    },
    { why: 'room for everyone', capacity: 8, demands: [d('a', 3, 3), d('b', 2)], shares: { a: 3, b: 2 } },
    {
      why: 'small first, the rest split',
      capacity: 8,
      demands: [d('a', 20), d('b', 1), d('c', 20)],
      shares: { a: 4, b: 1, c: 3 },
    },
    {
      why: 'a split leaving GPUs over: to those holding most',
      capacity: 8,
      demands: [d('a', 9, 1), d('b', 9, 5), d('c', 9, 2)],
      shares: { a: 2, b: 3, c: 3 },
    },
    { why: 'owners wanting none get none', capacity: 4, demands: [d('a', 0), d('b', 6)], shares: { b: 4 } },
    { why: 'no GPUs', capacity: 0, demands: [d('a', 2)], shares: { a: 0 } },
  ])('$why', ({ capacity, demands, shares }) => {
    expect(Object.fromEntries(fairShares(capacity, demands))).toEqual(shares);
  });

  it('never hands out more than the capacity, and gives no owner more than it wants', () => {
    for (let capacity = 0; capacity < 12; capacity++) {
      for (let a = 0; a < 10; a++) {
        for (let b = 0; b < 10; b++) {
          const shares = fairShares(capacity, [d('a', a, a % 3), d('b', b), d('c', 5, 1)]);
          const total = [...shares.values()].reduce((x, y) => x + y, 0);
          expect(total).toBeLessThanOrEqual(capacity);
          expect(shares.get('a') ?? 0).toBeLessThanOrEqual(a);
          expect(shares.get('b') ?? 0).toBeLessThanOrEqual(b);
          // Work-conserving: GPUs stay unshared only when every owner has all it wants.
          if (total < capacity) expect(total).toBe(a + b + 5);
        }
      }
    }
  });
});
