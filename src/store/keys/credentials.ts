/** The `registry_credentials` table: each owner's registry logins, passwords stored sealed. */
import type { Kysely } from 'kysely';
import { type AuditEntry, insertAudit } from '../audit.js';
import { type CountAdmit, countOwned, takeOwnerTurn } from '../owner-turn.js';
import type { Database } from '../schema.js';

export interface CredentialRecord {
  id: string;
  ownerId: string;
  name: string;
  username: string;
  /** The password, encrypted with the server's secret key; decrypted only to pull an image. */
  encryptedSecret: string;
  createdAt: number;
}

export class CredentialRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /** `admit` sees how many credentials the owner has before this one, in the owner's turn, and may refuse. */
  async insert(record: CredentialRecord, audit: AuditEntry, admit?: CountAdmit): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      if (admit) {
        await takeOwnerTurn(trx, record.ownerId);
        admit(await countOwned(trx, 'registry_credentials', record.ownerId));
      }
      await trx
        .insertInto('registry_credentials')
        .values({
          id: record.id,
          owner_id: record.ownerId,
          name: record.name,
          username: record.username,
          secret: record.encryptedSecret,
          created_at: record.createdAt,
        })
        .execute();
      await insertAudit(trx, audit);
    });
  }

  async get(ownerId: string, id: string): Promise<CredentialRecord | undefined> {
    const row = await this.#db
      .selectFrom('registry_credentials')
      .selectAll()
      .where('owner_id', '=', ownerId)
      .where('id', '=', id)
      .executeTakeFirst();
    return (
      row && {
        id: row.id,
        ownerId: row.owner_id,
        name: row.name,
        username: row.username,
        encryptedSecret: row.secret,
        createdAt: Number(row.created_at),
      }
    );
  }

  /** Without the secrets. */
  async list(ownerId: string): Promise<Omit<CredentialRecord, 'encryptedSecret'>[]> {
    const rows = await this.#db
      .selectFrom('registry_credentials')
      .select(['id', 'owner_id', 'name', 'username', 'created_at'])
      .where('owner_id', '=', ownerId)
      .orderBy('created_at')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      ownerId: r.owner_id,
      name: r.name,
      username: r.username,
      createdAt: Number(r.created_at),
    }));
  }

  count(ownerId: string): Promise<number> {
    return countOwned(this.#db, 'registry_credentials', ownerId);
  }

  async ids(ownerId: string): Promise<Set<string>> {
    const rows = await this.#db
      .selectFrom('registry_credentials')
      .select('id')
      .where('owner_id', '=', ownerId)
      .execute();
    return new Set(rows.map((r) => r.id));
  }

  /** Returns false when the owner has no such credentials. */
  async delete(ownerId: string, id: string, audit: AuditEntry): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom('registry_credentials')
        .where('owner_id', '=', ownerId)
        .where('id', '=', id)
        .executeTakeFirst();
      if (Number(result.numDeletedRows) !== 1) return false;
      await insertAudit(trx, audit);
      return true;
    });
  }
}
