/**
 * A per-key rate that weighs requests by their bodies, as the API and the jobs API share it: `api/rate-limit.ts`'s
 * `RateLimiter` is the one implementation (the cost rule lives there), app/ builds one for each with its own budget.
 */

export interface RateDecision {
  allowed: boolean;
  /** Seconds until enough tokens are available, when not allowed. */
  retryAfterSeconds: number;
}

export interface RequestRate {
  /** Takes what a request costs by the body its Content-Length declares (within `limitBytes`), before it is read. */
  takeRequest(key: string, contentLength: string | undefined, limitBytes: number): RateDecision;
  /** Takes what a body read without a declared length (chunked) costs beyond the request's own token. */
  takeUndeclaredBody(key: string, bytes: number): RateDecision;
}
