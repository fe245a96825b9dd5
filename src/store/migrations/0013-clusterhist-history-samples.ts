/**
 * Migration 0013: `history_samples`, each replica's history samples per endpoint and slot (the interval's end), so
 * that any replica answers an endpoint's history with every replica's traffic and the leader's workers
 * (history/cluster-history.ts, docs/operations.md). Written and read only with several replicas on PostgreSQL; the
 * table exists on SQLite too, empty, as `gateway_signals` does. Keyed by endpoint then slot, the way it is read; the
 * slot index serves the pruning of samples past the history's length.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('history_samples')
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('slot', 'bigint', (c) => c.notNull())
    .addColumn('replica_id', 'text', (c) => c.notNull())
    .addColumn('term', 'bigint')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('history_samples_pk', ['endpoint_id', 'slot', 'replica_id'])
    .execute();
  await db.schema.createIndex('history_samples_slot').on('history_samples').column('slot').execute();
}
