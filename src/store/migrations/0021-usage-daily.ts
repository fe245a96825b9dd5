/**
 * Migration 0021 (issue 32): `usage_daily`, the usage ledger's closed spans summed per UTC day, owner, endpoint, GPU
 * product and state (usage-segments.ts keeps it in the transaction that closes each span). A month's query over every
 * owner read each of the month's 700,000 segments (1.1 s on SQLite, 0.8 s on PostgreSQL, bench/usage-ledger.ts); its
 * closed part is now a few tens of thousands of daily sums. Filled here from the segments closed before it.
 */
import type { Kysely } from 'kysely';
import type { Database, DialectName } from '../schema.js';
import { addDailyShares, type DailySums, dailyRows } from '../usage/usage-daily.js';

/** Closed segments read per step of the fill. */
const PAGE = 10_000;

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await db.schema
    .createTable('usage_daily')
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('gpu_product_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('ms', 'bigint', (c) => c.notNull())
    .addColumn('gpu_ms', 'bigint', (c) => c.notNull())
    .addColumn('memory_gb_ms', dialect === 'postgres' ? 'double precision' : 'real', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_daily_key', ['day', 'owner_id', 'endpoint_id', 'gpu_product_id', 'state'])
    .execute();
  await db.schema.createIndex('usage_daily_owner').on('usage_daily').columns(['owner_id', 'day']).execute();
  const typed = db as unknown as Kysely<Database>;
  const sums: DailySums = new Map();
  for (let after = 0; ; ) {
    const page = await typed
      .selectFrom('usage_segments')
      .selectAll()
      .where('ended_at', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .execute();
    for (const row of page) addDailyShares(sums, row, Number(row.started_at), Number(row.ended_at));
    const last = page.at(-1);
    if (!last || page.length < PAGE) break;
    after = Number(last.id);
  }
  const rows = dailyRows(sums);
  for (let i = 0; i < rows.length; i += 500)
    await typed
      .insertInto('usage_daily')
      .values(rows.slice(i, i + 500))
      .execute();
}
