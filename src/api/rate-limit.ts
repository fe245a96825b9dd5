/**
 * The API's rate limit: a token bucket per API key, in this process's memory (each API replica limits on its
 * own), on an injected clock.
 */
import type { Clock } from '../service/clock.js';

export interface RateDecision {
  allowed: boolean;
  /** Seconds until a token is available, when not allowed. */
  retryAfterSeconds: number;
}

/** A token bucket per key: `burst` requests at once, refilled at `requestsPerSecond`. */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #o: { requestsPerSecond: number; burst: number; clock: Clock; maxKeys?: number };

  constructor(options: { requestsPerSecond: number; burst: number; clock: Clock; maxKeys?: number }) {
    this.#o = options;
  }

  take(key: string): RateDecision {
    const { requestsPerSecond, burst, clock } = this.#o;
    const now = clock();
    const bucket = this.#buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * requestsPerSecond);
    bucket.at = now;
    this.#remember(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, retryAfterSeconds: 0 };
    }
    return {
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / requestsPerSecond)),
    };
  }

  #remember(key: string, bucket: { tokens: number; at: number }): void {
    // Re-inserting keeps the map in least-recently-used order, so the oldest key is dropped when full.
    this.#buckets.delete(key);
    this.#buckets.set(key, bucket);
    if (this.#buckets.size > (this.#o.maxKeys ?? 10_000)) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest !== undefined) this.#buckets.delete(oldest);
    }
  }
}
