/** The split of each worker's slots between replicas, and when a changed share applies (pure, manual time). */
import { describe, expect, it } from 'vitest';
import { membershipKey, ShareSchedule, shareOf } from './slot-shares.js';

const view = (members: string[], settled: Record<string, string | null> = {}) => ({
  members,
  settled: new Map(Object.entries(settled)),
});

describe('shareOf', () => {
  it.each([
    { capacity: 6, n: 3 },
    { capacity: 7, n: 3 },
    { capacity: 1, n: 3 },
    { capacity: 2, n: 5 },
    { capacity: 10, n: 1 },
    { capacity: 4, n: 4 },
  ])(
    'gives $n replicas exactly $capacity slots in all, none more than one above another',
    ({ capacity, n }) => {
      const members = Array.from({ length: n }, (_, i) => `r${i}`);
      for (const workerId of ['w-1', 'w-2', 'another-worker']) {
        const shares = members.map((self) => shareOf(capacity, members, self, workerId));
        expect(shares.reduce((a, b) => a + b, 0)).toBe(capacity);
        expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
        expect(Math.min(...shares)).toBe(Math.floor(capacity / n));
      }
    },
  );

  it('turns the extra slots with the worker, so that with fewer slots than replicas each gets some', () => {
    const members = ['a', 'b', 'c'];
    const workers = Array.from({ length: 30 }, (_, i) => `worker-${i}`);
    for (const self of members) {
      expect(workers.some((w) => shareOf(1, members, self, w) === 1)).toBe(true);
    }
  });

  it('gives a replica outside the membership nothing', () => {
    expect(shareOf(8, ['a', 'b'], 'c', 'w')).toBe(0);
    expect(shareOf(8, [], 'a', 'w')).toBe(0);
  });
});

describe('ShareSchedule', () => {
  const timing = { settleMs: 1_000 };

  it('starts from nothing and grows once settleMs passed and every other member settled for the membership', () => {
    const s = new ShareSchedule({ self: 'a', timing });
    expect(s.share('w', 4, 0)).toBe(0);
    s.observe(view(['a', 'b']), 10_000, 0);
    expect(s.share('w', 4, 0)).toBe(0);
    // Time passed, but b has not said it keeps within its share of the new membership.
    s.observe(view(['a', 'b'], { b: null }), 10_000, 1_500);
    expect(s.share('w', 4, 1_500)).toBe(0);
    s.observe(view(['a', 'b'], { b: membershipKey(['a', 'b']) }), 10_000, 2_000);
    expect(s.share('w', 4, 2_000)).toBe(2);
  });

  it('alone, it takes every slot after settleMs', () => {
    const s = new ShareSchedule({ self: 'a', timing });
    s.observe(view(['a']), 10_000, 0);
    s.observe(view(['a']), 10_000, 999);
    expect(s.share('w', 4, 999)).toBe(0);
    s.observe(view(['a']), 10_000, 1_000);
    expect(s.share('w', 4, 1_000)).toBe(4);
  });

  it('applies a shrinking share at once and a growing one only after the others settled', () => {
    const s = new ShareSchedule({ self: 'a', timing });
    s.observe(view(['a']), 100_000, 0);
    s.observe(view(['a']), 100_000, 1_000);
    expect(s.share('w', 6, 1_000)).toBe(6);
    // b joins: a's share shrinks to 3 at once.
    s.observe(view(['a', 'b']), 100_000, 2_000);
    expect(s.share('w', 6, 2_000)).toBe(3);
    // c joins, then b leaves before anyone settled: a keeps the least of its shares under each (2).
    s.observe(view(['a', 'b', 'c']), 100_000, 2_500);
    s.observe(view(['a', 'c']), 100_000, 3_000);
    expect(s.share('w', 6, 3_000)).toBe(2);
    s.observe(view(['a', 'c'], { c: membershipKey(['a', 'b', 'c']) }), 100_000, 5_000);
    expect(s.share('w', 6, 5_000)).toBe(2);
    s.observe(view(['a', 'c'], { c: membershipKey(['a', 'c']) }), 100_000, 5_500);
    expect(s.share('w', 6, 5_500)).toBe(3);
  });

  it('gives nothing past validUntil, and starts from nothing again at the next view', () => {
    const s = new ShareSchedule({ self: 'a', timing });
    s.observe(view(['a']), 5_000, 0);
    s.observe(view(['a']), 5_000, 1_000);
    expect(s.share('w', 4, 4_999)).toBe(4);
    expect(s.share('w', 4, 5_000)).toBe(0);
    const before = s.version;
    s.expire(5_000);
    expect(s.version).toBeGreaterThan(before);
    // Paused past its validity (SIGSTOP): the same membership seen again must settle again before any share.
    s.observe(view(['a']), 20_000, 15_000);
    expect(s.share('w', 4, 15_000)).toBe(0);
    s.observe(view(['a']), 20_000, 16_000);
    expect(s.share('w', 4, 16_000)).toBe(4);
  });

  it('says it is settled for its membership only while no worker holds more of its requests than its share', () => {
    const s = new ShareSchedule({ self: 'a', timing });
    expect(s.settledFor([])).toBeNull();
    s.observe(view(['a', 'b']), 10_000, 0);
    const key = membershipKey(['a', 'b']);
    expect(s.settledFor([{ workerId: 'w', capacity: 4, inFlight: 2 }])).toBe(key);
    expect(s.settledFor([{ workerId: 'w', capacity: 4, inFlight: 3 }])).toBeNull();
    expect(s.settledFor([])).toBe(key);
  });

  it('never lets the applied shares of replicas that follow the protocol sum above the capacity', () => {
    // Three replicas, each seeing membership changes at its own moments; settled reports as each computes them.
    const ids = ['a', 'b', 'c'];
    const schedules = new Map(ids.map((id) => [id, new ShareSchedule({ self: id, timing })]));
    const settled = new Map<string, string | null>();
    const views: string[][] = [['a'], ['a', 'b'], ['a', 'b', 'c'], ['b', 'c'], ['a', 'b', 'c'], ['a', 'c']];
    let now = 0;
    for (const members of views) {
      for (let step = 0; step < 6; step++) {
        now += 400;
        // One replica at a time sees the new view (in turn), the way replicas read at different moments.
        for (const id of ids) {
          const s = schedules.get(id);
          if (!s) continue;
          if (!members.includes(id)) {
            s.expire(Number.POSITIVE_INFINITY);
            settled.set(id, null);
            continue;
          }
          s.observe({ members, settled }, now + 10_000, now);
          settled.set(id, s.settledFor([{ workerId: 'w', capacity: 5, inFlight: s.share('w', 5, now) }]));
          const total = ids.reduce((sum, r) => sum + (schedules.get(r)?.share('w', 5, now) ?? 0), 0);
          expect(total).toBeLessThanOrEqual(5);
        }
      }
      // Each membership held long enough for its members to settle: its slots are all in use again.
      const total = ids.reduce((sum, r) => sum + (schedules.get(r)?.share('w', 5, now) ?? 0), 0);
      expect(total).toBe(5);
    }
  });
});
