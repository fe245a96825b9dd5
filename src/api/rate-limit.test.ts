import { describe, expect, it } from 'vitest';
import { rateLimitShare } from '../cluster/shares.js';
import { RateLimiter, requestCost } from './rate-limit.js';

describe('RateLimiter', () => {
  it('allows a burst, then refuses with the wait until the next token, then refills', () => {
    let now = 0;
    const limiter = new RateLimiter({ requestsPerSecond: 2, burst: 3, clock: () => now });
    expect([1, 2, 3].map(() => limiter.take('k').allowed)).toEqual([true, true, true]);
    expect(limiter.take('k')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    now += 500;
    expect(limiter.take('k').allowed).toBe(true);
    expect(limiter.take('k').allowed).toBe(false);
  });

  it('keeps keys apart', () => {
    const limiter = new RateLimiter({ requestsPerSecond: 1, burst: 1, clock: () => 0 });
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a').allowed).toBe(false);
    expect(limiter.take('b').allowed).toBe(true);
  });

  it('forgets the least recently used key beyond its capacity', () => {
    const limiter = new RateLimiter({ requestsPerSecond: 1, burst: 1, clock: () => 0, maxKeys: 2 });
    limiter.take('a');
    limiter.take('b');
    limiter.take('c');
    expect(limiter.take('a').allowed).toBe(true);
  });

  it('charges a request by its declared body, and a body read without a declared length by what was read', () => {
    let now = 0;
    const limiter = new RateLimiter({ requestsPerSecond: 10, burst: 100, clock: () => now });
    // 1 + 64 KiB / 16 KiB.
    expect(limiter.takeRequest('k', String(64 * 1024), 1024 * 1024).allowed).toBe(true);
    expect(limiter.takeRequest('k', undefined, 1024 * 1024).allowed).toBe(true);
    // A chunked body of 480 KiB: 30 tokens more than the request's one; 100 - 5 - 1 - 30 = 64 left.
    expect(limiter.takeUndeclaredBody('k', 480 * 1024).allowed).toBe(true);
    expect(limiter.takeRequest('k', String(1024 * 1024), 2 * 1024 * 1024)).toEqual({
      allowed: false,
      retryAfterSeconds: 1,
    });
    now += 1_000;
    expect(limiter.takeRequest('k', String(1024 * 1024), 2 * 1024 * 1024).allowed).toBe(true);
    // An empty body read costs nothing beyond its request.
    expect(limiter.takeUndeclaredBody('k', 0).allowed).toBe(true);
  });

  it('charges a request by the body it declares, never more than the burst', () => {
    let now = 0;
    const limiter = new RateLimiter({ requestsPerSecond: 10, burst: 20, clock: () => now });
    expect(limiter.take('k', 15).allowed).toBe(true);
    expect(limiter.take('k', 6)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(limiter.take('k', 5).allowed).toBe(true);
    now += 2_000;
    expect(limiter.take('k', 500).allowed).toBe(true);
    expect(limiter.take('k').allowed).toBe(false);
  });

  it.each([
    [undefined, 1],
    ['', 1],
    ['0', 1],
    ['16383', 1],
    ['16384', 2],
    ['65536', 5],
    ['65537', 1],
    ['943718', 1],
    ['nonsense', 1],
  ])('a request declaring %j bytes to a route taking 64 KiB costs %i token(s)', (contentLength, cost) => {
    expect(requestCost(contentLength, 65_536)).toBe(cost);
  });
});

describe('RateLimiter split between replicas', () => {
  const limit = { requestsPerSecond: 10, burst: 20 };
  /** `count` replicas' limiters on one clock, each enforcing its share of `limit`. */
  const replicas = (count: number, clock: () => number) =>
    Array.from(
      { length: count },
      (_, rank) => new RateLimiter({ ...limit, clock, share: () => rateLimitShare(limit, { count, rank }) }),
    );

  it.each([
    // [how the balancer sends one key's requests, replicas]
    ['round robin', 3, (i: number) => i % 3],
    ['all to one replica', 3, () => 0],
    ['two of three, unevenly', 3, (i: number) => (i % 5 === 0 ? 1 : 0)],
    ['scattered over four', 4, (i: number) => (i * 7 + (i >> 3)) % 4],
  ])('%s: the replicas together never admit more than the limit', (how, count, pick) => {
    let now = 0;
    const limiters = replicas(count, () => now);
    let admitted = 0;
    // 10 s of 100 requests a second: the whole limit allows the burst plus 10 a second.
    for (let i = 0; i < 1_000; i++) {
      now = i * 10;
      if ((limiters[pick(i)] as RateLimiter).take('k').allowed) admitted++;
      expect(admitted).toBeLessThanOrEqual(limit.burst + (now / 1000) * limit.requestsPerSecond);
    }
    // Evenly spread, the split loses nothing; all on one replica, that one's share is what the key gets.
    if (how === 'round robin') expect(admitted).toBeGreaterThanOrEqual(limit.burst + 9.99 * 10 - count);
    if (how === 'all to one replica') expect(admitted).toBe(7 + Math.floor(9.99 * (10 / 3)));
  });

  it('re-splits at the next request when a replica joins or leaves', () => {
    let now = 0;
    let count = 1;
    const limiter = new RateLimiter({
      ...limit,
      clock: () => now,
      share: () => rateLimitShare(limit, { count, rank: 0 }),
    });
    expect(limiter.take('k', 5).allowed).toBe(true); // 15 of 20 left
    count = 2; // rank 0 of 2: burst 10, 5 a second; the bucket holds at most 10 now
    expect(limiter.take('k', 10).allowed).toBe(true);
    expect(limiter.take('k')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    now += 1_000; // 5 tokens at the share's rate
    expect(limiter.take('k', 5).allowed).toBe(true);
    expect(limiter.take('k').allowed).toBe(false);
    count = 1; // alone again: 10 a second
    now += 1_000;
    expect(limiter.take('k', 10).allowed).toBe(true);
    expect(limiter.take('k').allowed).toBe(false);
  });
});
