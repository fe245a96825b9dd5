/**
 * The `history_samples` table: each replica's history samples (one row per endpoint and slot, its figures an opaque
 * payload the gateway encodes), written once per interval in one statement, read per endpoint by whichever replica
 * answers the history, and pruned past the history's length (history/cluster-history.ts).
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

/** One row as a replica writes it. */
export interface HistorySampleWrite {
  endpointId: string;
  slot: number;
  /** The fencing token of the term it led when it sampled; null: it did not lead. */
  term: number | null;
  payload: string;
}

/** One row as read: whose it is, its slot, its term and its payload. */
export interface HistorySampleRow {
  replicaId: string;
  slot: number;
  term: number | null;
  payload: string;
}

/** Rows per INSERT: 5 parameters each, far below PostgreSQL's 65,535 and SQLite's 32,766. */
const BATCH = 1000;

export class HistorySampleRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /** Writes the replica's rows (a row written again for its slot replaces the first). */
  async write(replicaId: string, rows: readonly HistorySampleWrite[]): Promise<void> {
    for (let from = 0; from < rows.length; from += BATCH) {
      const values = rows.slice(from, from + BATCH).map((r) => ({
        endpoint_id: r.endpointId,
        slot: r.slot,
        replica_id: replicaId,
        term: r.term,
        payload: r.payload,
      }));
      await this.#db
        .insertInto('history_samples')
        .values(values)
        .onConflict((oc) =>
          oc.columns(['endpoint_id', 'slot', 'replica_id']).doUpdateSet((eb) => ({
            term: eb.ref('excluded.term'),
            payload: eb.ref('excluded.payload'),
          })),
        )
        .execute();
    }
  }

  /** Every replica's rows of the endpoint with a slot in [from, to], oldest first. */
  async read(endpointId: string, from: number, to: number): Promise<HistorySampleRow[]> {
    const rows = await this.#db
      .selectFrom('history_samples')
      .select(['replica_id', 'slot', 'term', 'payload'])
      .where('endpoint_id', '=', endpointId)
      .where('slot', '>=', from)
      .where('slot', '<=', to)
      .orderBy('slot')
      .execute();
    return rows.map((r) => ({
      replicaId: r.replica_id,
      slot: Number(r.slot),
      term: r.term === null ? null : Number(r.term),
      payload: r.payload,
    }));
  }

  /** Deletes the rows of slots before `before` (past the history's length); returns how many went. */
  async prune(before: number): Promise<number> {
    const result = await this.#db.deleteFrom('history_samples').where('slot', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
