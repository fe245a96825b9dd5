/**
 * What the API, the jobs side and the traffic side of `corral serve` share, each built once: the secret box, the
 * usage ledger's reader, the services (quotas, credentials, secrets, invoke keys, budgets), the model cache, the
 * metrics registry, the jobs' webhooks, the private-image guard; and this replica's id and, with several replicas,
 * its shared traffic.
 */
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import { SecretBox } from '../crypto/secret-box.js';
import { systemClock } from '../ports/clock.js';
import { newReplicaId } from '../service/ids.js';
import { ModelAccess } from '../service/model-access.js';
import type { Store } from '../store/store.js';
import { LedgerReader } from '../usage/ledger-reader.js';
import { type ApiServices, apiServices } from './build-api.js';
import type { Machine } from './build-machine.js';
import { buildModelCache } from './build-model-cache.js';
import { type SharedTrafficParts, sharedTrafficOf } from './build-replica.js';
import { buildWebhooks } from './build-webhooks.js';
import { imageAccessGuard } from './image-guard.js';
import { namedModels } from './model-users.js';

/** The services the API, the jobs and the traffic side share, each built once, and this replica's own parts. */
export interface Shared {
  secrets: SecretBox;
  usage: LedgerReader;
  services: ApiServices;
  modelCache: ReturnType<typeof buildModelCache>;
  modelAccess: ModelAccess;
  /** One registry for every role of this process (`/metrics`). */
  registry: Registry;
  jobWebhooks: ReturnType<typeof buildWebhooks>;
  imageGuard: ReturnType<typeof imageAccessGuard>;
  replicaId: string;
  /** Several replicas (PostgreSQL): the shared traffic and the parts it adds to the traffic side; else none. */
  replicaParts: SharedTrafficParts | undefined;
}

export function buildShared(options: {
  config: Config;
  store: Store;
  machine: Machine;
  secretKey: Buffer;
  logger: Logger;
}): Shared {
  const { config, store, machine, logger } = options;
  const secrets = new SecretBox({ key: options.secretKey });
  // Budgets read the usage ledger (cached per owner for a few seconds); the reader prices its sums.
  const usage = new LedgerReader({ segments: store.usageSegments, prices: config.usage, clock: systemClock });
  const services = apiServices({
    config,
    store,
    gpus: machine.gpus,
    secrets,
    gpuScheduler: machine.runtime.gpuScheduler,
    usage,
    onBudgetReadError: (error, ownerId) =>
      logger.warn({ err: error, ownerId }, 'could not read an owner budget from the usage ledger'),
  });
  const { ownerSecrets } = services;
  // The machine's model cache (issue 34): endpoints' models checked at create, fetched before a worker holds a GPU.
  const modelCache = buildModelCache({
    config,
    logger,
    namedModels: () => namedModels(store),
  });
  const modelAccess = new ModelAccess({
    cache: modelCache,
    secretValue: (ownerId, name) => ownerSecrets.value(ownerId, name),
  });
  // Jobs' webhooks: `jobWebhooks.webhooks` (checkTarget, enqueue) is what the jobs core is handed.
  const registry = new Registry();
  const jobWebhooks = buildWebhooks({
    config,
    store,
    secrets: services.webhookSecrets,
    logger: logger.child({ part: 'webhooks' }),
    registry,
  });
  const imageGuard = imageAccessGuard(machine.runtime, config, services.credentials);
  const replicaId = newReplicaId();
  const replicaParts = sharedTrafficOf({ store, replicaId, logger });
  // The process's own memory, CPU, event-loop delay and GC, beside Corral's metrics.
  collectDefaultMetrics({ register: registry });
  return {
    secrets,
    usage,
    services,
    modelCache,
    modelAccess,
    registry,
    jobWebhooks,
    imageGuard,
    replicaId,
    replicaParts,
  };
}
