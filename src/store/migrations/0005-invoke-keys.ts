/**
 * Migration 0005: the `invoke_keys` table, keys an owner made to call one endpoint's URL and nothing else (hashes
 * only, like `api_keys`), indexed by endpoint for the owner's listing.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('invoke_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('invoke_keys_by_endpoint')
    .on('invoke_keys')
    .columns(['endpoint_id', 'created_at'])
    .execute();
}
