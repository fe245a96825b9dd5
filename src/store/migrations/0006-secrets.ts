/**
 * Owners' secrets: values sealed with the server's secret key (like registry passwords), one per owner and name,
 * referenced from env values as `{{ CORRAL_SECRET_name }}` and resolved only when a worker starts.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('secrets')
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('secrets_pk', ['owner_id', 'name'])
    .execute();
}
