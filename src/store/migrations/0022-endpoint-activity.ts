/**
 * Migration 0022 (issue 32, idle policies): one row per endpoint that has had traffic or an idle-policy step.
 * `traffic_at` is the last request through a gateway or job submitted as some replica last flushed it (replicas
 * only ever move it forward); `idle_step` and `idle_step_at` the last idle-policy step that took effect, and when.
 * Endpoints that exist at the upgrade get the upgrade's time as their last traffic: no traffic was recorded before,
 * and a policy must not take them for idle since their creation.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('endpoint_activity')
    .addColumn('endpoint_id', 'text', (c) => c.primaryKey())
    .addColumn('traffic_at', 'bigint')
    .addColumn('idle_step', 'integer')
    .addColumn('idle_step_at', 'bigint')
    .execute();
  await sql`insert into endpoint_activity (endpoint_id, traffic_at)
    select id, ${sql.lit(Date.now())} from endpoints where deleted_at is null`.execute(db);
}
