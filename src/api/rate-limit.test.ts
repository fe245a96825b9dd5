import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limit.js';

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
});
