/**
 * The `webhook_secrets` table: each endpoint's webhook signing secret, sealed (the caller seals and opens it). A
 * secret is made on first use and replaced by a rotation.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

export interface WebhookSecretRecord {
  endpointId: string;
  ownerId: string;
  /** The secret, sealed with the server's secret key. */
  sealed: string;
  createdAt: number;
}

export class WebhookSecretRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  async get(endpointId: string): Promise<WebhookSecretRecord | undefined> {
    const row = await this.#db
      .selectFrom('webhook_secrets')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirst();
    return (
      row && {
        endpointId: row.endpoint_id,
        ownerId: row.owner_id,
        sealed: row.secret,
        createdAt: Number(row.created_at),
      }
    );
  }

  /** Keeps `record` unless the endpoint has a secret already; answers the one kept (the first writer's). */
  async getOrInsert(record: WebhookSecretRecord): Promise<WebhookSecretRecord> {
    await this.#db
      .insertInto('webhook_secrets')
      .values(toRow(record))
      .onConflict((oc) => oc.column('endpoint_id').doNothing())
      .execute();
    return (await this.get(record.endpointId)) ?? record;
  }

  /** Replaces the endpoint's secret (or makes its first). */
  async replace(record: WebhookSecretRecord): Promise<void> {
    const row = toRow(record);
    await this.#db
      .insertInto('webhook_secrets')
      .values(row)
      .onConflict((oc) =>
        oc.column('endpoint_id').doUpdateSet({ secret: row.secret, created_at: row.created_at }),
      )
      .execute();
  }

  /** Forgets the secrets of endpoints that were deleted. */
  async deleteOfGoneEndpoints(): Promise<void> {
    await this.#db
      .deleteFrom('webhook_secrets')
      .where('endpoint_id', 'not in', (eb) =>
        eb.selectFrom('endpoints').select('id').where('deleted_at', 'is', null),
      )
      .execute();
  }
}

function toRow(record: WebhookSecretRecord) {
  return {
    endpoint_id: record.endpointId,
    owner_id: record.ownerId,
    secret: record.sealed,
    created_at: record.createdAt,
  };
}
