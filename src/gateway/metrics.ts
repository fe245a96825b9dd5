import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ScalingDecision } from '../autoscaler/autoscaler.js';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Per-endpoint gateway metrics, on the registry /metrics serves. */
export class GatewayMetrics {
  readonly #requests: Counter<'endpoint' | 'status'>;
  readonly #latency: Histogram<'endpoint'>;
  readonly #queueWait: Histogram<'endpoint'>;
  readonly #coldStarts: Histogram<'endpoint'>;
  readonly #decisionDelay: Histogram<'endpoint'>;
  readonly #lastThreshold = new Map<string, number>();
  /** Per-endpoint label children, made once: resolving labels on every request costs the hot path. */
  readonly #children = new Map<
    string,
    {
      latency: { observe(v: number): void };
      queueWait: { observe(v: number): void };
      byStatus: Map<number, { inc(): void }>;
    }
  >();

  constructor(options: {
    registry: Registry;
    load: () => { endpointId: string; queueLength: number; inFlight: number }[];
  }) {
    const registers = [options.registry];
    this.#requests = new Counter({
      name: 'corral_gateway_requests_total',
      help: 'Requests served by the gateway, by endpoint and status code',
      labelNames: ['endpoint', 'status'] as const,
      registers,
    });
    this.#latency = new Histogram({
      name: 'corral_gateway_request_duration_seconds',
      help: 'Time from a request arriving to its response ending, queue wait included',
      labelNames: ['endpoint'] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#queueWait = new Histogram({
      name: 'corral_gateway_queue_wait_seconds',
      help: 'Time a request waited for a worker slot',
      labelNames: ['endpoint'] as const,
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#coldStarts = new Histogram({
      name: 'corral_gateway_cold_start_seconds',
      help: 'Wakes from zero: time from the first request to its response starting',
      labelNames: ['endpoint'] as const,
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    });
    this.#decisionDelay = new Histogram({
      name: 'corral_autoscaler_decision_delay_seconds',
      help: "Time from a scaling policy's threshold being crossed to the decision that acts on it",
      labelNames: ['endpoint'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    const load = options.load;
    new Gauge({
      name: 'corral_gateway_queue_depth',
      help: 'Requests waiting for a worker slot',
      labelNames: ['endpoint'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of load()) this.set({ endpoint: s.endpointId }, s.queueLength);
      },
    });
    new Gauge({
      name: 'corral_gateway_in_flight',
      help: 'Requests being served by workers',
      labelNames: ['endpoint'] as const,
      registers,
      collect() {
        this.reset();
        for (const s of load()) this.set({ endpoint: s.endpointId }, s.inFlight);
      },
    });
  }

  observeRequest(endpoint: string, status: number, durationMs: number, queueMs: number): void {
    let children = this.#children.get(endpoint);
    if (!children) {
      children = {
        latency: this.#latency.labels({ endpoint }),
        queueWait: this.#queueWait.labels({ endpoint }),
        byStatus: new Map(),
      };
      this.#children.set(endpoint, children);
    }
    let counter = children.byStatus.get(status);
    if (!counter) {
      counter = this.#requests.labels({ endpoint, status: String(status) });
      children.byStatus.set(status, counter);
    }
    counter.inc();
    children.latency.observe(durationMs / 1000);
    children.queueWait.observe(queueMs / 1000);
  }

  observeColdStart(endpoint: string, ms: number): void {
    this.#coldStarts.observe({ endpoint }, ms / 1000);
  }

  /** Records, once per threshold crossing, how long after it the decision came. */
  observeScaleDecision(endpoint: string, decision: ScalingDecision, now: number): void {
    const crossed = decision.thresholdCrossedAt;
    if (crossed === null || crossed > now || this.#lastThreshold.get(endpoint) === crossed) return;
    this.#lastThreshold.set(endpoint, crossed);
    this.#decisionDelay.observe({ endpoint }, (now - crossed) / 1000);
  }
}
