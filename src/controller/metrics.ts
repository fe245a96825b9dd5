/** The controller's Prometheus metrics: workers by state, starts, failures by code and time to running. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { WORKER_STATES, type WorkerState } from '../domain/worker.js';

/** The controller's Prometheus metrics, registered on the registry that /metrics serves. */
export class ControllerMetrics {
  readonly starts: Counter<'runtime'>;
  readonly failures: Counter<'code'>;
  readonly timeToReady: Histogram;

  /** `workerStates`: read at scrape time for corral_workers (none: every count 0). */
  constructor(options: { registry: Registry; runtime: string; workerStates?: () => Iterable<WorkerState> }) {
    const registers = [options.registry];
    const workerStates = options.workerStates ?? (() => []);
    new Gauge({
      name: 'corral_workers',
      help: 'Workers by state',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const counts = new Map<WorkerState, number>(WORKER_STATES.map((s) => [s, 0]));
        for (const state of workerStates()) counts.set(state, (counts.get(state) ?? 0) + 1);
        for (const [state, n] of counts) this.set({ state }, n);
      },
    });
    this.starts = new Counter({
      name: 'corral_worker_starts_total',
      help: 'Worker containers started',
      labelNames: ['runtime'] as const,
      registers,
    });
    this.failures = new Counter({
      name: 'corral_worker_failures_total',
      help: 'Workers failed, by error code',
      labelNames: ['code'] as const,
      registers,
    });
    this.timeToReady = new Histogram({
      name: 'corral_worker_time_to_running_seconds',
      help: 'Time from a worker being decided to its first passing health check',
      buckets: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.starts.inc({ runtime: options.runtime }, 0);
  }
}
