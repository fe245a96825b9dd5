/** The `audit_log` table: who changed what, written in the transaction of the change it records. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

export interface AuditEntry {
  at: number;
  ownerId: string;
  /** Who did it: an API key id, or `cli` for commands run on the store directly. */
  actor: string;
  action: string;
  targetId: string;
  detail?: Record<string, unknown>;
}

export async function insertAudit(
  db: Transaction<Database> | Kysely<Database>,
  entry: AuditEntry,
): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      at: entry.at,
      owner_id: entry.ownerId,
      actor: entry.actor,
      action: entry.action,
      target_id: entry.targetId,
      detail: JSON.stringify(entry.detail ?? {}),
    })
    .execute();
}

export class AuditRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  record(entry: AuditEntry): Promise<void> {
    return insertAudit(this.#db, entry);
  }

  /** Newest first. */
  async list(ownerId: string, limit: number): Promise<Required<AuditEntry>[]> {
    const rows = await this.#db
      .selectFrom('audit_log')
      .selectAll()
      .where('owner_id', '=', ownerId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      at: Number(r.at),
      ownerId: r.owner_id,
      actor: r.actor,
      action: r.action,
      targetId: r.target_id,
      detail: JSON.parse(r.detail) as Record<string, unknown>,
    }));
  }
}
