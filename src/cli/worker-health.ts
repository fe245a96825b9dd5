/**
 * What a worker's HEALTHY column says, by its state: the API's `healthy` is false for every worker that is not
 * probed, and a plain `no` beside a frozen worker reads as broken when it is resting by design (docs/workers.md,
 * Idle tiers).
 */

/** States whose workers are probed now: there `healthy` is the probe's verdict. */
const PROBED = new Set(['running', 'unhealthy', 'draining']);
/** States on the way to a first probe. */
const NOT_YET = new Set(['pending', 'pulling', 'starting']);

/** `yes`/`no` where the worker is probed, `not yet` before its first probe, `-` at rest in a tier or removed. */
export function healthText(state: string, healthy: boolean): string {
  if (PROBED.has(state)) return healthy ? 'yes' : 'no';
  if (NOT_YET.has(state)) return 'not yet';
  if (state === 'failed') return 'no';
  return '-';
}
