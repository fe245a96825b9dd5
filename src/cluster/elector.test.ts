/**
 * Two electors on one SQLite store, on manual time: the electors' ticks, deadlines and monotonic clock are a
 * ManualTimers, and the lease's length on the database's clock (60 s, real) is far beyond any test's run, so that no
 * lease expires on its own here. What needs the database's clock to move (a takeover once a killed leader's lease
 * expires, a renewal held by a row lock) is in elector.int.test.ts, on real time.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loopTurns, ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Timers } from '../ports/clock.js';
import { LeaseLostError, type LeaseRepository } from '../store/cluster/leases.js';
import type { Store } from '../store/store.js';
import type { ElectionTiming } from './election.js';
import { Elector, type TermFence } from './elector.js';

const timing: ElectionTiming = { ttlMs: 60_000, renewEveryMs: 1_000, marginMs: 10_000 };
/** How long a term lasts on the leader's own clock without a renewal. */
const VALID_MS = timing.ttlMs - timing.marginMs;
const quiet = { info: () => undefined, warn: () => undefined };

/** One replica's timers over the shared manual ones: while paused nothing of its own fires (as under SIGSTOP). */
class PausableTimers implements Timers {
  paused = false;
  readonly #timers: ManualTimers;
  readonly #held: (() => void)[] = [];

  constructor(timers: ManualTimers) {
    this.#timers = timers;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    return this.#timers.setTimeout(() => (this.paused ? this.#held.push(callback) : callback()), ms);
  }

  clearTimeout(handle: unknown): void {
    this.#timers.clearTimeout(handle);
  }

  resume(): void {
    this.paused = false;
    for (const callback of this.#held.splice(0)) callback();
  }
}

interface Replica {
  elector: Elector;
  fences: TermFence[];
  log: string[];
  timers: PausableTimers;
}

describe('two electors on manual time', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let clock: ManualTimers;
  const electors: Elector[] = [];

  const replica = (
    holder: string,
    leases: Pick<LeaseRepository, 'tryAcquire' | 'renew' | 'release'>,
  ): Replica => {
    const timers = new PausableTimers(clock);
    const fences: TermFence[] = [];
    const log: string[] = [];
    const elector = new Elector({
      leases,
      name: 'controller',
      holder,
      timing,
      monotonic: () => clock.now,
      timers,
      logger: quiet,
      onElected: (fence) => {
        fences.push(fence);
        log.push('elected');
      },
      onDeposed: () => {
        log.push('deposed');
      },
    });
    electors.push(elector);
    return { elector, fences, log, timers };
  };

  /** Advances the manual clock; the store's answers (SQLite: promise callbacks only) land within a loop turn. */
  const step = async (ms: number) => {
    clock.advance(ms);
    await loopTurns(2);
  };

  beforeEach(async () => {
    const [sqlite] = storeTargets();
    if (!sqlite) throw new Error('no SQLite store target');
    ({ store, dispose } = await sqlite.open());
    clock = new ManualTimers(1_000);
  });
  afterEach(async () => {
    for (const elector of electors.splice(0)) await elector.stop().catch(() => undefined);
    await dispose();
  });

  it('one leads and renews at every tick; the other keeps trying and follows', async () => {
    const a = replica('a', store.leases);
    const b = replica('b', store.leases);
    a.elector.start();
    await step(0);
    expect(a.elector.leading).toBe(true);
    b.elector.start();
    // Renewed at every tick: still leading well past one term's length from its election.
    for (let ms = 0; ms < VALID_MS + 5 * timing.renewEveryMs; ms += timing.renewEveryMs) {
      await step(timing.renewEveryMs);
    }
    expect([a.elector.leading, b.elector.leading]).toEqual([true, false]);
    expect(a.log).toEqual(['elected']);
    expect(b.log).toEqual([]);
    expect(a.fences[0]?.claim()).toEqual({ name: 'controller', holder: 'a', token: 1 });
  });

  it('a paused leader stops acting at its deadline on its own clock, before its lease can be taken, and steps down once resumed', async () => {
    const a = replica('a', store.leases);
    const b = replica('b', store.leases);
    a.elector.start();
    await step(0);
    b.elector.start();
    const fence = a.fences[0];
    if (!fence) throw new Error('no fence');
    a.timers.paused = true;
    await step(VALID_MS - 1);
    expect(a.elector.leading).toBe(true);
    expect(fence.claim().token).toBe(1);
    await step(1);
    // None of a's timers ran, yet its term is over: its fence refuses...
    expect(a.elector.leading).toBe(false);
    expect(() => fence.claim()).toThrow(LeaseLostError);
    // ...while the database still counts the lease as a's: nobody else could have taken it yet.
    expect(b.elector.leading).toBe(false);
    expect(await store.leases.holds({ name: 'controller', holder: 'a', token: 1 })).toBe(true);
    a.timers.resume();
    await step(0);
    expect(a.log).toEqual(['elected', 'deposed']);
  });

  it('a leader whose renewal hangs is deposed by its deadline timer, not before', async () => {
    let hang = false;
    let release: () => void = () => undefined;
    const leases: Pick<LeaseRepository, 'tryAcquire' | 'renew' | 'release'> = {
      tryAcquire: (...args) => store.leases.tryAcquire(...args),
      release: (claim) => store.leases.release(claim),
      renew: async (claim, ttlMs) => {
        if (hang) await new Promise<void>((resolve) => (release = resolve));
        return store.leases.renew(claim, ttlMs);
      },
    };
    const a = replica('a', leases);
    a.elector.start();
    await step(0);
    await step(timing.renewEveryMs);
    // Renewed at 1 s: valid until 1 s + VALID_MS. The next renewal (at 2 s) never answers.
    hang = true;
    try {
      await step(timing.renewEveryMs);
      await step(VALID_MS - timing.renewEveryMs - 1);
      expect(a.log).toEqual(['elected']);
      expect(a.elector.leading).toBe(true);
      await step(1);
      expect(a.log).toEqual(['elected', 'deposed']);
      expect(a.elector.leading).toBe(false);
    } finally {
      // Also when an expectation failed: the hanging renewal would hang the elector's stop, and the hooks with it.
      release();
      await loopTurns(2);
    }
  });

  it('a leader that stops releases its lease: the other takes it at its next tick, under the next token', async () => {
    const a = replica('a', store.leases);
    const b = replica('b', store.leases);
    a.elector.start();
    await step(0);
    b.elector.start();
    await step(0);
    expect(b.elector.leading).toBe(false);
    await a.elector.stop();
    expect(a.log).toEqual(['elected', 'deposed']);
    expect(() => a.fences[0]?.claim()).toThrow(LeaseLostError);
    await step(timing.renewEveryMs - 1);
    expect(b.elector.leading).toBe(false);
    await step(1);
    expect(b.elector.leading).toBe(true);
    expect(b.fences[0]?.claim()).toEqual({ name: 'controller', holder: 'b', token: 2 });
  });
});
