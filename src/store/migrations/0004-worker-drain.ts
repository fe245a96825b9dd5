/**
 * Migration 0004: `workers.drain_requested`, set by the API when the owner drains a worker (`POST
 * endpoint/worker/drain`) and read by the controller on every pass, so that a drain survives a restart. The
 * controller's own writes of a worker's row never touch it. A partial index keeps the pass's read of the few
 * drained workers from scanning the table.
 */
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('workers')
    .addColumn('drain_requested', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex('workers_drain_requested')
    .on('workers')
    .column('id')
    .where(sql.ref('drain_requested'), '=', 1)
    .execute();
}
