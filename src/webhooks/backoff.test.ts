import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, nextAttemptAt } from './backoff.js';

describe('webhook retry backoff', () => {
  it('doubles the wait after each failure up to the cap, then gives up after the last attempt', () => {
    const policy = { maxAttempts: 6, firstDelayMs: 1_000, maxDelayMs: 5_000 };
    expect([1, 2, 3, 4, 5, 6].map((n) => nextAttemptAt(n, 100, policy))).toEqual([
      1_100,
      2_100,
      4_100,
      5_100,
      5_100,
      undefined,
    ]);
  });

  it('by default tries 10 times with 13.5 minutes of waits between the first and the last', () => {
    let at = 0;
    let attempts = 0;
    for (
      let next: number | undefined = 0;
      next !== undefined;
      next = nextAttemptAt(attempts, at, DEFAULT_RETRY_POLICY)
    ) {
      at = next;
      attempts += 1;
    }
    expect(attempts).toBe(10);
    expect(at).toBe(2_000 + 4_000 + 8_000 + 16_000 + 32_000 + 64_000 + 128_000 + 256_000 + 300_000);
  });
});
