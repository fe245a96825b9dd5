/**
 * `GET gpus`' use case: the GPU inventory, which worker holds each GPU and the workers waiting for one, as one
 * caller may see them. The inventory and the workers come from a `GpuInventorySource` (app/serve.ts feeds it from the
 * controller, or from the cluster on Kubernetes); the endpoints' names and GPU asks come from the store.
 */
import type { WorkerState } from '../domain/worker.js';
import type { Store } from '../store/store.js';
import type { Principal } from './principal.js';

/** One GPU of the inventory. */
export interface InventoryGpu {
  index: number;
  uuid: string;
  productId: string;
  /** The marketing name, e.g. "NVIDIA H100 80GB HBM3". */
  model: string;
  memoryGB: number;
  simulated: boolean;
  /** The node it is on, where the cluster has several (Kubernetes); absent on one machine. */
  node?: string;
}

/** A worker as the placement sees it: the GPUs it holds, or why it waits for some. */
export interface PlacedWorker {
  id: string;
  endpointId: string;
  ownerId: string;
  state: WorkerState;
  /** Its state's message: for a pending worker, why it is not placed yet. */
  message: string;
  gpuUuids: readonly string[];
  /** When it was decided on (epoch ms): a pending worker waits since then. */
  createdAt: number;
}

/** The GPUs and the workers, now. */
export interface GpuSnapshot {
  gpus: InventoryGpu[];
  workers: PlacedWorker[];
  /** GPU uuid -> the worker holding it, counting creates under way and containers not yet removed. */
  held: ReadonlyMap<string, string>;
}

/** Where the snapshot comes from: the controller's inventory and placement, or a cluster's nodes. */
export interface GpuInventorySource {
  snapshot(): GpuSnapshot | Promise<GpuSnapshot>;
}

export interface GpuHolder {
  workerId: string;
  endpointId: string;
  endpointName: string;
  ownerId: string;
  state: WorkerState | 'removing';
}

export interface ReportedGpu extends InventoryGpu {
  busy: boolean;
  /** Who holds it, where the caller may see it (its own workers; every one for an admin); null otherwise. */
  heldBy: GpuHolder | null;
}

export interface WaitingWorker {
  workerId: string;
  endpointId: string;
  endpointName: string;
  ownerId: string;
  /** Since when it waits (epoch ms). */
  since: number;
  gpuCount: number;
  productIds: string[];
  reason: string;
}

export interface GpuReport {
  /** `all`: an admin sees every owner's workers; `own`: the caller's only, others' GPUs are just busy. */
  scope: 'all' | 'own';
  gpus: ReportedGpu[];
  waiting: WaitingWorker[];
}

/** Reads the snapshot and tells each caller what it may see of it. */
export class GpuReportService {
  readonly #o: { source: GpuInventorySource; store: Pick<Store, 'endpoints'> };

  constructor(options: { source: GpuInventorySource; store: Pick<Store, 'endpoints'> }) {
    this.#o = options;
  }

  async report(principal: Principal): Promise<GpuReport> {
    const snapshot = await this.#o.source.snapshot();
    const visible = (ownerId: string) => principal.admin || ownerId === principal.ownerId;
    const workers = new Map(snapshot.workers.map((w) => [w.id, w]));
    const waiting = snapshot.workers.filter((w) => w.state === 'pending' && visible(w.ownerId));
    const shown = new Set<string>(waiting.map((w) => w.endpointId));
    for (const workerId of snapshot.held.values()) {
      const worker = workers.get(workerId);
      if (worker && visible(worker.ownerId)) shown.add(worker.endpointId);
    }
    const endpoints = new Map(
      (await this.#o.store.endpoints.getMany([...shown])).map(({ endpoint }) => [endpoint.id, endpoint]),
    );
    const nameOf = (id: string) => {
      const spec = endpoints.get(id)?.spec;
      return spec ? spec.name || spec.appName : '';
    };
    return {
      scope: principal.admin ? 'all' : 'own',
      gpus: snapshot.gpus.map((gpu) => {
        const workerId = snapshot.held.get(gpu.uuid);
        if (workerId === undefined) return { ...gpu, busy: false, heldBy: null };
        const worker = workers.get(workerId);
        // A worker the snapshot no longer lists holds its GPUs until its container is gone: an admin sees its id.
        if (!worker) {
          return {
            ...gpu,
            busy: true,
            heldBy: principal.admin
              ? { workerId, endpointId: '', endpointName: '', ownerId: '', state: 'removing' as const }
              : null,
          };
        }
        if (!visible(worker.ownerId)) return { ...gpu, busy: true, heldBy: null };
        return {
          ...gpu,
          busy: true,
          heldBy: {
            workerId,
            endpointId: worker.endpointId,
            endpointName: nameOf(worker.endpointId),
            ownerId: worker.ownerId,
            state: worker.state,
          },
        };
      }),
      waiting: waiting
        .sort((a, b) => a.createdAt - b.createdAt)
        .map((w) => {
          const spec = endpoints.get(w.endpointId)?.spec;
          return {
            workerId: w.id,
            endpointId: w.endpointId,
            endpointName: nameOf(w.endpointId),
            ownerId: w.ownerId,
            since: w.createdAt,
            gpuCount: spec?.workers.gpusPerWorker ?? 0,
            productIds: spec?.productIds ?? [],
            reason: w.message,
          };
        }),
    };
  }
}
