/**
 * Migration 0012: `replicas.gateway_url`, where each replica's gateway can be reached by the others, so that a
 * gateway holding no slot of an endpoint's workers forwards its requests to one that does (docs/operations.md,
 * "One worker's slots across replicas"). Null for a row written by an older replica (it is never forwarded to).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('replicas').addColumn('gateway_url', 'text').execute();
}
