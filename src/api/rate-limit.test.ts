import { describe, expect, it } from 'vitest';
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
