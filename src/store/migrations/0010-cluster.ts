/**
 * Migration 0010: the tables of several replicas on one database (docs/operations.md). `leases` holds the
 * controller's lease: who leads, under which fencing token, until when (the database's clock). `replicas` holds a
 * heartbeat row per running `corral serve`, for `GET /v1/cluster` and `corral status`.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('token', 'bigint', (c) => c.notNull())
    .addColumn('acquired_at', 'bigint', (c) => c.notNull())
    .addColumn('renewed_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('replicas')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('pid', 'integer', (c) => c.notNull())
    .addColumn('api_url', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('in_flight', 'integer', (c) => c.notNull())
    .addColumn('queued', 'integer', (c) => c.notNull())
    .execute();
}
