/**
 * Live endpoints per owner, kept by the endpoint repository in the same transaction as each create and delete, so
 * that a list's `total` is one row instead of a `count(*)` over the owner's endpoints (which PostgreSQL answers by
 * visiting the table itself until it has been vacuumed, e.g. right after many endpoints arrive at once).
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('endpoint_counts')
    .addColumn('owner_id', 'text', (c) => c.primaryKey())
    .addColumn('live', 'integer', (c) => c.notNull())
    .execute();
  await sql`insert into endpoint_counts (owner_id, live)
    select owner_id, count(*) from endpoints where deleted_at is null group by owner_id`.execute(db);
}
