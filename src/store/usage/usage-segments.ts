/**
 * The `usage_segments` table (migration 0018): the usage ledger's rows. Writes come in batches (one transaction per
 * batch of state changes, never one per request); reads are sums grouped by the database (GROUP BY over buckets),
 * unpriced: usage/ prices them. A span is counted from `max(start, from)` to `min(end or now, to)` and falls in the
 * bucket of the first of these (the recorder splits open spans at each UTC hour, so that no span crosses a bucket).
 * A closed span is also added to its day's sums (usage-daily.ts) as it closes; a range of whole days (a month's
 * query) reads those sums for its closed spans, and this table for the open ones only.
 */
import { type Kysely, type RawBuilder, sql } from 'kysely';
import { monthStart, nextMonthStart } from '../../domain/budget.js';
import type { UsageBucket, UsageGrouping, WorkerHolding } from '../../ports/usage.js';
import type { Database, DialectName } from '../schema.js';
import { addDailyShares, addToDaily, DAY_MS, type DailySums } from './usage-daily.js';

/** What a worker holds while a span is open: what the ledger is told (ports/usage.ts). */
export type SegmentHolding = WorkerHolding;

/** One step of the ledger: the worker's open span (if any) ends at `at`; a new one opens there in `state`. */
export interface SegmentChange {
  holding: SegmentHolding;
  at: number;
  /** The state of the span that opens at `at`; null: none opens (the worker is gone). */
  state: string | null;
}

/** An open span as stored. */
export interface OpenSegment extends SegmentHolding {
  state: string;
  startedAt: number;
}

export interface SegmentSumsQuery {
  from: number;
  to: number;
  /** Where open spans end (now, for a read). */
  now: number;
  ownerId?: string | undefined;
  endpointId?: string | undefined;
  /** Absent: one bucket (time 0) over the whole range. */
  bucket?: UsageBucket;
  grouping: UsageGrouping;
}

/** The sums of one bucket, key, owner, GPU product and state. */
export interface SegmentSums {
  time: number;
  key: string;
  ownerId: string;
  gpuProductId: string;
  state: string;
  /** Worker time. */
  ms: number;
  /** Worker time times its GPUs. */
  gpuMs: number;
  /** Host memory held (GB) times time (ms). */
  memoryGbMs: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** 1970-01-05, the first Monday after the epoch: weeks start on Mondays (UTC), as ISO 8601's. */
const FIRST_MONDAY = 4 * DAY;

const KEY_COLUMN: Record<UsageGrouping, string> = {
  endpoint: 'endpoint_id',
  gpu: 'gpu_product_id',
  owner: 'owner_id',
  state: 'state',
};

/** Rows per INSERT: 8 parameters each, far below either engine's limit. */
const BATCH = 500;

export class UsageSegmentRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: DialectName;

  constructor(options: { db: Kysely<Database>; dialect: DialectName }) {
    this.#db = options.db;
    this.#dialect = options.dialect;
  }

