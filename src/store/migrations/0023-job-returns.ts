/**
 * Migration 0023 (issue 33): how many times a job went back to the queue from a worker that never showed it had the
 * job (its take was committed but not received, and the worker then said it held nothing). Such a return does not
 * count as an attempt, up to the job's attempt limit of such returns, so a replica lost mid-take cannot fail a job,
 * while a worker that loses every job it takes still ends them.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('unseen_returns', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
