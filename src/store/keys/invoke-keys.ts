/** The `invoke_keys` table: keys that call one endpoint's URL, by id (hashes only, never a key), and revocation. */
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { InvokeKeyRecord } from '../../domain/records.js';
import { type CountAdmit, takeOwnerTurn } from '../owner-turn.js';
import type { Database, InvokeKeysTable } from '../schema.js';

export class InvokeKeyRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /**
   * `admit` sees how many active keys the owner has over all its live endpoints before this one, in the owner's
   * turn, and may refuse.
   */
  async insert(key: Omit<InvokeKeyRecord, 'revokedAt'>, admit?: CountAdmit): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      if (admit) {
        await takeOwnerTurn(trx, key.ownerId);
        admit(await countActiveOf(trx, key.ownerId));
      }
      await trx
        .insertInto('invoke_keys')
        .values({
          id: key.id,
          endpoint_id: key.endpointId,
          owner_id: key.ownerId,
          name: key.name,
          secret_hash: key.secretHash,
          created_at: key.createdAt,
          revoked_at: null,
        })
        .execute();
    });
  }

  /** The owner's active keys over all its live endpoints. */
  countActive(ownerId: string): Promise<number> {
    return countActiveOf(this.#db, ownerId);
  }

  async findById(id: string): Promise<InvokeKeyRecord | undefined> {
    const row = await this.#db.selectFrom('invoke_keys').selectAll().where('id', '=', id).executeTakeFirst();
    return row && fromRow(row);
  }

  /** One endpoint's keys, oldest first; revoked keys included so that a listing shows them. */
  async listByEndpoint(endpointId: string): Promise<InvokeKeyRecord[]> {
    const rows = await this.#db
      .selectFrom('invoke_keys')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(fromRow);
  }

  /** Revokes the endpoint's key `id`; false when the endpoint has no such active key. */
  async revoke(endpointId: string, id: string, at: number): Promise<boolean> {
    const result = await this.#db
      .updateTable('invoke_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('endpoint_id', '=', endpointId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}

/** Through the owner's endpoints (both tables are indexed that way); a deleted endpoint's keys call nothing. */
async function countActiveOf(db: Kysely<Database> | Transaction<Database>, ownerId: string): Promise<number> {
  const row = await db
    .selectFrom('invoke_keys')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('endpoint_id', 'in', (eb) =>
      eb.selectFrom('endpoints').select('id').where('owner_id', '=', ownerId).where('deleted_at', 'is', null),
    )
    .where('owner_id', '=', ownerId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

function fromRow(row: Selectable<InvokeKeysTable>): InvokeKeyRecord {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    ownerId: row.owner_id,
    name: row.name,
    secretHash: row.secret_hash,
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}