  /** Applies the changes in order, in one transaction. */
  async apply(changes: readonly SegmentChange[]): Promise<void> {
    if (changes.length === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      // The open span of each worker ends at its first change here; closes grouped by time (a flush closes most
      // spans at one instant), then the opens in batches.
      const closing = new Map<number, string[]>();
      const seen = new Set<string>();
      for (const c of changes) {
        if (seen.has(c.holding.workerId)) continue;
        seen.add(c.holding.workerId);
        const atThen = closing.get(c.at);
        if (atThen) atThen.push(c.holding.workerId);
        else closing.set(c.at, [c.holding.workerId]);
      }
      const daily: DailySums = new Map();
      for (const [at, workerIds] of closing)
        for (let i = 0; i < workerIds.length; i += BATCH) {
          const batch = workerIds.slice(i, i + BATCH);
          const ended = Math.trunc(at);
          const closed = await trx
            .selectFrom('usage_segments')
            .select([
              'owner_id',
              'endpoint_id',
              'gpu_product_id',
              'state',
              'gpu_count',
              'host_memory_bytes',
              'started_at',
            ])
            .where('worker_id', 'in', batch)
            .where('ended_at', 'is', null)
            .execute();
          for (const span of closed) addDailyShares(daily, span, Number(span.started_at), ended);
          await trx
            .updateTable('usage_segments')
            .set({ ended_at: ended })
            .where('worker_id', 'in', batch)
            .where('ended_at', 'is', null)
            .execute();
        }
      // A worker changed twice in one batch: each span but its last ends at its next change (read back to front).
      const nextAt = new Map<string, number>();
      const rows: (ReturnType<typeof rowOf> & { ended_at: number | null })[] = [];
      for (let index = changes.length - 1; index >= 0; index -= 1) {
        const c = changes[index] as SegmentChange;
        const next = nextAt.get(c.holding.workerId);
        nextAt.set(c.holding.workerId, c.at);
        if (c.state !== null)
          rows.push({
            ...rowOf(c.holding, c.state, c.at),
            ended_at: next === undefined ? null : Math.trunc(next),
          });
      }
      rows.reverse();
      for (let i = 0; i < rows.length; i += BATCH)
        await trx
          .insertInto('usage_segments')
          .values(rows.slice(i, i + BATCH))
          .execute();
      for (const row of rows)
        if (row.ended_at !== null) addDailyShares(daily, row, row.started_at, row.ended_at);
      await addToDaily(trx, daily);
    });
  }

  /** Every open span (a new leader or a restarted process continues them). */
  async open(): Promise<OpenSegment[]> {
    const rows = await this.#db
      .selectFrom('usage_segments')
      .selectAll()
      .where('ended_at', 'is', null)
      .orderBy('id')
      .execute();
    return rows.map((r) => ({
      workerId: r.worker_id,
      ownerId: r.owner_id,
      endpointId: r.endpoint_id,
      gpuProductId: r.gpu_product_id,
      gpuCount: Number(r.gpu_count),
      hostMemoryBytes: Number(r.host_memory_bytes),
      state: r.state,
      startedAt: Number(r.started_at),
    }));
  }

  /**
   * The sums of a range, grouped in the database by bucket, key, owner, GPU product and state. A range of whole UTC
   * days in buckets of a day or more reads the closed spans' daily sums; any other, the segments themselves.
   */
  async sums(query: SegmentSumsQuery): Promise<SegmentSums[]> {
    const { from, to, now } = query;
    const filters = sql`${query.ownerId === undefined ? sql`` : sql` and owner_id = ${query.ownerId}`}${
      query.endpointId === undefined ? sql`` : sql` and endpoint_id = ${query.endpointId}`
    }`;
    const f = sql.lit(Math.trunc(from));
    const t = sql.lit(Math.trunc(to));
    const nowLit = sql.lit(Math.trunc(now));
    const columns = sql`owner_id, endpoint_id, gpu_product_id, state, gpu_count, host_memory_bytes`;
    const wholeDays = from % DAY_MS === 0 && to % DAY_MS === 0 && query.bucket !== 'hour';
    // Spans as (start s, end e), before they are clamped to the range's end.
    const spans = wholeDays
      ? // The closed spans are in usage_daily: the open ones alone (one index range scan).
        sql`select ${columns}, ${this.#greatest(sql`started_at`, f)} as s, ${nowLit} as e from usage_segments
          where ended_at is null and started_at < ${t}${filters}`
      : // Three index range scans: spans starting in the range, and those started before it that end in it or are open.
        sql`
          select ${columns}, started_at as s, coalesce(ended_at, ${nowLit}) as e from usage_segments
            where started_at >= ${f} and started_at < ${t}${filters}
          union all
          select ${columns}, ${f} as s, coalesce(ended_at, ${nowLit}) as e from usage_segments
            where ended_at > ${f} and started_at < ${f}${filters}
          union all
          select ${columns}, ${f} as s, ${nowLit} as e from usage_segments
            where ended_at is null and started_at < ${f}${filters}`;
    const clampedEnd = this.#least(sql`e`, t);
    const ms = sql`(${clampedEnd} - s)`;
    const real = sql.raw(this.#dialect === 'postgres' ? 'double precision' : 'real');
    const timed = sql`
      select owner_id, endpoint_id, gpu_product_id, state, s, ${ms} as ms, ${ms} * gpu_count as gpu_ms,
        cast(${ms} as ${real}) * host_memory_bytes / 1e9 as memory_gb_ms
      from (${spans}) spans where ${clampedEnd} > s`;
    const parts = wholeDays
      ? sql`${timed} union all
          select owner_id, endpoint_id, gpu_product_id, state, day as s, ms, gpu_ms, memory_gb_ms from usage_daily
            where day >= ${f} and day < ${t}${filters}`
      : timed;
    const key = sql.ref(KEY_COLUMN[query.grouping]);
    const time = bucketStart(sql`s`, query.bucket, from, to);
    const result = await sql<{
      time: number | string;
      key: string;
      owner_id: string;
      gpu_product_id: string;
      state: string;
      ms: number | string;
      gpu_ms: number | string;
      memory_gb_ms: number | string;
    }>`
      select ${time} as time, ${key} as key, owner_id, gpu_product_id, state,
        sum(ms) as ms, sum(gpu_ms) as gpu_ms, sum(memory_gb_ms) as memory_gb_ms
      from (${parts}) parts
      group by 1, 2, owner_id, gpu_product_id, state
      order by 1, 2`.execute(this.#db);
    return result.rows.map((r) => ({
      time: Number(r.time),
      key: r.key,
      ownerId: r.owner_id,
      gpuProductId: r.gpu_product_id,
      state: r.state,
      ms: Number(r.ms),
      gpuMs: Number(r.gpu_ms),
      memoryGbMs: Number(r.memory_gb_ms),
    }));
  }

  #greatest(a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<number> {
    return this.#dialect === 'postgres' ? sql<number>`greatest(${a}, ${b})` : sql<number>`max(${a}, ${b})`;
  }

  #least(a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<number> {
    return this.#dialect === 'postgres' ? sql<number>`least(${a}, ${b})` : sql<number>`min(${a}, ${b})`;
  }
}

