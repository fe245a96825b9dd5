/**
 * The `routes` table: what the leader's controller last published to its routing table, one row per live endpoint
 * (the endpoint as it saw it, its routable workers, its condition), so that every replica's gateway routes every
 * endpoint. Each change takes a sequence number above every row's: a reader lists ids and seqs (cheap) and re-reads
 * only the rows whose seq moved. Writes go in the leader's fenced transaction and send a NOTIFY on PostgreSQL.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, DialectName } from '../schema.js';

/** One endpoint's routing facts as stored; the JSON stays opaque here (cluster/route-codec.ts reads it). */
export interface RouteRow {
  endpointId: string;
  seq: number;
  endpoint: string;
  workers: string;
  condition: string | null;
}

export type RouteChange = Omit<RouteRow, 'seq'>;

export class RouteRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: DialectName;

  constructor(options: { db: Kysely<Database>; dialect: DialectName }) {
    this.#db = options.db;
    this.#dialect = options.dialect;
  }

  /** Every row's endpoint id and seq. */
  async seqs(): Promise<Map<string, number>> {
    const rows = await this.#db.selectFrom('routes').select(['endpoint_id', 'seq']).execute();
    return new Map(rows.map((r) => [r.endpoint_id, Number(r.seq)]));
  }

  /** The rows of `ids` (those that still exist). */
  async read(ids: readonly string[]): Promise<RouteRow[]> {
    const found: RouteRow[] = [];
    for (let at = 0; at < ids.length; at += 500) {
      const rows = await this.#db
        .selectFrom('routes')
        .selectAll()
        .where('endpoint_id', 'in', ids.slice(at, at + 500))
        .execute();
      for (const r of rows) {
        found.push({
          endpointId: r.endpoint_id,
          seq: Number(r.seq),
          endpoint: r.endpoint,
          workers: r.workers,
          condition: r.condition,
        });
      }
    }
    return found;
  }

  /**
   * Writes the changed rows (each under the next seq) and deletes those of endpoints gone, in `trx` (the leader's
   * fenced transaction), then notifies `channel` (PostgreSQL delivers it at the commit; SQLite has no feed).
   */
  async write(
    trx: Transaction<Database>,
    changes: { upsert: readonly RouteChange[]; remove: readonly string[] },
    channel: string,
  ): Promise<void> {
    if (changes.remove.length > 0)
      await trx.deleteFrom('routes').where('endpoint_id', 'in', changes.remove).execute();
    if (changes.upsert.length > 0) {
      const top = await trx
        .selectFrom('routes')
        .select((eb) => eb.fn.max('seq').as('seq'))
        .executeTakeFirst();
      let seq = Number(top?.seq ?? 0);
      for (const change of changes.upsert) {
        seq += 1;
        const values = {
          seq,
          endpoint: change.endpoint,
          workers: change.workers,
          condition: change.condition,
        };
        await trx
          .insertInto('routes')
          .values({ endpoint_id: change.endpointId, ...values })
          .onConflict((oc) => oc.column('endpoint_id').doUpdateSet(values))
          .execute();
      }
    }
    if (this.#dialect === 'postgres') await sql`select pg_notify(${channel}, '')`.execute(trx);
  }
}
