/**
 * Who holds each GPU and which workers wait for one, as the `workers` rows say: what a replica that does not lead
 * shows in `GET gpus` and `GET products`' `gpusFree` (docs/operations.md). Pure: rows in, view out; `stored-gpus.ts`
 * reads the rows.
 *
 * The leader's controller writes a row for each record it keeps, with the GPUs the record holds, at the end of each
 * pass, and deletes it once it forgets the record; so the rows mirror its `heldGpus()`: a placed worker holds its
 * GPUs from its placement, a draining or stopped one until its container is removed (then the row goes), a failed
 * one until its container is gone (then its row names no GPU). What the rows cannot show is the controller's GPU
 * ledger beyond its records (controller/placement/gpu-ledger.ts): the GPUs of a create or a removal still under way whose
 * record was already forgotten (a failed record trimmed while its container is removed). A follower shows those free
 * while the leader counts them held, for as long as that removal lasts.
 */
import type { Worker } from '../domain/worker.js';
import type { PlacedWorker } from '../service/gpu-report.js';

/** The GPUs' holders and the workers placed or waiting, as `GpuSnapshot` has them (service/gpu-report.ts). */
export interface GpuHolds {
  /** Oldest first. */
  workers: PlacedWorker[];
  /** GPU uuid -> the worker holding it. */
  held: ReadonlyMap<string, string>;
}

export const NO_GPU_HOLDS: GpuHolds = { workers: [], held: new Map() };

/**
 * The holds that `rows` say: every row that names GPUs holds them, whatever its state, as the leader's records do.
 * `rows` may be any set that includes every row naming GPUs and every pending one (`listHoldingOrWaiting`). Two rows
 * naming one GPU (one left by a deposed leader, until its successor's first pass clears it): the newer worker holds
 * it, as the leader's newer record would.
 */
export function gpuHoldsOf(rows: readonly Worker[]): GpuHolds {
  const workers = rows
    .map(
      (row): PlacedWorker => ({
        id: row.id,
        endpointId: row.endpointId,
        ownerId: row.ownerId,
        state: row.status.state,
        message: row.status.message,
        gpuUuids: [...row.gpuUuids],
        createdAt: row.createdAt,
      }),
    )
    .sort((a, b) => a.createdAt - b.createdAt || compare(a.id, b.id));
  const held = new Map<string, string>();
  for (const worker of workers) for (const uuid of worker.gpuUuids) held.set(uuid, worker.id);
  return { workers, held };
}

function compare(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}
