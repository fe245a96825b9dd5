/**
 * Two electors in one process on a real database, each with its own pool, on real time (lease 600 ms, a tick every
 * 100 ms): one leads at a time; a leader that stops renewing (killed, or paused as by SIGSTOP) is replaced once its
 * lease expires and never acts again; one that stops hands over at once. PostgreSQL when configured, and SQLite.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeTargets } from '../../test/support/stores.js';
import type { Timers } from '../ports/clock.js';
import { LeaseLostError } from '../store/cluster/leases.js';
import { connectPostgres } from '../store/postgres/connect.js';
import type { Database } from '../store/schema.js';
import { Store } from '../store/store.js';
import type { ElectionTiming } from './election.js';
import { Elector, type TermFence } from './elector.js';

const timing: ElectionTiming = { ttlMs: 600, renewEveryMs: 100, marginMs: 200 };
const quiet = { info: () => undefined, warn: () => undefined };

/** Real timers that can be frozen: while paused nothing fires, as in a process stopped by SIGSTOP. */
class PausableTimers implements Timers {
  paused = false;
  readonly #held: (() => void)[] = [];

  setTimeout(callback: () => void, ms: number): unknown {
    return setTimeout(() => (this.paused ? this.#held.push(callback) : callback()), ms);
  }

  clearTimeout(handle: unknown): void {
    clearTimeout(handle as NodeJS.Timeout);
  }

  resume(): void {
    this.paused = false;
    for (const callback of this.#held.splice(0)) callback();
  }
}

interface Replica {
  name: string;
  elector: Elector;
  fences: TermFence[];
  log: string[];
  timers: PausableTimers;
}

async function until(what: string, check: () => boolean, withinMs: number): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > withinMs) throw new Error(`not within ${withinMs} ms: ${what}`);
    await sleep(10);
  }
  return performance.now() - started;
}

