/** When a failed webhook delivery is tried again (pure): exponential backoff, capped, and a bounded count. */

export interface RetryPolicy {
  /** Attempts in all, the first included; after the last failure the delivery is given up. */
  maxAttempts: number;
  /** The wait after the first failure; each later one doubles it. */
  firstDelayMs: number;
  /** The longest wait between two attempts. */
  maxDelayMs: number;
}

/** 10 attempts, the waits between them 2 s, 4 s, 8 s ... capped at 5 min: 810 s (13.5 min) of waits in all. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 10,
  firstDelayMs: 2_000,
  maxDelayMs: 300_000,
};

/**
 * After `attempts` failed attempts (1 or more), when the next is due, or undefined when the delivery is given up.
 */
export function nextAttemptAt(attempts: number, failedAt: number, policy: RetryPolicy): number | undefined {
  if (attempts >= policy.maxAttempts) return undefined;
  const delay = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** (attempts - 1));
  return failedAt + delay;
}
