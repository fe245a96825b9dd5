/**
 * The controller's write-back to the store at the end of a pass: the worker rows its records changed (deleted for
 * records it forgot), and each endpoint's status where it differs from the stored one, with a state event.
 */
import type { Endpoint } from '../domain/endpoint.js';
import type { Store } from '../store/store.js';
import { WorkerRepository } from '../store/workers/workers.js';
import type { WriteFence } from './controller-options.js';
import { type ManagedWorker, toWorker } from './workers/managed-worker.js';

type Status = Endpoint['status'];

/** What the worker rows' writes take of the store: the rows, and the leases that fence them. */
export type WorkerRowStore = Pick<Store, 'workers' | 'leases'>;

/**
 * Writes (or deletes) the row of every worker id in `dirty`, emptying it as it goes. Reconciles of several
 * endpoints report at once: an id another one took meanwhile is its to write.
 */
export async function writeWorkers(
  store: WorkerRowStore,
  dirty: Set<string>,
  recordOf: (workerId: string) => ManagedWorker | undefined,
  now: number,
  fence?: WriteFence,
): Promise<void> {
  if (dirty.size === 0) return;
  await fencedWorkerWrites(store, fence, async (workers) => {
    for (const id of [...dirty]) {
      if (!dirty.delete(id)) continue;
      const record = recordOf(id);
      if (record) await workers.upsert(toWorker(record, now));
      else await workers.delete(id);
    }
  });
}

/**
 * Runs the controller's writes to the workers table: as they are with one process, and under a leader's fence in
 * one transaction that the database refuses (LeaseLostError) once the term is over.
 */
export async function fencedWorkerWrites(
  store: WorkerRowStore,
  fence: WriteFence | undefined,
  write: (workers: WorkerRepository) => Promise<void>,
): Promise<void> {
  if (!fence) return write(store.workers);
  await store.leases.fenced(fence.claim(), (trx) => write(new WorkerRepository({ db: trx })));
}

/** Rows left by a previous run for workers the runtime no longer has (`observed`: what it has) are deleted. */
export async function deleteStaleRows(
  store: WorkerRowStore,
  fence: WriteFence | undefined,
  observed: readonly { workerId: string }[],
): Promise<void> {
  const present = new Set(observed.map((w) => w.workerId));
  const stale = (await store.workers.listAll()).filter((row) => !present.has(row.id));
  if (stale.length === 0) return;
  await fencedWorkerWrites(store, fence, async (workers) => {
    for (const row of stale) await workers.delete(row.id);
  });
}

/** Reports each endpoint's new status (`statusOf`) where it changed, with a `state` event naming it. */
export async function writeStatuses(
  store: Pick<Store, 'endpoints'>,
  endpoints: readonly Endpoint[],
  now: number,
  statusOf: (endpoint: Endpoint) => Status,
): Promise<void> {
  for (const endpoint of endpoints) {
    const status = statusOf(endpoint);
    if (sameStatus(status, endpoint.status)) continue;
    await store.endpoints.reportStatus(endpoint.id, status, {
      at: now,
      type: 'state',
      message: `${status.state}${status.error ? ` (${status.error})` : ''}: ${status.message}`,
      data: { state: status.state, error: status.error },
    });
  }
}

function sameStatus(a: Status, b: Status): boolean {
  return a.state === b.state && a.error === b.error && a.message === b.message;
}
