/**
 * Jobs' webhook deliveries in `/metrics` (docs/jobs.md, Watching jobs): each attempt by endpoint and how it ended,
 * counted by the replica that made it. Deliveries are few (one per finished job with a webhook): prom-client's own
 * labels cost nothing that matters.
 */
import { Counter, type Registry } from 'prom-client';
import type { WebhookOutcome } from './outbox.js';

export class WebhookMetrics {
  readonly #attempts: Counter<'endpoint' | 'outcome'>;

  constructor(options: { registry: Registry }) {
    this.#attempts = new Counter({
      name: 'corral_job_webhook_attempts_total',
      help: "Attempts to deliver a job's webhook, by endpoint and outcome: delivered (a 2xx), retrying (failed, tried again later), given_up (failed, the last attempt), refused (target not allowed, nothing posted)",
      labelNames: ['endpoint', 'outcome'] as const,
      registers: [options.registry],
    });
  }

  observe(endpointId: string, outcome: WebhookOutcome): void {
    this.#attempts.inc({ endpoint: endpointId, outcome });
  }
}
