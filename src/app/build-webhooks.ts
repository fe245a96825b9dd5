/**
 * Builds the jobs' webhooks for `corral serve`: the outbox over the store, signing with each endpoint's secret
 * (the webhook-secret service), the target policy from the configuration, and `JobWebhooks`, what the jobs core
 * is handed (ports/job-webhooks.ts). `start` forgets the secrets of deleted endpoints and starts the sweeps.
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import { type Clock, systemClock, systemTimers, type Timers } from '../ports/clock.js';
import type { JobWebhooks } from '../ports/job-webhooks.js';
import type { WebhookSecretService } from '../service/webhook-secret-service.js';
import type { Store } from '../store/store.js';
import { type WebhookLogger, WebhookOutbox } from '../webhooks/outbox.js';
import { checkWebhookTarget, type LookupAll } from '../webhooks/target-guard.js';
import { WebhookMetrics } from '../webhooks/webhook-metrics.js';

export interface BuiltWebhooks {
  webhooks: JobWebhooks;
  outbox: WebhookOutbox;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function buildWebhooks(options: {
  config: Pick<Config, 'webhooks'>;
  store: Store;
  secrets: Pick<WebhookSecretService, 'secretOf'>;
  logger: WebhookLogger;
  clock?: Clock;
  timers?: Timers;
  lookupAll?: LookupAll;
  /** Where the deliveries' attempts are counted (the registry `/metrics` serves); none: not counted. */
  registry?: Registry;
}): BuiltWebhooks {
  const { config, store, secrets, logger, lookupAll } = options;
  const policy = { allowPrivate: config.webhooks.allowPrivate };
  const metrics = options.registry ? new WebhookMetrics({ registry: options.registry }) : undefined;
  const outbox = new WebhookOutbox({
    deliveries: store.webhookDeliveries,
    secretOf: (endpointId, ownerId) => secrets.secretOf(endpointId, ownerId),
    policy,
    clock: options.clock ?? systemClock,
    timers: options.timers ?? systemTimers,
    logger,
    ...(lookupAll ? { lookupAll } : {}),
    ...(metrics ? { onOutcome: (endpointId, outcome) => metrics.observe(endpointId, outcome) } : {}),
  });
  return {
    outbox,
    webhooks: {
      checkTarget: (url) => checkWebhookTarget(url, policy, lookupAll),
      enqueue: (request) => outbox.enqueue(request),
    },
    async start() {
      await store.webhookSecrets.deleteOfGoneEndpoints();
      outbox.start();
    },
    stop: () => outbox.stop(),
  };
}