function rowOf(holding: SegmentHolding, state: string, at: number) {
  return {
    owner_id: holding.ownerId,
    endpoint_id: holding.endpointId,
    worker_id: holding.workerId,
    gpu_product_id: holding.gpuProductId,
    gpu_count: holding.gpuCount,
    host_memory_bytes: holding.hostMemoryBytes,
    state,
    started_at: Math.trunc(at),
  };
}

/** The bucket's start of the time expression `t` (epoch ms, UTC), as SQL arithmetic both engines run alike. */
function bucketStart(t: RawBuilder<unknown>, bucket: UsageBucket | undefined, from: number, to: number) {
  switch (bucket) {
    case undefined:
      return sql`0`;
    case 'hour':
      return sql`(${t} - ${t} % ${sql.lit(HOUR)})`;
    case 'day':
      return sql`(${t} - ${t} % ${sql.lit(DAY)})`;
    case 'week':
      return sql`(${t} - (${t} - ${sql.lit(FIRST_MONDAY)}) % ${sql.lit(7 * DAY)})`;
    case 'month': {
      // Months differ in length: the range's month starts are listed here, and each time takes the last not after it.
      const starts = monthStarts(from, to);
      if (starts.length < 2) return sql`${sql.lit(starts[0] ?? 0)}`;
      const arms = starts
        .slice(1)
        .reverse()
        .map((start) => sql`when ${t} >= ${sql.lit(start)} then ${sql.lit(start)}`);
      return sql`(case ${sql.join(arms, sql` `)} else ${sql.lit(starts[0] ?? 0)} end)`;
    }
  }
}

/** The starts (epoch ms, UTC) of the months from `from`'s to the one holding `to - 1`. */
function monthStarts(from: number, to: number): number[] {
  const starts: number[] = [];
  for (let month = monthStart(from); month < Math.max(to, from + 1); month = nextMonthStart(month))
    starts.push(month);
  return starts;
}
