/** What `corral serve` finds out and warns of at start: the GPU inventory, and tenants' endpoints on the local runtime. */
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { detectGpus } from '../gpu/detect.js';
import { type Gpu, simulatedInventory } from '../gpu/inventory.js';
import type { WorkerRuntime } from '../runtime/types.js';
import { endpointsOfNonAdminOwners } from '../service/tenant-endpoints.js';
import type { Store } from '../store/store.js';

/** The GPUs workers are placed on: simulated ones (--gpus), or those nvidia-smi lists. */
export async function inventoryFor(config: Config, logger: Logger): Promise<Gpu[]> {
  if (config.gpus.kind === 'simulated') return simulatedInventory(config.gpus.groups);
  const detected = await detectGpus();
  if (detected.problem) {
    logger.warn(
      { problem: detected.problem },
      'no GPUs found; endpoints cannot be placed (simulate some with --gpus h100-80g:8)',
    );
  }
  return detected.gpus;
}

/** Endpoints made before by owners without an admin key would run as host processes on the local runtime. */
export async function warnOfTenantEndpoints(store: Store, logger: Logger): Promise<void> {
  const endpoints = await endpointsOfNonAdminOwners(store);
  if (endpoints.length === 0) return;
  logger.warn(
    { count: endpoints.length, endpoints: endpoints.slice(0, 20) },
    'endpoints of owners without an admin key exist; on the local runtime their workers run as host processes ' +
      "with Corral's rights: stop or delete them unless you trust their owners",
  );
}

/** Says at start-up which idle tiers this runtime offers, and why one is off (docs/workers.md, Idle tiers). */
export function logIdleTiers(runtime: WorkerRuntime, off: string | undefined, logger: Logger): void {
  const suspendable = runtime.idleTiers?.suspendable;
  // Where the freezer is weaker than a cgroup's (the local runtime without a writable cgroup), why.
  const freezerNote = runtime.idleTiers?.freezerNote;
  const freezer = freezerNote === undefined ? {} : { freezer: freezerNote };
  if (off !== undefined) logger.info({ runtime: runtime.name, reason: off }, 'idle tiers off');
  else if (suspendable && !suspendable.available)
    logger.info(
      { runtime: runtime.name, frozen: true, suspended: false, reason: suspendable.reason, ...freezer },
      'idle tiers: frozen only; the suspended tier is off',
    );
  else
    logger.info(
      { runtime: runtime.name, frozen: true, suspended: true, ...freezer },
      'idle tiers: frozen and suspended',
    );
}