describe.each(storeTargets())('two electors on $name', (target) => {
  let stores: Store[];
  /** The second pool's database, on PostgreSQL. */
  let secondDb: Kysely<Database> | undefined;
  /** Every elector of the test, stopped after it whatever happened. */
  const electors: Elector[] = [];
  let dispose: () => Promise<void>;
  const events: string[] = [];

  const replica = (name: string, store: Store): Replica => {
    const timers = new PausableTimers();
    const fences: TermFence[] = [];
    const log: string[] = [];
    const elector = new Elector({
      leases: store.leases,
      name: 'controller',
      holder: name,
      timing,
      monotonic: () => performance.now(),
      timers,
      logger: quiet,
      onElected: (fence) => {
        fences.push(fence);
        log.push('elected');
        events.push(`${name} elected`);
      },
      onDeposed: () => {
        log.push('deposed');
        events.push(`${name} deposed`);
      },
    });
    electors.push(elector);
    return { name, elector, fences, log, timers };
  };

  beforeEach(async () => {
    events.length = 0;
    const opened = await target.open();
    dispose = opened.dispose;
    stores = [opened.store];
    const url = process.env.CORRAL_TEST_DATABASE_URL;
    if (target.name === 'postgres' && url) {
      // The second replica's own pool on the same schema.
      const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(opened.db);
      const connection = connectPostgres({ connectionString: url, schema: rows[0]?.schema ?? '' });
      secondDb = connection.db;
      stores.push(new Store({ connection }));
    } else {
      stores.push(opened.store);
    }
  });
  afterEach(async () => {
    for (const elector of electors.splice(0)) await elector.stop().catch(() => undefined);
    if (stores[1] !== stores[0]) await stores[1]?.close();
    await dispose();
  });

  it('one leads; when it stops renewing (killed), the other takes over after the lease expires, never before', async () => {
    const [storeA, storeB] = stores as [Store, Store];
    const a = replica('a', storeA);
    const b = replica('b', storeB);
    a.elector.start();
    await until('a leads', () => a.elector.leading, 2_000);
    b.elector.start();
    await sleep(400);
    expect(b.elector.leading).toBe(false);
    const fenceA = a.fences[0];
    if (!fenceA) throw new Error('no fence');
    const claimA = fenceA.claim();
    expect(await storeB.leases.holds(claimA)).toBe(true);

    // Killed: a's ticks stop (its timers never fire again), so it renews no more.
    a.timers.paused = true;
    const tookOver = await until('b leads', () => b.elector.leading, 3_000);
    const lease = await storeB.leases.read('controller');
    expect(lease).toMatchObject({ holder: 'b', token: claimA.token + 1 });
    // Not before a's lease could expire (its last renewal at most one tick before the kill), and soon after it.
    expect(tookOver).toBeGreaterThan(timing.ttlMs - timing.renewEveryMs - 50);
    expect(tookOver).toBeLessThan(timing.ttlMs + 3 * timing.renewEveryMs + 500);
    // a's term is over on its own clock even though none of its timers ran: its fence refuses.
    expect(a.elector.leading).toBe(false);
    expect(() => fenceA.claim()).toThrow(LeaseLostError);
    expect(await storeB.leases.holds(claimA)).toBe(false);
    await expect(storeA.leases.fenced(claimA, async () => 'written')).rejects.toBeInstanceOf(LeaseLostError);

    // Resumed (as after SIGSTOP): its deadline deposes it first, and it does not lead again while b renews.
    a.timers.resume();
    await sleep(300);
    expect(a.log).toEqual(['elected', 'deposed']);
    expect(a.elector.leading).toBe(false);
    expect(b.elector.leading).toBe(true);
    await b.elector.stop();
    await a.elector.stop();
  }, 20_000);

  it('a paused leader resumed after its lease was taken acts as leader at no moment', async () => {
    const [storeA, storeB] = stores as [Store, Store];
    const a = replica('a', storeA);
    const b = replica('b', storeB);
    a.elector.start();
    await until('a leads', () => a.elector.leading, 2_000);
    b.elector.start();
    a.timers.paused = true;
    await until('b leads', () => b.elector.leading, 3_000);
    // Checked from the first moment after the pause, before any of a's timers has run.
    expect(a.elector.leading).toBe(false);
    expect(() => a.fences[0]?.claim()).toThrow(LeaseLostError);
    a.timers.resume();
    expect(a.elector.leading).toBe(false);
    await sleep(300);
    expect(events.filter((e) => e.endsWith('elected'))).toEqual(['a elected', 'b elected']);
    await b.elector.stop();
    await a.elector.stop();
  }, 20_000);

  it('a leader that stops releases its lease: the other takes over within a tick or two', async () => {
    const [storeA, storeB] = stores as [Store, Store];
    const a = replica('a', storeA);
    const b = replica('b', storeB);
    a.elector.start();
    await until('a leads', () => a.elector.leading, 2_000);
    b.elector.start();
    await sleep(150);
    const stoppedAt = performance.now();
    await a.elector.stop();
    expect(a.log).toEqual(['elected', 'deposed']);
    const tookOver = await until('b leads', () => b.elector.leading, 2_000);
    expect(performance.now() - stoppedAt).toBeLessThan(timing.ttlMs);
    expect(tookOver).toBeLessThan(2 * timing.renewEveryMs + 200);
    // The stopped one's old term stays refused.
    expect(() => a.fences[0]?.claim()).toThrow(LeaseLostError);
    await b.elector.stop();
  }, 20_000);

  it.skipIf(target.name === 'sqlite')(
    'a leader whose renewal hangs (the lease row locked by another session) is deposed at its deadline all the same',
    async () => {
      const [storeA] = stores as [Store, Store];
      const a = replica('a', storeA);
      a.elector.start();
      await until('a leads', () => a.elector.leading, 2_000);
      // Another session holds the lease row: a's next UPDATE waits for it, as on a database that stopped answering.
      let release: () => void = () => undefined;
      if (!secondDb) throw new Error('no second pool');
      const held = secondDb.transaction().execute(async (trx) => {
        await sql`select * from leases where name = 'controller' for update`.execute(trx);
        await new Promise<void>((resolve) => {
          release = resolve;
        });
      });
      const lockedAt = performance.now();
      try {
        const deposed = await until('a steps down', () => a.log.includes('deposed'), 3_000);
        // Its validity ends at most ttl - margin after its last successful renewal (one tick at most before the
        // lock), while the renewal still hangs: the deadline timer deposed it (late by at most a loaded machine's
        // timer delay, allowed 150 ms: still before the lease could be taken).
        expect(deposed).toBeLessThan(timing.ttlMs - timing.marginMs + 150);
        expect(performance.now() - lockedAt).toBeGreaterThan(
          timing.ttlMs - timing.marginMs - timing.renewEveryMs - 50,
        );
        expect(a.elector.leading).toBe(false);
      } finally {
        // Also when an expectation failed: the held lock would hang the elector's stop, and the hooks with it.
        release();
        await held;
      }
      await a.elector.stop();
    },
    20_000,
  );

  // On SQLite both share one in-memory connection: there is no second pool to keep while the first is cut.
  it.skipIf(target.name === 'sqlite')(
    'a leader that cannot reach the database steps down before its lease can be taken',
    async () => {
      const [storeA, storeB] = stores as [Store, Store];
      const a = replica('a', storeA);
      const b = replica('b', storeB);
      a.elector.start();
      await until('a leads', () => a.elector.leading, 2_000);
      b.elector.start();
      // a's pool is gone: every renewal fails from now on.
      await storeA.close();
      const [deposedAt, electedAt] = await Promise.all([
        until('a steps down', () => a.log.includes('deposed'), 3_000),
        until('b leads', () => b.elector.leading, 3_000),
      ]);
      expect(deposedAt).toBeLessThan(electedAt);
      expect(events).toEqual(['a elected', 'a deposed', 'b elected']);
      await b.elector.stop();
      await a.elector.stop();
      await storeB.close();
      stores[1] = storeA;
    },
    20_000,
  );
});
