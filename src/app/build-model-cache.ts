/**
 * Builds the machine's model cache (models/, docs/models.md) from the config: the hub cache directory under the data
 * directory (`{dataDir}/models/hub`), the hub it fetches from (`models.hubUrl`), its disk budget, and the models
 * endpoints name (kept from eviction), which the caller reads from the store.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { HubModelCache } from '../models/hub-cache.js';
import { HubClient } from '../models/hub-client.js';
import { systemClock } from '../ports/clock.js';

/** Where the cache lives under the data directory: `models--*` directories go in here. */
export function modelHubDir(dataDir: string): string {
  return join(dataDir, 'models', 'hub');
}

export function buildModelCache(options: {
  config: Pick<Config, 'dataDir' | 'models'>;
  logger: Logger;
  namedModels: () => Promise<ReadonlySet<string>>;
}): HubModelCache {
  return new HubModelCache({
    hubDir: modelHubDir(options.config.dataDir),
    client: new HubClient({ hubUrl: options.config.models.hubUrl }),
    clock: systemClock,
    logger: options.logger.child({ component: 'model-cache' }),
    diskBudgetBytes: options.config.models.diskBudgetBytes,
    namedModels: options.namedModels,
  });
}
