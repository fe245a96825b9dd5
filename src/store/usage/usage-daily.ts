/**
 * `usage_daily` (migration 0021): the ledger's closed spans summed per UTC day, owner, endpoint, GPU product and
 * state. A span is added when it closes, in the transaction that closes it (usage-segments.ts `apply`), split at
 * each UTC midnight it crosses (the recorder splits spans at each hour, but a span continued across a restart or a
 * leader change may cross several). A range of whole days reads these sums for the closed spans and the segments
 * table for the open ones alone.
 */
import { type Kysely, sql } from 'kysely';
import type { Database, UsageDailyTable } from '../schema.js';

export const DAY_MS = 86_400_000;

/** What a closed span held, as the segments table has it. */
export interface ClosedSpanHolding {
  owner_id: string;
  endpoint_id: string;
  gpu_product_id: string;
  state: string;
  gpu_count: number | string;
  host_memory_bytes: number | string;
}

/** A row of `usage_daily`, as it is gathered before it is written. */
type DailySum = UsageDailyTable;

/** Sums by day and holding, as they are gathered before they are written. */
export type DailySums = Map<string, DailySum>;

/** Adds the span `[start, end)` of `holding` to `sums`, a share per UTC day it covers. */
export function addDailyShares(
  sums: DailySums,
  holding: ClosedSpanHolding,
  start: number,
  end: number,
): void {
  for (let from = start; from < end; ) {
    const day = from - (from % DAY_MS);
    const until = Math.min(end, day + DAY_MS);
    const ms = until - from;
    const key = `${day}\0${holding.owner_id}\0${holding.endpoint_id}\0${holding.gpu_product_id}\0${holding.state}`;
    let sum = sums.get(key);
    if (!sum) {
      sum = {
        day,
        owner_id: holding.owner_id,
        endpoint_id: holding.endpoint_id,
        gpu_product_id: holding.gpu_product_id,
        state: holding.state,
        ms: 0,
        gpu_ms: 0,
        memory_gb_ms: 0,
      };
      sums.set(key, sum);
    }
    sum.ms += ms;
    sum.gpu_ms += ms * Number(holding.gpu_count);
    sum.memory_gb_ms += (ms * Number(holding.host_memory_bytes)) / 1e9;
    from = until;
  }
}

/** The gathered sums as rows of `usage_daily`. */
export function dailyRows(sums: DailySums): DailySum[] {
  return [...sums.values()];
}

/** Rows per statement: 8 parameters each. */
const BATCH = 500;

/** Adds the gathered sums to the table (a day and holding already there grows by them). */
export async function addToDaily(db: Kysely<Database>, sums: DailySums): Promise<void> {
  const rows = dailyRows(sums);
  for (let i = 0; i < rows.length; i += BATCH)
    await db
      .insertInto('usage_daily')
      .values(rows.slice(i, i + BATCH))
      .onConflict((oc) =>
        oc.columns(['day', 'owner_id', 'endpoint_id', 'gpu_product_id', 'state']).doUpdateSet({
          ms: sql`usage_daily.ms + excluded.ms`,
          gpu_ms: sql`usage_daily.gpu_ms + excluded.gpu_ms`,
          memory_gb_ms: sql`usage_daily.memory_gb_ms + excluded.memory_gb_ms`,
        }),
      )
      .execute();
}
