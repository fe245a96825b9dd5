/** Migration 0002: the `workers` table, each worker as the controller reports it, indexed by endpoint. */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('state_error', 'text', (c) => c.notNull())
    .addColumn('state_message', 'text', (c) => c.notNull())
    .addColumn('healthy', 'integer', (c) => c.notNull())
    .addColumn('gpu_uuids', 'text', (c) => c.notNull())
    .addColumn('address', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('ready_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('workers_by_endpoint')
    .on('workers')
    .columns(['endpoint_id', 'created_at'])
    .execute();
}
