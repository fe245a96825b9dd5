/**
 * The controller's lease where real time must pass on the database's clock: a lease expires once its time is up,
 * and (PostgreSQL) a replica taking an expired lease waits for the fenced write under way. Waits of 80-700 ms.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeTargets } from '../../../test/support/stores.js';
import type { Store } from '../store.js';
import { LeaseLostError } from './leases.js';

describe.each(storeTargets())('the lease on $name, in real time', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
  });
  afterEach(async () => {
    await dispose();
  });

  it('expires once its time is up on the database clock, and is taken by another', async () => {
    const a = await store.leases.tryAcquire('controller', 'rep-a', 40);
    if (!a) throw new Error('not acquired');
    expect(await store.leases.renew(a, 40)).toBe(true);
    await sleep(80);
    expect(await store.leases.holds(a)).toBe(false);
    expect(await store.leases.renew(a, 40)).toBe(false);
    expect(await store.leases.tryAcquire('controller', 'rep-b', 60_000)).toMatchObject({ token: 2 });
    await expect(store.leases.fenced(a, async () => 'written')).rejects.toBeInstanceOf(LeaseLostError);
  });

  if (target.name === 'postgres') {
    it('a replica taking an expired lease waits for the fenced write under way, which lands first', async () => {
      const a = await store.leases.tryAcquire('controller', 'rep-a', 300);
      if (!a) throw new Error('not acquired');
      const order: string[] = [];
      const write = store.leases.fenced(a, async (trx) => {
        await trx.insertInto('installation').values({ id: 'by-a', created_at: 1 }).execute();
        await sleep(700);
        order.push('a wrote');
      });
      await sleep(400);
      // The lease expired 100 ms ago; the write began while it was valid and holds the row until it commits.
      const b = await store.leases.tryAcquire('controller', 'rep-b', 60_000);
      order.push('b took the lease');
      await write;
      expect(b).toMatchObject({ token: 2 });
      expect(order).toEqual(['a wrote', 'b took the lease']);
      // And after it, a's writes are refused.
      await expect(store.leases.fenced(a, async () => undefined)).rejects.toBeInstanceOf(LeaseLostError);
    });
  }
});
