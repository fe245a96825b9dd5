/** The API's own Prometheus metrics (requests and latency per route); the gateway and controller keep theirs. */
import { Counter, Histogram, Registry } from 'prom-client';

/** The API's Prometheus metrics, on the registry /metrics serves (never prom-client's global one). */
export class ApiMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'route' | 'method' | 'status'>;
  readonly duration: Histogram<'route'>;

  constructor(options: { registry?: Registry } = {}) {
    this.registry = options.registry ?? new Registry();
    this.requests = new Counter({
      name: 'corral_api_requests_total',
      help: 'API requests by route, method and status code',
      labelNames: ['route', 'method', 'status'] as const,
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'corral_api_request_duration_seconds',
      help: 'API request duration by route',
      labelNames: ['route'] as const,
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [this.registry],
    });
  }
}
