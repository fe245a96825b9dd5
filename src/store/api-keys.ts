/** The `api_keys` table: key records by id (hashes only, never a key), revocation and last use. */
import type { Kysely, Selectable } from 'kysely';
import type { ApiKeysTable, Database } from './schema.js';

export interface ApiKeyRecord {
  id: string;
  ownerId: string;
  name: string;
  secretHash: string;
  admin: boolean;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export class ApiKeyRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  async insert(key: Omit<ApiKeyRecord, 'revokedAt' | 'lastUsedAt'>): Promise<void> {
    await this.#db
      .insertInto('api_keys')
      .values({
        id: key.id,
        owner_id: key.ownerId,
        name: key.name,
        secret_hash: key.secretHash,
        admin: key.admin ? 1 : 0,
        created_at: key.createdAt,
        revoked_at: null,
        last_used_at: null,
      })
      .execute();
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
