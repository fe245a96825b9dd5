/** The `endpoint_events` table: each endpoint's log of changes and state reports. */
import type { Kysely, Transaction } from 'kysely';
import type { NewEvent, StoredEvent } from '../../domain/records.js';
import type { Database } from '../schema.js';

export async function insertEvents(
  trx: Transaction<Database>,
  endpointId: string,
  events: NewEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await trx
    .insertInto('endpoint_events')
    .values(
      events.map((e) => ({
        endpoint_id: endpointId,
        at: e.at,
        type: e.type,
        message: e.message,
        data: JSON.stringify(e.data ?? {}),
      })),
    )
    .execute();
}

export class EventRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  async append(endpointId: string, events: NewEvent[]): Promise<void> {
    await this.#db.transaction().execute((trx) => insertEvents(trx, endpointId, events));
  }

  /** Oldest first, after the event id `afterId` (0 for the beginning). */
  async list(endpointId: string, options: { afterId: number; limit: number }): Promise<StoredEvent[]> {
    const rows = await this.#db
      .selectFrom('endpoint_events')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .where('id', '>', options.afterId)
      .orderBy('id')
      .limit(options.limit)
      .execute();
    return rows.map((r) => ({
      id: Number(r.id),
      at: Number(r.at),
      type: r.type,
      message: r.message,
      data: JSON.parse(r.data) as Record<string, unknown>,
    }));
  }
}
