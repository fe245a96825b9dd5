/**
 * Migration 0017: each endpoint's name as a column, written with its spec, and an index of the live endpoints by
 * name and owner, so that `/v2/{name}/...` finds an endpoint by its name in one indexed read instead of parsing
 * every stored spec (issue 30). Existing rows are filled from their specs, parsed here rather than by the database,
 * as 0009 does (PostgreSQL's `::json` refuses specs stored with a lone surrogate).
 */
import { type Kysely, sql } from 'kysely';

const BATCH = 200;

interface EndpointNames {
  endpoints: { id: string; spec: string; name: string };
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('endpoints')
    .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await fillFromSpecs(db as Kysely<EndpointNames>);
  await db.schema
    .createIndex('endpoints_name_live')
    .on('endpoints')
    .columns(['name', 'owner_id'])
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
}

/** In batches by id, so that a large table is never read whole. Deleted rows are never looked up: left empty. */
async function fillFromSpecs(db: Kysely<EndpointNames>): Promise<void> {
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('endpoints')
      .select(['id', 'spec'])
      .where('id', '>', after)
      .where(sql.ref('deleted_at'), 'is', null)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    for (const row of rows) {
      const name = (JSON.parse(row.spec) as { name?: unknown }).name;
      await db
        .updateTable('endpoints')
        .set({ name: typeof name === 'string' ? name : '' })
        .where('id', '=', row.id)
        .execute();
    }
    const last = rows.at(-1);
    if (last === undefined || rows.length < BATCH) return;
    after = last.id;
  }
}
