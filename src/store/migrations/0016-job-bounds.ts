/**
 * Migration 0016 (issue 29): what bounds a tenant's jobs. Each job keeps the bytes of its input and of its output
 * (so that an owner's kept bytes are a sum of integers, not a read of every input), and how many chunks and bytes
 * it has streamed in all (its stream's bound); each unread chunk its bytes (a read takes a bounded batch without
 * loading the chunks past it). `jobs_owner` serves the owner's use (its jobs not finished, its
 * kept bytes) that every submission reads. Existing jobs get their sizes once, here.
 */
import { type Kysely, sql } from 'kysely';
import type { DialectName } from '../schema.js';

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  for (const column of ['input_bytes', 'output_bytes', 'stream_bytes', 'stream_chunks'])
    await db.schema
      .alterTable('jobs')
      .addColumn(column, 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
  const bytes = (column: string) =>
    dialect === 'postgres'
      ? sql`coalesce(octet_length(${sql.ref(column)}), 0)`
      : sql`coalesce(length(cast(${sql.ref(column)} as blob)), 0)`;
  await sql`update jobs set input_bytes = ${bytes('input')}, output_bytes = ${bytes('output')}`.execute(db);
  await db.schema
    .alterTable('job_chunks')
    .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update job_chunks set bytes = ${bytes('chunk')}`.execute(db);
  await db.schema
    .createIndex('jobs_owner')
    .on('jobs')
    .columns(['owner_id', 'status', 'input_bytes', 'output_bytes'])
    .execute();
}
