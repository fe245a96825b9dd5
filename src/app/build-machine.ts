/**
 * This machine as `corral serve` finds it: the GPU checkpointer (whether idle workers can be suspended on the GPU),
 * the runtime the configuration chooses (with the worker-facing listener's place fixed before it starts), the GPU
 * inventory, and what the runtime cannot offer (idle tiers, queue endpoints), each logged once.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { UnavailableCheckpointer } from '../gpu/checkpoint/unavailable-checkpointer.js';
import type { Gpu } from '../gpu/inventory.js';
import type { GpuCheckpointer } from '../ports/gpu-checkpoint.js';
import { idleTiersOff } from '../runtime/idle-tiers.js';
import { selectRuntime } from '../runtime/select.js';
import type { WorkerRuntime } from '../runtime/types.js';
import type { Store } from '../store/store.js';
import { gpuCheckpointFor } from './gpu-checkpoint.js';
import { namedModels } from './model-users.js';
import { inventoryFor, logIdleTiers, warnOfTenantEndpoints } from './startup-checks.js';
import { kubernetesWorkersUnreachable } from './worker-facing-url.js';
import { placeWorkerListener, type WorkerListenerPlace } from './worker-listener-place.js';

/** This machine: the GPU checkpointer, the runtime, the GPUs, and what the runtime cannot offer. */
export interface Machine {
  installationId: string;
  runtime: WorkerRuntime;
  place: WorkerListenerPlace;
  gpus: Gpu[];
  /** Why the runtime has no idle tiers; undefined: it has them. */
  tiersOff: string | undefined;
  /** Why queue endpoints are refused (Kubernetes workers could not reach this replica); undefined: served. */
  queueOff: string | undefined;
}

export async function buildMachine(
  config: Config,
  store: Store,
  installationId: string,
  logger: Logger,
  closers: (() => Promise<void>)[],
): Promise<Machine> {
  // Whether idle workers can be suspended on the GPU (issue 24), asked of the driver while the runtime starts.
  const gpuCheckpoint = await gpuCheckpointFor({ gpus: config.gpus, runtime: config.runtime, logger });
  const { availability } = gpuCheckpoint;
  // Closed after the runtime (closers run in reverse): its helper process ends last.
  closers.push(async () => gpuCheckpoint.close());
  const checkpointer =
    gpuCheckpoint.checkpointer ??
    new UnavailableCheckpointer(availability.available ? 'no GPU checkpointer' : availability.reason);
  // On Docker the worker-facing listener's port is fixed before the runtime opens the host guard's hole for it.
  const place = await placeWorkerListener({ listen: config.workers.listen, runtimeChoice: config.runtime });
  const runtime = await runtimeFor(config, installationId, logger, checkpointer, place, store);
  closers.push(() => runtime.close());
  // Where the runtime's scheduler places workers, Corral keeps no GPU inventory of its own.
  if (runtime.gpuScheduler && config.gpus.kind === 'simulated')
    logger.warn("--gpus is ignored: the runtime's scheduler places workers on the cluster's GPUs");
  const gpus = runtime.gpuScheduler ? [] : await inventoryFor(config, logger);
  if (runtime.name === 'local') await warnOfTenantEndpoints(store, logger);
  const tiersOff = idleTiersOff(runtime);
  logIdleTiers(runtime, tiersOff, logger);
  const queueOff = runtime.name === 'kubernetes' ? kubernetesWorkersUnreachable(config.workers) : undefined;
  if (queueOff !== undefined) logger.warn({ reason: queueOff }, 'queue endpoints are refused');
  return { installationId, runtime, place, gpus, tiersOff, queueOff };
}

/** The runtime the configuration chooses (docker, kubernetes, local), connected or waited for. */
function runtimeFor(
  config: Config,
  installationId: string,
  logger: Logger,
  checkpointer: GpuCheckpointer,
  place: WorkerListenerPlace,
  store: Store,
): Promise<WorkerRuntime> {
  return selectRuntime({
    installationId,
    choice: config.runtime,
    dataDir: config.dataDir,
    logger,
    simulatedGpus: config.gpus.kind === 'simulated',
    sandbox: config.workers.sandbox,
    checkpointer,
    allowRoot: config.localAllowRoot,
    workerListener: { port: place.port, onAddress: (address) => place.onAddress(address) },
    kubernetes: {
      ...(config.kubeconfig === undefined ? {} : { kubeconfig: config.kubeconfig }),
      namespace: config.namespace,
      products: config.products,
      networkStorages: config.networkStorages,
      gpuResource: config.kubernetes.gpuResource,
      terminationGraceSeconds: config.kubernetes.terminationGraceSeconds,
      ...(config.kubernetes.imagePullPolicy === undefined
        ? {}
        : { imagePullPolicy: config.kubernetes.imagePullPolicy }),
      ...(config.workers.memoryGBPerGpu === undefined
        ? {}
        : { memoryGBPerGpu: config.workers.memoryGBPerGpu }),
      capAdd: config.workers.sandbox.capAdd,
      ...(config.kubernetes.nodeAgent === undefined ? {} : { nodeAgent: config.kubernetes.nodeAgent }),
      modelsHubUrl: config.models.hubUrl,
      namedModels: () => namedModels(store),
    },
  });
}
