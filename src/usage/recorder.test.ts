/**
 * The usage recorder over a real (SQLite) store, time advanced by hand: spans by state with work in flight making
 * a ready worker active, one write per flush however many requests, a restart that goes on with the open spans,
 * workers that ended unwatched, a database outage, and spans split at each UTC hour.
 */
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import type { ObservedUsage, WorkerHolding } from '../ports/usage.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { UsageRecorder } from './recorder.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 2, 10);
const silent = { warn: () => {} };

const worker = (workerId: string): WorkerHolding => ({
  workerId,
  ownerId: 'owner-1',
  endpointId: 'ep-a',
  gpuProductId: 'h100-80g',
  gpuCount: 1,
  hostMemoryBytes: 0,
});

async function setUp() {
  const store = new Store({ connection: connectSqlite(':memory:') });
  await store.migrate();
  const timers = new ManualTimers(T0);
  let writes = 0;
  let failNext = false;
  const segments = {
    open: () => store.usageSegments.open(),
    apply: async (changes: Parameters<Store['usageSegments']['apply']>[0]) => {
      writes += 1;
      if (failNext) {
        failNext = false;
        throw new Error('database unreachable');
      }
      await store.usageSegments.apply(changes);
    },
  };
  const recorder = () =>
    new UsageRecorder({ segments, clock: () => timers.now, timers, logger: silent, flushMs: 1000 });
  const spans = async (to = timers.now) =>
    (await store.usageSegments.sums({ from: 0, to: to + 1, now: to, grouping: 'state' }))
      .map((s) => `${s.key} ${s.ms / 1000}`)
      .sort();
  return {
    store,
    timers,
    recorder,
    spans,
    writes: () => writes,
    failNextWrite: () => {
      failNext = true;
    },
  };
}

/** `state seconds` per state, as `spans` prints the ledger's. */
function observedByState(observed: readonly ObservedUsage[]): string[] {
  const byState = new Map<string, number>();
  for (const o of observed) byState.set(o.state, (byState.get(o.state) ?? 0) + o.ms);
  return [...byState].map(([state, ms]) => `${state} ${ms / 1000}`).sort();
}

