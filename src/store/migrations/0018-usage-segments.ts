/**
 * Migration 0018 (issue 32): the usage ledger. Each row is one span of one worker in one usage state, with what it
 * held (owner, endpoint, GPU product and count, host memory); `ended_at` is null while the span is open (at most
 * one open row per worker). `usage_segments_time` serves a range's grouped query (rows starting in the range, with
 * every column the sums read, so that the table itself is not visited); `usage_segments_open` the open rows and
 * those that end after a range's start; `usage_segments_worker` closing a worker's open row.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../schema.js';

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const serial = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('usage_segments')
    .addColumn('id', serial, (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('worker_id', 'text', (c) => c.notNull())
    .addColumn('gpu_product_id', 'text', (c) => c.notNull())
    .addColumn('gpu_count', 'integer', (c) => c.notNull())
    .addColumn('host_memory_bytes', 'bigint', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('usage_segments_time')
    .on('usage_segments')
    .columns([
      'started_at',
      'owner_id',
      'endpoint_id',
      'gpu_product_id',
      'state',
      'ended_at',
      'gpu_count',
      'host_memory_bytes',
    ])
    .execute();
  await db.schema.createIndex('usage_segments_open').on('usage_segments').columns(['ended_at']).execute();
  await db.schema
    .createIndex('usage_segments_worker')
    .on('usage_segments')
    .columns(['worker_id', 'ended_at'])
    .execute();
}
