/**
 * The usage ledger's rows on every store: batched opens and closes, open spans continued, and the database's
 * grouped sums clamped to the range asked, by bucket (hours, Monday weeks, calendar months) and by key.
 */

import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { storeTargets } from '../../../test/support/stores.js';
import { up as dailyMigration } from '../migrations/0021-usage-daily.js';
import type { SegmentChange, SegmentHolding } from './usage-segments.js';

const HOUR = 3_600_000;
/** 2026-11-02T00:00Z, a Monday. */
const MONDAY = Date.UTC(2026, 10, 2);

const holding = (workerId: string, endpointId = 'ep-a', gpuCount = 1): SegmentHolding => ({
  workerId,
  ownerId: endpointId === 'ep-c' ? 'owner-2' : 'owner-1',
  endpointId,
  gpuProductId: 'h100-80g',
  gpuCount,
  hostMemoryBytes: 2e9,
});
const change = (h: SegmentHolding, at: number, state: string | null): SegmentChange => ({
  holding: h,
  at,
  state,
});

describe.each(storeTargets())('usage segments on $name', (target) => {
  it('closes each open span at the next change and keeps the last open, across batches', async () => {
    const { store, dispose } = await target.open();
    try {
      const w1 = holding('w1');
      const w2 = holding('w2', 'ep-b', 2);
      await store.usageSegments.apply([change(w1, MONDAY, 'starting'), change(w2, MONDAY, 'starting')]);
      // One batch with two changes of w1: the middle span is written closed.
      await store.usageSegments.apply([
        change(w1, MONDAY + 10_000, 'active'),
        change(w2, MONDAY + 20_000, 'idle'),
        change(w1, MONDAY + 30_000, 'idle'),
      ]);
      const open = await store.usageSegments.open();
      expect(open.map((o) => `${o.workerId}:${o.state}@${o.startedAt - MONDAY}`)).toEqual([
        'w2:idle@20000',
        'w1:idle@30000',
      ]);
      await store.usageSegments.apply([change(w1, MONDAY + 40_000, null)]);
      expect((await store.usageSegments.open()).map((o) => o.workerId)).toEqual(['w2']);

      const sums = await store.usageSegments.sums({
        from: MONDAY,
        to: MONDAY + HOUR,
        now: MONDAY + 50_000,
        grouping: 'state',
      });
      const byState = Object.fromEntries(sums.map((s) => [`${s.key}/${s.gpuProductId}`, [s.ms, s.gpuMs]]));
      // w1: starting 10 s, active 20 s, idle 10 s; w2 (2 GPUs): starting 20 s, idle from 20 s until now (50 s).
      expect(byState).toEqual({
        'starting/h100-80g': [30_000, 50_000],
        'active/h100-80g': [20_000, 20_000],
        'idle/h100-80g': [40_000, 70_000],
      });
      expect(sums.find((s) => s.key === 'idle')?.memoryGbMs).toBeCloseTo(2 * 40_000);
    } finally {
      await dispose();
    }
  });

  it('clamps spans to the range and groups them by hour and endpoint, an owner only its own', async () => {
    const { store, dispose } = await target.open();
    try {
      const a = holding('wa', 'ep-a');
      const c = holding('wc', 'ep-c');
      await store.usageSegments.apply([
        change(a, MONDAY - HOUR / 2, 'idle'),
        change(c, MONDAY + HOUR / 2, 'active'),
      ]);
      await store.usageSegments.apply([
        change(a, MONDAY + HOUR, 'active'),
        change(c, MONDAY + HOUR + 60_000, null),
      ]);
      const rows = await store.usageSegments.sums({
        from: MONDAY,
        to: MONDAY + 3 * HOUR,
        now: MONDAY + 2 * HOUR + 1000,
        bucket: 'hour',
        grouping: 'endpoint',
      });
      const shown = rows.map((r) => `${(r.time - MONDAY) / HOUR}h ${r.key} ${r.ownerId} ${r.state} ${r.ms}`);
      // wa's idle span began half an hour before the range: only its part inside counts. Its open active span
      // began at 1h and counts until now, in its start's bucket; wc's active span falls in the bucket it began in.
      expect(shown).toEqual([
        `0h ep-a owner-1 idle ${HOUR}`,
        `0h ep-c owner-2 active ${HOUR / 2 + 60_000}`,
        `1h ep-a owner-1 active ${HOUR + 1000}`,
      ]);
      const own = await store.usageSegments.sums({
        from: MONDAY,
        to: MONDAY + 3 * HOUR,
        now: MONDAY + 2 * HOUR,
        ownerId: 'owner-2',
        grouping: 'owner',
      });
      expect(own.map((r) => [r.key, r.ms])).toEqual([['owner-2', HOUR / 2 + 60_000]]);
      const oneEndpoint = await store.usageSegments.sums({
        from: MONDAY,
        to: MONDAY + 3 * HOUR,
        now: MONDAY + 2 * HOUR,
        endpointId: 'ep-c',
        grouping: 'gpu',
      });
      expect(oneEndpoint.map((r) => r.key)).toEqual(['h100-80g']);
    } finally {
      await dispose();
    }
  });

  it("sums an owner's spans begun in the range, before it and still open, and none of another owner's", async () => {
    const { store, dispose } = await target.open();
    try {
      const before = holding('w-before', 'ep-a');
      const open = holding('w-open', 'ep-b');
      const inside = holding('w-in', 'ep-a');
      const other = holding('w-other', 'ep-c');
      await store.usageSegments.apply([
        change(before, MONDAY - 60_000, 'idle'),
        change(open, MONDAY - 30_000, 'frozen'),
        change(other, MONDAY - 60_000, 'active'),
        change(inside, MONDAY + 10_000, 'active'),
      ]);
      await store.usageSegments.apply([
        change(before, MONDAY + 20_000, null),
        change(inside, MONDAY + 40_000, null),
        change(other, MONDAY + 50_000, null),
      ]);
      const sums = await store.usageSegments.sums({
        from: MONDAY,
        to: MONDAY + HOUR,
        now: MONDAY + 100_000,
        ownerId: 'owner-1',
        grouping: 'endpoint',
      });
      // w-before: 20 s of the range; w-open: open, 100 s until now; w-in: 30 s; w-other is owner-2's.
      expect(sums.map((r) => `${r.key} ${r.ownerId} ${r.state} ${r.ms}`)).toEqual([
        'ep-a owner-1 active 30000',
        'ep-a owner-1 idle 20000',
        'ep-b owner-1 frozen 100000',
      ]);
    } finally {
      await dispose();
    }
  });

  it('puts weeks on Mondays and months on their first day (UTC)', async () => {
    const { store, dispose } = await target.open();
    try {
      const sunday = MONDAY - 24 * HOUR;
      const firstOfDecember = Date.UTC(2026, 11, 1);
      await store.usageSegments.apply([
        change(holding('w1'), sunday, 'idle'),
        change(holding('w2'), MONDAY + HOUR, 'idle'),
        change(holding('w3'), firstOfDecember + HOUR, 'idle'),
      ]);
      await store.usageSegments.apply([
        change(holding('w1'), sunday + 1000, null),
        change(holding('w2'), MONDAY + HOUR + 1000, null),
        change(holding('w3'), firstOfDecember + HOUR + 1000, null),
      ]);
      const range = { from: Date.UTC(2026, 9, 1), to: Date.UTC(2027, 0, 1), now: Date.UTC(2027, 0, 1) };
      const weeks = await store.usageSegments.sums({ ...range, bucket: 'week', grouping: 'owner' });
      expect(weeks.map((r) => new Date(r.time).toISOString())).toEqual([
        '2026-10-26T00:00:00.000Z',
        '2026-11-02T00:00:00.000Z',
        '2026-11-30T00:00:00.000Z',
      ]);
      const months = await store.usageSegments.sums({ ...range, bucket: 'month', grouping: 'owner' });
      expect(months.map((r) => `${new Date(r.time).toISOString()} ${r.ms}`)).toEqual([
        '2026-11-01T00:00:00.000Z 2000',
        '2026-12-01T00:00:00.000Z 1000',
      ]);
    } finally {
      await dispose();
    }
  });
  it("answers a range of whole days from the closed spans' daily sums and the open spans", async () => {
    const { store, dispose } = await target.open();
    try {
      const day = 24 * HOUR;
      const w1 = holding('w1');
      const w2 = holding('w2', 'ep-b', 2);
      const w3 = holding('w3', 'ep-c');
      // w1: a span continued across a restart, over a midnight; w2: one batch with two changes (a span written
      // closed); w3: open at the end, begun the day before.
      await store.usageSegments.apply([
        change(w1, MONDAY - 2 * HOUR, 'idle'),
        change(w3, MONDAY - 5 * HOUR, 'idle'),
      ]);
      await store.usageSegments.apply([
        change(w2, MONDAY + 3 * HOUR, 'active'),
        change(w2, MONDAY + 4 * HOUR, 'idle'),
        change(w1, MONDAY + day + 7 * HOUR + 123, 'active'),
      ]);
      await store.usageSegments.apply([
        change(w2, MONDAY + 4 * HOUR + 777, null),
        change(w1, MONDAY + 2 * day + 5, null),
      ]);
      const now = MONDAY + 2 * day + HOUR;
      /** ms and GPU-ms by state (and day), the owners' rows added up. */
      const totals = async (from: number, to: number, bucket?: 'day') => {
        const rows = await store.usageSegments.sums({
          from,
          to,
          now,
          grouping: 'state',
          ...(bucket ? { bucket } : {}),
        });
        const sums: Record<string, [number, number]> = {};
        for (const r of rows) {
          const key = `${bucket ? `${(r.time - MONDAY) / day} ` : ''}${r.key}`;
          const [ms, gpuMs] = sums[key] ?? [0, 0];
          sums[key] = [ms + r.ms, gpuMs + r.gpuMs];
        }
        return sums;
      };
      const w1Active = 2 * day + 5 - (day + 7 * HOUR + 123);
      // Whole days (the daily sums) and the same range with its end 1 ms later (the segments): the same totals.
      for (const to of [MONDAY + 3 * day, MONDAY + 3 * day + 1])
        expect(await totals(MONDAY, to)).toEqual({
          idle: [
            2 * day + HOUR + (day + 7 * HOUR + 123) + 777,
            2 * day + HOUR + (day + 7 * HOUR + 123) + 2 * 777,
          ],
          active: [w1Active + HOUR, w1Active + 2 * HOUR],
        });
      // Here w1's and w3's idle spans go on past the range's end: 1 ms more of each in the second.
      for (const extra of [0, 1]) {
        const idle = day + 5 * HOUR + day + 2 * HOUR + 2 * extra;
        expect(await totals(MONDAY - day, MONDAY + day + extra)).toEqual({
          idle: [idle + 777, idle + 2 * 777],
          active: [HOUR, 2 * HOUR],
        });
      }
      // By day, a closed span that crosses a midnight is split there (w1's idle); an open one counts in the bucket of
      // its start in the range (w3's; the recorder splits open spans at each hour, so that only a span continued
      // across a restart lasts longer), as the segments' own sums count it.
      expect(await totals(MONDAY, MONDAY + 3 * day, 'day')).toEqual({
        '0 active': [HOUR, 2 * HOUR],
        '0 idle': [day + (2 * day + HOUR) + 777, day + (2 * day + HOUR) + 2 * 777],
        '1 active': [17 * HOUR - 123, 17 * HOUR - 123],
        '1 idle': [7 * HOUR + 123, 7 * HOUR + 123],
        '2 active': [5, 5],
      });
    } finally {
      await dispose();
    }
  });
  it('fills the daily sums from the segments closed before them (migration 0021)', async () => {
    const { store, db, dispose } = await target.open();
    try {
      const day = 24 * HOUR;
      await store.usageSegments.apply([
        change(holding('w1'), MONDAY - HOUR, 'idle'),
        change(holding('w2'), MONDAY, 'active'),
      ]);
      await store.usageSegments.apply([change(holding('w1'), MONDAY + 2 * HOUR, null)]);
      const now = MONDAY + 3 * HOUR;
      const asked = { from: MONDAY, to: MONDAY + day, now, grouping: 'state' as const };
      const before = await store.usageSegments.sums(asked);
      // As a database made before 0021 has it: segments, no daily sums.
      await db.schema.dropTable('usage_daily').execute();
      await dailyMigration(
        db as unknown as Kysely<unknown>,
        target.name === 'postgres' ? 'postgres' : 'sqlite',
      );
      const daily = await db.selectFrom('usage_daily').select(['day', 'state', 'ms']).execute();
      expect(daily.map((r) => `${Number(r.day)} ${r.state} ${Number(r.ms)}`).sort()).toEqual(
        [`${MONDAY - day} idle ${HOUR}`, `${MONDAY} idle ${2 * HOUR}`].sort(),
      );
      expect(await store.usageSegments.sums(asked)).toEqual(before);
      expect(before.map((r) => `${r.key} ${r.ms}`).sort()).toEqual([
        `active ${3 * HOUR}`,
        `idle ${2 * HOUR}`,
      ]);
    } finally {
      await dispose();
    }
  });
});
