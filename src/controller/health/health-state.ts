/** A worker's health from its consecutive probe results. Pure; health-prober.ts runs the probes. */
import type { HealthCheck } from '../../domain/endpoint.js';

/** Consecutive probe results of one worker. */
export interface HealthCounters {
  successes: number;
  failures: number;
  healthy: boolean;
}

export const UNKNOWN_HEALTH: HealthCounters = { successes: 0, failures: 0, healthy: false };

/** Routable after `successThreshold` passes in a row; out after `failureThreshold` failures in a row. */
export function nextHealth(counters: HealthCounters, passed: boolean, check: HealthCheck): HealthCounters {
  if (passed) {
    const successes = counters.successes + 1;
    return { successes, failures: 0, healthy: counters.healthy || successes >= check.successThreshold };
  }
  const failures = counters.failures + 1;
  return { successes: 0, failures, healthy: counters.healthy && failures < check.failureThreshold };
}
