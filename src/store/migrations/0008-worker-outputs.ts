/**
 * Migration 0008: the `worker_outputs` table, the last output of workers that ended (crashed, failed, replaced,
 * scaled down), kept so that `GET endpoint/worker/log` can show it once the container is gone and after a restart.
 * The controller writes it and keeps a few rows per endpoint (controller/output/output-retention.ts).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('worker_outputs')
    .addColumn('worker_id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'bigint', (c) => c.notNull())
    .addColumn('failed', 'integer', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('truncated', 'integer', (c) => c.notNull())
    .addColumn('output', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('worker_outputs_endpoint')
    .on('worker_outputs')
    .columns(['endpoint_id', 'ended_at'])
    .execute();
}
