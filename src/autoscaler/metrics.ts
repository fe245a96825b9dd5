/** The autoscaler's Prometheus metrics: how long after a policy's threshold was crossed the decision came. */
import { Histogram, type Registry } from 'prom-client';
import type { ScalingDecision } from './autoscaler.js';

export class ScalerMetrics {
  readonly #decisionDelay: Histogram<'endpoint'>;
  /** Endpoint -> the threshold crossing last observed, so that each crossing is counted once. */
  readonly #lastThreshold = new Map<string, number>();

  constructor(options: { registry: Registry }) {
    this.#decisionDelay = new Histogram({
      name: 'corral_autoscaler_decision_delay_seconds',
      help: "Time from a scaling policy's threshold being crossed to the decision that acts on it",
      labelNames: ['endpoint'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [options.registry],
    });
  }

  /** Records, once per threshold crossing, how long after it the decision came. */
  observeScaleDecision(endpoint: string, decision: ScalingDecision, now: number): void {
    const crossed = decision.thresholdCrossedAt;
    if (crossed === null || crossed > now || this.#lastThreshold.get(endpoint) === crossed) return;
    this.#lastThreshold.set(endpoint, crossed);
    this.#decisionDelay.observe({ endpoint }, (now - crossed) / 1000);
  }

  /** Forgets the series of every endpoint `exists` denies (deleted ones). */
  retain(exists: (endpoint: string) => boolean): void {
    for (const endpoint of [...this.#lastThreshold.keys()]) {
      if (exists(endpoint)) continue;
      this.#lastThreshold.delete(endpoint);
      this.#decisionDelay.remove({ endpoint });
    }
  }
}