describe('the usage recorder', () => {
  it('counts starting, active, idle and frozen, and writes once per flush however many requests', async () => {
    const t = await setUp();
    const r = t.recorder();
    await r.start();
    const w = worker('w1');
    r.workerState(w, 'starting', t.timers.now);
    t.timers.advance(10_000);
    r.workerState(w, 'idle', t.timers.now);
    // 500 requests one after another over 5 s, then idle: each in flight 5 ms of every 10.
    for (let i = 0; i < 500; i++) {
      r.workerBusy('w1', true, t.timers.now);
      await t.timers.advanceSettling(5);
      r.workerBusy('w1', false, t.timers.now);
      await t.timers.advanceSettling(5);
    }
    t.timers.advance(5_000);
    r.workerState(w, 'frozen', t.timers.now);
    t.timers.advance(4_000);
    // What /metrics reads meanwhile: the same seconds, the frozen span still open.
    expect(observedByState(r.observed(t.timers.now))).toEqual([
      'active 2.5',
      'frozen 4',
      'idle 7.5',
      'starting 10',
    ]);
    t.timers.advance(6_000);
    r.workerState(w, 'closed', t.timers.now);
    await r.stop();
    expect(await t.spans()).toEqual(['active 2.5', 'frozen 10', 'idle 7.5', 'starting 10']);
    expect(observedByState(r.observed(t.timers.now + 60_000))).toEqual(await t.spans());
    // A write per flush (one a second over 30 s, the last at the stop), not per request.
    expect(t.writes()).toBeLessThanOrEqual(31);
    await t.store.close();
  });

  it('a restart goes on with the open span: an adopted worker loses no second and counts none twice', async () => {
    const t = await setUp();
    const first = t.recorder();
    await first.start();
    const w = worker('w1');
    first.workerState(w, 'starting', t.timers.now);
    t.timers.advance(4_000);
    first.workerState(w, 'idle', t.timers.now);
    // Its last flush before a kill -9 (no stop); 21 s pass before the next process reads the store.
    await first.flush();
    t.timers.now += 1_000;
    t.timers.now += 20_000;
    const second = t.recorder();
    await second.start();
    // Its controller adopts it (health learnt again: starting), then finds it healthy.
    second.workerState(w, 'starting', t.timers.now);
    t.timers.advance(2_000);
    second.workerState(w, 'idle', t.timers.now);
    t.timers.advance(3_000);
    second.workerState(w, 'closed', t.timers.now);
    await second.stop();
    expect(await t.spans()).toEqual(['idle 26', 'starting 4']);
    // Its counters count from its own start: the 20 s before it were the killed process's (their sum adds up).
    expect(observedByState(second.observed(t.timers.now))).toEqual(['idle 5']);
    await t.store.close();
  });

  it('closes a worker that ended unwatched: at its exit time where told, else once a pass does not know it', async () => {
    const t = await setUp();
    const first = t.recorder();
    await first.start();
    first.workerState(worker('exited'), 'idle', t.timers.now);
    first.workerState(worker('vanished'), 'idle', t.timers.now);
    await first.flush();
    t.timers.now += 60_000;
    const second = t.recorder();
    await second.start();
    // The runtime says `exited` finished 10 s in; `vanished` is not listed at all.
    second.workerState(worker('exited'), 'closed', T0 + 10_000);
    second.workersKnown(new Set(), t.timers.now);
    await second.stop();
    const rows = await t.store.usageSegments.sums({
      from: 0,
      to: t.timers.now,
      now: t.timers.now,
      grouping: 'endpoint',
    });
    expect(rows.map((r) => r.ms)).toEqual([70_000]);
    expect(await t.store.usageSegments.open()).toEqual([]);
    await t.store.close();
  });

  it('keeps the notes of a write that failed and writes them, in order, at the next flush', async () => {
    const t = await setUp();
    const r = t.recorder();
    await r.start();
    const w = worker('w1');
    r.workerState(w, 'starting', t.timers.now);
    t.failNextWrite();
    await t.timers.advanceSettling(1_000);
    r.workerState(w, 'idle', t.timers.now);
    t.timers.advance(2_000);
    r.workerState(w, 'closed', t.timers.now);
    await r.stop();
    expect(await t.spans()).toEqual(['idle 2', 'starting 1']);
    await t.store.close();
  });

  it("counts for /metrics only while it leads: a term's stop and the next term's start leave the gap out", async () => {
    const t = await setUp();
    const r = t.recorder();
    await r.start();
    r.workerState(worker('w1'), 'idle', t.timers.now);
    t.timers.advance(10_000);
    await r.stop();
    // Another replica leads for 30 s; this one leads again and goes on with the store's open span.
    t.timers.now += 30_000;
    await r.start();
    t.timers.advance(5_000);
    expect(observedByState(r.observed(t.timers.now))).toEqual(['idle 15']);
    expect(r.observed(t.timers.now)[0]).toMatchObject({
      ownerId: 'owner-1',
      endpointId: 'ep-a',
      gpuMs: 15_000,
    });
    await r.stop();
    await t.store.close();
  });

  it('splits open spans at each UTC hour, so that an hour bucket holds only its own time', async () => {
    const t = await setUp();
    const r = t.recorder();
    await r.start();
    t.timers.now = T0 + HOUR - 60_000;
    r.workerState(worker('w1'), 'idle', t.timers.now);
    await t.timers.advanceSettling(HOUR);
    await r.stop();
    const hours = await t.store.usageSegments.sums({
      from: T0,
      to: T0 + 3 * HOUR,
      now: t.timers.now,
      bucket: 'hour',
      grouping: 'state',
    });
    expect(hours.map((h) => [(h.time - T0) / HOUR, h.ms])).toEqual([
      [0, 60_000],
      [1, HOUR - 60_000],
    ]);
    expect(observedByState(r.observed(t.timers.now))).toEqual([`idle ${HOUR / 1000}`]);
    await t.store.close();
  });
});
