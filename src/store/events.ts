/** The `endpoint_events` table: each endpoint's log of changes and state reports. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

/**
 * Every kind of event an endpoint's log records: the API's changes (created, updated, stopped, started, deleted)
 * and the controller's `state` changes, exits of its workers (`crashed`, out of memory among them), workers it
 * failed (`failed`) and the causes of failing health probes (`health`). docs/api.md describes each (a test checks the list).
 */
export const ENDPOINT_EVENT_TYPES = [
  'created',
  'updated',
  'stopped',
  'started',
  'deleted',
  'state',
  'crashed',
  'failed',
  'health',
] as const;

export type EndpointEventType = (typeof ENDPOINT_EVENT_TYPES)[number];

export interface NewEvent {
  at: number;
  type: EndpointEventType;
  message: string;
  data?: Record<string, unknown>;
}

/** A recorded event. Its type is read as a plain string: a newer server sharing the database may know more. */
export interface StoredEvent extends Omit<Required<NewEvent>, 'type'> {
  id: number;
  type: string;
}

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
