/**
 * The API's rate limit: a token bucket per API key, in this process's memory, on an injected clock. A request
 * costs one token plus one per 16 KiB of body it declares and will have parsed, so that a key sending large bodies
 * is slowed down by what it makes the server parse, not only by how often; a body over the route's limit costs
 * one, since it is refused unread (413). Several replicas split the limit: each enforces its `share` of it
 * (cluster/shares.ts), read at every request, so that a re-split when a replica joins or leaves applies at once.
 */
import type { Clock } from '../ports/clock.js';
import type { RateDecision, RequestRate } from '../ports/rate-limit.js';

export type { RateDecision } from '../ports/rate-limit.js';

export interface RateLimits {
  requestsPerSecond: number;
  burst: number;
}

export interface RateLimiterOptions extends RateLimits {
  clock: Clock;
  maxKeys?: number;
  /** This replica's part of the limits now (several replicas); absent: the limits above, whole. */
  share?: () => RateLimits;
}

/**
 * A token bucket per key: `burst` requests at once, refilled at `requestsPerSecond` (or this replica's share of
 * both). A bucket holds at most the burst in force: a smaller share takes effect at the key's next request.
 */
export class RateLimiter implements RequestRate {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #o: RateLimiterOptions;

  constructor(options: RateLimiterOptions) {
    this.#o = options;
  }

  /** Takes `cost` tokens (at most the burst, so that no request is refused for ever). */
  take(key: string, cost = 1): RateDecision {
    const { clock } = this.#o;
    const { requestsPerSecond, burst } = this.#o.share?.() ?? this.#o;
    const need = Math.min(cost, burst);
    const now = clock();
    const bucket = this.#buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * requestsPerSecond);
    bucket.at = now;
    this.#remember(key, bucket);
    if (bucket.tokens >= need) {
      bucket.tokens -= need;
      return { allowed: true, retryAfterSeconds: 0 };
    }
    return {
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil((need - bucket.tokens) / requestsPerSecond)),
    };
  }

  takeRequest(key: string, contentLength: string | undefined, limitBytes: number): RateDecision {
    return this.take(key, requestCost(contentLength, limitBytes));
  }

  takeUndeclaredBody(key: string, bytes: number): RateDecision {
    return this.take(key, requestCost(String(bytes), Number.POSITIVE_INFINITY) - 1);
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

/** Each this many bytes of declared body cost one more token. */
export const BYTES_PER_TOKEN = 16 * 1024;

/**
 * What a request costs: one token, plus one per 16 KiB of the body its Content-Length declares when that body is
 * within `limitBytes` (the route's body limit) and so will be parsed.
 */
export function requestCost(contentLength: string | undefined, limitBytes: number): number {
  const declared = Number(contentLength);
  return Number.isFinite(declared) && declared > 0 && declared <= limitBytes
    ? 1 + Math.floor(declared / BYTES_PER_TOKEN)
    : 1;
}
