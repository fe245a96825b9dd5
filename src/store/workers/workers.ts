/** The `workers` table: each worker as the controller reports it; the API reads it, only the controller writes. */
import type { Insertable, Kysely, Selectable } from 'kysely';
import type { Page } from '../../domain/records.js';
import type { Worker, WorkerState } from '../../domain/worker.js';
import { type AuditEntry, insertAudit } from '../audit.js';
import { endpointPageIds } from '../endpoints/endpoints.js';
import type { Database, WorkersTable } from '../schema.js';

/** The controller's report of each worker; the API reads it, only the controller writes it. */
export class WorkerRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  async upsert(worker: Worker): Promise<void> {
    const row = toRow(worker);
    const { id: _id, created_at: _created, ...changes } = row;
    await this.#db
      .insertInto('workers')
      .values(row)
      .onConflict((oc) => oc.column('id').doUpdateSet(changes))
      .execute();
  }

  async delete(id: string): Promise<void> {
    await this.#db.deleteFrom('workers').where('id', '=', id).execute();
  }

  /** Oldest first. */
  async listByEndpoint(endpointId: string): Promise<Worker[]> {
    const rows = await this.#db
      .selectFrom('workers')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(fromRow);
  }

  /**
   * The workers of one page of an owner's endpoints (the page `EndpointRepository.list` returns for the same
   * arguments), keyed by endpoint id, in one query that needs no result of the page's own.
   */
  async listForEndpointPage(ownerId: string, page: Page): Promise<Map<string, Worker[]>> {
    const rows = await this.#db
      .selectFrom('workers')
      .selectAll()
      .where('endpoint_id', 'in', endpointPageIds(this.#db, ownerId, page))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const byEndpoint = new Map<string, Worker[]>();
    for (const row of rows) {
      const list = byEndpoint.get(row.endpoint_id);
      if (list) list.push(fromRow(row));
      else byEndpoint.set(row.endpoint_id, [fromRow(row)]);
    }
    return byEndpoint;
  }

  /**
   * The rows that hold GPUs or wait for some (`pending`), oldest first: what a replica that does not lead shows of
   * the GPUs (cluster/stored-gpus.ts). Bounded by the GPUs and the waiting workers, not by every failed row kept.
   */
  async listHoldingOrWaiting(): Promise<Worker[]> {
    const rows = await this.#db
      .selectFrom('workers')
      .selectAll()
      .where((eb) => eb.or([eb('gpu_uuids', '<>', EMPTY_GPUS), eb('state', '=', 'pending')]))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(fromRow);
  }

  async listAll(): Promise<Worker[]> {
    return (await this.#db.selectFrom('workers').selectAll().orderBy('created_at').execute()).map(fromRow);
  }

  /**
   * Drains (or undrains) one of the owner's workers, with the audit entry, in one transaction; the controller
   * acts on it at its next pass. Undefined when the owner has no worker of that id. The controller's upserts
   * leave the flag alone, and it goes with the row once the worker is removed.
   */
  async requestDrain(
    ownerId: string,
    workerId: string,
    drain: boolean,
    audit: AuditEntry,
  ): Promise<Worker | undefined> {
    return this.#db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('workers')
        .set({ drain_requested: drain ? 1 : 0 })
        .where('id', '=', workerId)
        .where('owner_id', '=', ownerId)
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      await insertAudit(trx, audit);
      return fromRow(row);
    });
  }

  /** Ids of the workers their owners drained (and did not undrain since); the controller reads it every pass. */
  async drainRequested(): Promise<Set<string>> {
    const rows = await this.#db.selectFrom('workers').select('id').where('drain_requested', '=', 1).execute();
    return new Set(rows.map((r) => r.id));
  }

  async get(id: string): Promise<Worker | undefined> {
    const row = await this.#db.selectFrom('workers').selectAll().where('id', '=', id).executeTakeFirst();
    return row && fromRow(row);
  }
}

/** `gpu_uuids` of a worker that holds none, as `toRow` writes it. */
const EMPTY_GPUS = JSON.stringify([]);

function toRow(worker: Worker): Insertable<WorkersTable> {
  return {
    id: worker.id,
    endpoint_id: worker.endpointId,
    owner_id: worker.ownerId,
    revision: worker.revision,
    state: worker.status.state,
    state_error: worker.status.error,
    state_message: worker.status.message,
    healthy: worker.healthy ? 1 : 0,
    gpu_uuids: JSON.stringify(worker.gpuUuids),
    address: worker.address === null ? null : JSON.stringify(worker.address),
    created_at: worker.createdAt,
    updated_at: worker.updatedAt,
    ready_at: worker.readyAt,
  };
}

function fromRow(row: Selectable<WorkersTable>): Worker {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    ownerId: row.owner_id,
    revision: row.revision,
    status: { state: row.state as WorkerState, error: row.state_error, message: row.state_message },
    healthy: Number(row.healthy) === 1,
    gpuUuids: JSON.parse(row.gpu_uuids) as string[],
    address: row.address === null ? null : (JSON.parse(row.address) as { host: string; port: number }),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    readyAt: row.ready_at === null ? null : Number(row.ready_at),
    drainRequested: Number(row.drain_requested) === 1,
  };
}
