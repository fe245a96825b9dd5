/**
 * Migration 0015: the jobs API's tables (issue 22). `jobs` is the queue and the record of every job until its
 * retention ends: indexed for a take (an endpoint's IN_QUEUE jobs, oldest first), a worker's jobs, and the sweeps
 * of ttl, execution deadline and retention. `job_chunks` holds what workers streamed until a client reads it;
 * `job_workers` when each queue worker last polled or
 * pinged (its health, whichever replica it reached); `server_secrets` the key the worker tokens are signed with, so that every replica verifies any worker's token.
 */
import type { Kysely } from 'kysely';
import type { DialectName } from '../schema.js';

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('webhook', 'text')
    .addColumn('execution_timeout_ms', 'bigint', (c) => c.notNull())
    .addColumn('ttl_ms', 'bigint', (c) => c.notNull())
    .addColumn('low_priority', 'integer', (c) => c.notNull())
    .addColumn('sync', 'integer', (c) => c.notNull())
    .addColumn('retain_ms', 'bigint', (c) => c.notNull())
    .addColumn('worker_id', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('deadline_at', 'bigint')
    .addColumn('retain_until', 'bigint')
    .addColumn('seen_at', 'bigint')
    .addColumn('stop_pending', 'integer', (c) => c.notNull())
    .addColumn('stopped_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('jobs_queue')
    .on('jobs')
    .columns(['endpoint_id', 'status', 'created_at', 'id'])
    .execute();
  await db.schema.createIndex('jobs_worker').on('jobs').columns(['worker_id', 'status']).execute();
  await db.schema.createIndex('jobs_seen').on('jobs').columns(['status', 'seen_at']).execute();
  await db.schema.createIndex('jobs_expires').on('jobs').column('expires_at').execute();
  await db.schema.createIndex('jobs_deadline').on('jobs').column('deadline_at').execute();
  await db.schema.createIndex('jobs_retain').on('jobs').column('retain_until').execute();
  const serial = dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('job_chunks')
    .addColumn('seq', serial, (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('chunk', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('job_chunks_job').on('job_chunks').columns(['job_id', 'seq']).execute();
  await db.schema
    .createTable('job_workers')
    .addColumn('worker_id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('seen_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
