/**
 * Migration 0011: what every replica's gateway shares (docs/operations.md, several replicas). `routes` holds, per
 * live endpoint, what the leader's controller last published to its routing table (the endpoint as it saw it, its
 * routable workers and its condition) under a sequence number that grows with each change; every replica's
 * gateway routes from it. `gateway_signals` holds each replica's queue and worker load per endpoint, which the
 * leader's autoscaler sums. `replicas.settled` says for which membership a replica keeps within its share of each
 * worker's slots (cluster/slot-shares.ts).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('routes')
    .addColumn('endpoint_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('workers', 'text', (c) => c.notNull())
    .addColumn('condition', 'text')
    .execute();
  await db.schema
    .createTable('gateway_signals')
    .addColumn('replica_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('queue_length', 'integer', (c) => c.notNull())
    .addColumn('oldest_enqueued_at', 'bigint')
    .addColumn('workers', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('gateway_signals_pk', ['replica_id', 'endpoint_id'])
    .execute();
  await db.schema.alterTable('replicas').addColumn('settled', 'text').execute();
}
