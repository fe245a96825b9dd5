/**
 * What the usage ledger is told of a worker (ports/usage.ts): its state as the ledger counts it, and what it holds.
 * Counted from placement (its GPUs given, or its pod handed to the runtime's scheduler) until it stops or fails:
 * a worker waiting for Corral's placement holds nothing yet. `usageReporter` tells it to the ledger's sink.
 */
import type { Endpoint } from '../../domain/endpoint.js';
import type { WorkerState } from '../../domain/worker.js';
import type { Gpu } from '../../gpu/inventory.js';
import type { WorkerHolding, WorkerUsageSink, WorkerUsageState } from '../../ports/usage.js';
import type { ManagedWorker } from '../workers/managed-worker.js';
import { memoryLimitBytes } from '../workers/worker-spec.js';

/** `running`, `unhealthy` and `draining` are told as `idle`: the ledger makes it active while work is in flight. */
const USAGE_OF: Record<WorkerState, WorkerUsageState> = {
  pending: 'starting',
  pulling: 'starting',
  starting: 'starting',
  running: 'idle',
  unhealthy: 'idle',
  draining: 'idle',
  frozen: 'frozen',
  suspended: 'suspended',
  stopped: 'closed',
  failed: 'closed',
  // Its models fetched before a GPU is held (issue 34): counted, priced at 0 by default.
  downloading: 'downloading',
};

export function usageStateOf(record: Pick<ManagedWorker, 'state' | 'inRuntime'>): WorkerUsageState {
  if (record.state === 'pending' && record.inRuntime !== true) return 'closed';
  return USAGE_OF[record.state];
}

export interface HoldingContext {
  /** GPU uuid -> its product id (Corral's inventory; empty where the runtime's scheduler places). */
  productOf: ReadonlyMap<string, string>;
  memoryGBPerGpu: number | undefined;
}

export function holdingOf(
  record: ManagedWorker,
  endpoint: Endpoint | undefined,
  context: HoldingContext,
): WorkerHolding {
  // A suspended worker's GPUs are those it restores onto; its GPU state lies in host memory meanwhile.
  const gpuUuids = record.gpuUuids.length > 0 ? record.gpuUuids : (record.suspendedOn?.gpuUuids ?? []);
  const checkpointed =
    record.state === 'suspended'
      ? Object.values(record.suspendedOn?.gpuBytes ?? {}).reduce((sum, bytes) => sum + bytes, 0)
      : 0;
  const first = gpuUuids[0];
  return {
    workerId: record.id,
    ownerId: record.ownerId,
    endpointId: record.endpointId,
    gpuProductId:
      (first === undefined ? undefined : context.productOf.get(first)) ?? endpoint?.spec.productIds[0] ?? '',
    gpuCount: gpuUuids.length,
    hostMemoryBytes: (memoryLimitBytes(gpuUuids.length, context.memoryGBPerGpu) ?? 0) + checkpointed,
  };
}

/**
 * What the ledger is told of a worker's change (the lifecycle's `onUsage`): its state and holding, `closed` once it
 * is forgotten (`gone`). `gpus`: Corral's inventory; `endpointOf`: the live endpoint as of the last pass.
 */
export function usageReporter(
  sink: WorkerUsageSink,
  gpus: readonly Pick<Gpu, 'uuid' | 'productId'>[],
  memoryGBPerGpu: number | undefined,
  endpointOf: (endpointId: string) => Endpoint | undefined,
): (record: ManagedWorker, at: number, gone?: boolean) => void {
  const context = { productOf: new Map(gpus.map((gpu) => [gpu.uuid, gpu.productId])), memoryGBPerGpu };
  return (record, at, gone) => {
    const holding = holdingOf(record, endpointOf(record.endpointId), context);
    sink.workerState(holding, gone ? 'closed' : usageStateOf(record), at);
  };
}
