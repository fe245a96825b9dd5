/** The `secrets` table: each owner's named secrets, values stored sealed; listing never reads them. */
import type { Kysely } from 'kysely';
import { type AuditEntry, insertAudit } from '../audit.js';
import { type CountAdmit, countOwned, takeOwnerTurn } from '../owner-turn.js';
import type { Database } from '../schema.js';

export interface SecretRecord {
  ownerId: string;
  name: string;
  /** The value, encrypted with the server's secret key; decrypted only when a worker starts. */
  encryptedValue: string;
  createdAt: number;
  updatedAt: number;
}

export type SecretSummary = Omit<SecretRecord, 'encryptedValue'>;

export class SecretRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /**
   * Creates the secret or replaces its value (createdAt is kept); returns whether it existed. `admit` sees how many
   * secrets the owner has before a new one (a replaced value counts nothing) in the owner's turn, and may refuse.
   */
  async put(record: SecretRecord, audit: AuditEntry, admit?: CountAdmit): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      if (admit) await takeOwnerTurn(trx, record.ownerId);
      const existed = await trx
        .selectFrom('secrets')
        .select('name')
        .where('owner_id', '=', record.ownerId)
        .where('name', '=', record.name)
        .executeTakeFirst();
      if (admit && existed === undefined) {
        admit(await countOwned(trx, 'secrets', record.ownerId));
      }
      await trx
        .insertInto('secrets')
        .values({
          owner_id: record.ownerId,
          name: record.name,
          secret: record.encryptedValue,
          created_at: record.createdAt,
          updated_at: record.updatedAt,
        })
        .onConflict((oc) =>
          oc
            .columns(['owner_id', 'name'])
            .doUpdateSet({ secret: record.encryptedValue, updated_at: record.updatedAt }),
        )
        .execute();
      await insertAudit(trx, audit);
      return existed !== undefined;
    });
  }

  /** Names and times, never values, by name. */
  async list(ownerId: string): Promise<SecretSummary[]> {
    const rows = await this.#db
      .selectFrom('secrets')
      .select(['owner_id', 'name', 'created_at', 'updated_at'])
      .where('owner_id', '=', ownerId)
      .orderBy('name')
      .execute();
    return rows.map((r) => ({
      ownerId: r.owner_id,
      name: r.name,
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
    }));
  }

  count(ownerId: string): Promise<number> {
    return countOwned(this.#db, 'secrets', ownerId);
  }

  async names(ownerId: string): Promise<Set<string>> {
    const rows = await this.#db
      .selectFrom('secrets')
      .select('name')
      .where('owner_id', '=', ownerId)
      .execute();
    return new Set(rows.map((r) => r.name));
  }

  /** The sealed values of the named secrets the owner has (absent names are left out). */
  async sealed(ownerId: string, names: readonly string[]): Promise<Map<string, string>> {
    if (names.length === 0) return new Map();
    const rows = await this.#db
      .selectFrom('secrets')
      .select(['name', 'secret'])
      .where('owner_id', '=', ownerId)
      .where('name', 'in', names)
      .execute();
    return new Map(rows.map((r) => [r.name, r.secret]));
  }

  /** Returns false when the owner has no such secret. */
  async delete(ownerId: string, name: string, audit: AuditEntry): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom('secrets')
        .where('owner_id', '=', ownerId)
        .where('name', '=', name)
        .executeTakeFirst();
      if (Number(result.numDeletedRows) !== 1) return false;
      await insertAudit(trx, audit);
      return true;
    });
  }
}
