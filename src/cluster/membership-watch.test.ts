/**
 * `MembershipWatch` over the heartbeat rows of a real store: the live replicas become the share schedule's
 * membership, a replica's shares last only as long as the others count it in, or while its reads fail (the
 * database is out) and it keeps trying; and the same reads give the count-and-rank split of the API's rate limit,
 * which stands while reads fail. On both stores. Timers are manual; the database's clock is real, so beats are
 * written just before each read.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import { MembershipWatch } from './membership-watch.js';
import { ShareSchedule } from './slot-shares.js';

const beat = (id: string, settled: string | null = null) => ({
  id,
  host: 'h',
  pid: 1,
  apiUrl: 'http://x',
  inFlight: 0,
  queued: 0,
  settled,
});

describe.each(storeTargets())('MembershipWatch on $name', (target) => {
  let dispose: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await dispose?.();
  });

  async function setup(failing?: { fail: boolean }) {
    const opened = await target.open();
    dispose = opened.dispose;
    const store: Store = opened.store;
    const timers = new ManualTimers(1_000);
    const schedule = new ShareSchedule({ self: 'b', timing: { settleMs: 0 } });
    let changes = 0;
    const logged: string[] = [];
    const watch = new MembershipWatch({
      replicaId: 'b',
      replicas: {
        list: () => (failing?.fail ? Promise.reject(new Error('database down')) : store.replicas.list()),
      },
      schedule,
      aliveMs: 6_000,
      marginMs: 1_000,
      intervalMs: 1_000,
      monotonic: () => timers.now,
      timers,
      logger: {
        info: (_fields: object, message: string) => logged.push(message),
        warn: (_fields: object, message: string) => logged.push(message),
      },
      onChange: () => {
        changes += 1;
      },
    });
    return { store, timers, schedule, watch, changes: () => changes, logged };
  }

  it('feeds the live replicas to the schedule; shares grow once the others settled for them', async () => {
    const { store, timers, schedule, watch, changes } = await setup();
    await store.replicas.beat(beat('a'));
    await store.replicas.beat(beat('b'));
    await watch.start();
    expect(schedule.members).toEqual(['a', 'b']);
    expect(watch.others).toEqual(['a']);
    expect(changes()).toBe(1);
    // Valid about aliveMs - margin after the read (the beat was just written).
    expect(schedule.validUntil - timers.now).toBeGreaterThan(4_000);
    expect(schedule.validUntil - timers.now).toBeLessThanOrEqual(5_000);
    expect(schedule.share('w', 4, timers.now)).toBe(0);
    await store.replicas.beat(beat('a', 'a,b'));
    await store.replicas.beat(beat('b'));
    timers.advance(1_000);
    await watch.settled();
    await watch.stop();
    expect(schedule.share('w', 4, timers.now)).toBe(2);
    expect(changes()).toBeGreaterThanOrEqual(2);
  });

  it("knows the other live replicas' gateway URLs from their rows (none for a row without one, nor its own)", async () => {
    const { store, watch } = await setup();
    await store.replicas.beat({ ...beat('a'), gatewayUrl: 'http://10.0.0.1:8000' });
    await store.replicas.beat({ ...beat('b'), gatewayUrl: 'http://10.0.0.2:8000' });
    await store.replicas.beat(beat('c'));
    await watch.start();
    await watch.stop();
    expect(watch.others).toEqual(['a', 'c']);
    expect([...watch.gatewayUrls]).toEqual([['a', 'http://10.0.0.1:8000']]);
    // A later beat without the URL keeps the one written.
    await store.replicas.beat(beat('a'));
    expect((await store.replicas.list()).replicas.find((r) => r.id === 'a')?.gatewayUrl).toBe(
      'http://10.0.0.1:8000',
    );
  });

  it('keeps the shares while reads fail (the database is out), and ends them when the reads stop (a pause)', async () => {
    const failing = { fail: false };
    const { store, timers, schedule, watch } = await setup(failing);
    await store.replicas.beat(beat('b'));
    await watch.start();
    const until = schedule.validUntil;
    failing.fail = true;
    // Reads fail every second, well past the last good read's deadline: the shares stand.
    for (let t = timers.now; t < until + 10_000; t += 1_000) {
      timers.advance(1_000);
      await watch.settled();
    }
    expect(schedule.members).toEqual(['b']);
    expect(schedule.share('w', 4, timers.now)).toBe(4);
    // The process paused: no read runs before the deadline passes, and the shares end.
    timers.advance(60_000);
    expect(schedule.members).toBeUndefined();
    expect(schedule.share('w', 4, timers.now)).toBe(0);
    await watch.stop();
  });

  it('a replica that is not among the live rows has no share', async () => {
    const { store, timers, schedule, watch } = await setup();
    await store.replicas.beat(beat('a'));
    await watch.start();
    expect(schedule.members).toEqual(['a']);
    expect(schedule.validUntil).toBeLessThanOrEqual(timers.now);
    expect(schedule.share('w', 4, timers.now)).toBe(0);
    await watch.stop();
  });

  it('splits the rate limit by the live replicas: a join and a leave re-split, and each change is said', async () => {
    const { store, timers, watch, logged } = await setup();
    expect(watch.split).toEqual({ count: 1, rank: 0 });
    await store.replicas.beat(beat('b'));
    await store.replicas.beat(beat('c'));
    await watch.start();
    expect(watch.split).toEqual({ count: 2, rank: 0 });
    await store.replicas.beat(beat('a'));
    timers.advance(999);
    await watch.settled();
    expect(watch.split).toEqual({ count: 2, rank: 0 });
    timers.advance(1);
    await watch.settled();
    expect(watch.split).toEqual({ count: 3, rank: 1 });
    await store.replicas.remove('c');
    await store.replicas.remove('a');
    timers.advance(1_000);
    await watch.settled();
    expect(watch.split).toEqual({ count: 1, rank: 0 });
    expect(logged.filter((l) => l.startsWith('live replicas changed'))).toHaveLength(3);
    await watch.stop();
  });

  it('keeps the last rate-limit split while the database cannot be read, and says so once', async () => {
    const failing = { fail: false };
    const { store, timers, watch, logged } = await setup(failing);
    await store.replicas.beat(beat('a'));
    await watch.start();
    expect(watch.split).toEqual({ count: 2, rank: 1 });
    failing.fail = true;
    for (let read = 0; read < 3; read++) {
      timers.advance(1_000);
      await watch.settled();
    }
    expect(watch.split).toEqual({ count: 2, rank: 1 });
    expect(logged.filter((l) => l.startsWith('could not read the replicas'))).toHaveLength(1);
    await watch.stop();
  });
});
