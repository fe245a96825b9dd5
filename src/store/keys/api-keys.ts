/** The `api_keys` table: key records by id (hashes only, never a key), revocation and last use. */
import type { Insertable, Kysely, Selectable } from 'kysely';
import type { ApiKeyRecord } from '../../domain/records.js';
import type { ApiKeysTable, Database } from '../schema.js';

export class ApiKeyRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  async insert(key: Omit<ApiKeyRecord, 'revokedAt' | 'lastUsedAt'>): Promise<void> {
    await this.#db.insertInto('api_keys').values(toRow(key)).execute();
  }

  /**
   * Inserts the key unless one with its id exists; true when this call stored it. Replicas starting together all
   * insert CORRAL_API_KEY (its id follows from the key): one stores it, the others find it.
   */
  async insertIfAbsent(key: Omit<ApiKeyRecord, 'revokedAt' | 'lastUsedAt'>): Promise<boolean> {
    const result = await this.#db
      .insertInto('api_keys')
      .values(toRow(key))
      .onConflict((c) => c.column('id').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async findById(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.#db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    return row && fromRow(row);
  }

  /** All keys, or one owner's; revoked keys included so that `keys list` shows them. */
  async list(ownerId?: string): Promise<ApiKeyRecord[]> {
    let query = this.#db.selectFrom('api_keys').selectAll().orderBy('created_at');
    if (ownerId !== undefined) query = query.where('owner_id', '=', ownerId);
    return (await query.execute()).map(fromRow);
  }

  async countActive(): Promise<number> {
    const row = await this.#db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Whether the owner holds an active admin key (the operator does: the key printed at the first start is one). */
  async holdsAdmin(ownerId: string): Promise<boolean> {
    const row = await this.#db
      .selectFrom('api_keys')
      .select('id')
      .where('owner_id', '=', ownerId)
      .where('admin', '=', 1)
      .where('revoked_at', 'is', null)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Returns false when there is no such active key. */
  async revoke(id: string, at: number): Promise<boolean> {
    const result = await this.#db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async touch(id: string, at: number): Promise<void> {
    await this.#db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
  }
}

function toRow(key: Omit<ApiKeyRecord, 'revokedAt' | 'lastUsedAt'>): Insertable<ApiKeysTable> {
  return {
    id: key.id,
    owner_id: key.ownerId,
    name: key.name,
    secret_hash: key.secretHash,
    admin: key.admin ? 1 : 0,
    created_at: key.createdAt,
    revoked_at: null,
    last_used_at: null,
  };
}

function fromRow(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  return {
    id: row.id,
    ownerId: row.owner_id,
    name: row.name,
    secretHash: row.secret_hash,
    admin: Number(row.admin) === 1,
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}
