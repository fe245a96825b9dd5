/**
 * Migration 0007: the `installation` table, one row holding this installation's id. Every container, volume and
 * process Corral makes carries it, so that two installations on one engine never adopt or remove each other's.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('installation')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
