/**
 * The `webhook_deliveries` table, the webhooks' outbox: a delivery is written when a job ends and deleted when it is
 * delivered or given up, so one pending when a process dies is found again after a restart. A replica claims a due
 * delivery for a while (`claimed_until`) before it posts, so two replicas never post the same attempt; a claim
 * whose replica died lapses and the delivery is taken again.
 */
import type { Kysely, Selectable } from 'kysely';
import type { Database, WebhookDeliveriesTable } from '../schema.js';

export interface WebhookDeliveryRecord {
  /** The `webhook-id`, the same on every attempt. */
  id: string;
  ownerId: string;
  endpointId: string;
  jobId: string;
  url: string;
  body: string;
  attempts: number;
  nextAt: number;
  lastError: string | null;
  createdAt: number;
}

export class WebhookDeliveryRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /** Adds a delivery; one with the same id is kept as it is (a job's terminal status is enqueued once). */
  async insert(record: WebhookDeliveryRecord): Promise<void> {
    await this.#db
      .insertInto('webhook_deliveries')
      .values({
        id: record.id,
        owner_id: record.ownerId,
        endpoint_id: record.endpointId,
        job_id: record.jobId,
        url: record.url,
        body: record.body,
        attempts: record.attempts,
        next_at: record.nextAt,
        claimed_until: null,
        last_error: record.lastError,
        created_at: record.createdAt,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  /**
   * Claims up to `limit` deliveries due at `now` that nobody holds, until `until`; answers those this caller won
   * (another replica may win some of the same rows: each claim is one conditional update).
   */
  async claimDue(now: number, until: number, limit: number): Promise<WebhookDeliveryRecord[]> {
    const candidates = await this.#db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('next_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now)]))
      .orderBy('next_at')
      .limit(limit)
      .execute();
    const won: WebhookDeliveryRecord[] = [];
    for (const { id } of candidates) {
      const result = await this.#db
        .updateTable('webhook_deliveries')
        .set({ claimed_until: until })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now)]))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) continue;
      const row = await this.#db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst();
      if (row) won.push(fromRow(row));
    }
    return won;
  }

  /** The earliest time a delivery is due, or undefined when the outbox is empty. */
  async nextDueAt(): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('next_at').as('at'))
      .executeTakeFirst();
    return row?.at === null || row?.at === undefined ? undefined : Number(row.at);
  }

  /** Records a failed attempt and releases the claim, with the next attempt due at `nextAt`. */
  async reschedule(id: string, attempts: number, nextAt: number, error: string): Promise<void> {
    await this.#db
      .updateTable('webhook_deliveries')
      .set({ attempts, next_at: nextAt, claimed_until: null, last_error: error })
      .where('id', '=', id)
      .execute();
  }

  /** Removes a delivery that was delivered or given up. */
  async delete(id: string): Promise<void> {
    await this.#db.deleteFrom('webhook_deliveries').where('id', '=', id).execute();
  }

  async get(id: string): Promise<WebhookDeliveryRecord | undefined> {
    const row = await this.#db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && fromRow(row);
  }
}

function fromRow(row: Selectable<WebhookDeliveriesTable>): WebhookDeliveryRecord {
  return {
    id: row.id,
    ownerId: row.owner_id,
    endpointId: row.endpoint_id,
    jobId: row.job_id,
    url: row.url,
    body: row.body,
    attempts: Number(row.attempts),
    nextAt: Number(row.next_at),
    lastError: row.last_error,
    createdAt: Number(row.created_at),
  };
}
