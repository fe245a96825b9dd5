/**
 * The controller's lease on SQLite and PostgreSQL: taking, renewing, releasing and seizing it, the fencing token,
 * and fenced writes. Expiry is on the database's clock, which no test controls: here a renewal for 0 ms ends a lease
 * at once; leases.int.test.ts lets real time pass.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeTargets } from '../../../test/support/stores.js';
import type { Store } from '../store.js';
import { LeaseLostError } from './leases.js';

describe.each(storeTargets())('the lease on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
  });
  afterEach(async () => {
    await dispose();
  });

  it('is taken by one holder at a time, each time under the next token', async () => {
    expect(await store.leases.read('controller')).toBeUndefined();
    const a = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    expect(a).toEqual({ name: 'controller', holder: 'rep-a', token: 1 });
    expect(await store.leases.tryAcquire('controller', 'rep-b', 60_000)).toBeUndefined();
    // Not even its holder takes it again while it runs: a holder renews.
    expect(await store.leases.tryAcquire('controller', 'rep-a', 60_000)).toBeUndefined();
    // Another lease is another row.
    expect(await store.leases.tryAcquire('other', 'rep-b', 60_000)).toEqual({
      name: 'other',
      holder: 'rep-b',
      token: 1,
    });
    const lease = await store.leases.read('controller');
    expect(lease).toMatchObject({ holder: 'rep-a', token: 1 });
    expect((lease?.expiresAt ?? 0) - (lease?.acquiredAt ?? 0)).toBe(60_000);
    expect(Math.abs((lease?.now ?? 0) - Date.now())).toBeLessThan(5_000);
  });

  it('expires on the database clock (renewed for 0 ms): then another takes it, and the old claim can neither renew nor write', async () => {
    const a = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    if (!a) throw new Error('not acquired');
    expect(await store.leases.renew(a, 0)).toBe(true);
    expect(await store.leases.holds(a)).toBe(false);
    // Expired and not taken yet: a renewal is refused all the same (the holder must have stopped acting).
    expect(await store.leases.renew(a, 40)).toBe(false);
    const b = await store.leases.tryAcquire('controller', 'rep-b', 60_000);
    expect(b).toEqual({ name: 'controller', holder: 'rep-b', token: 2 });
    if (!b) throw new Error('not acquired');
    expect(await store.leases.holds(b)).toBe(true);
    await expect(store.leases.fenced(a, async () => 'written')).rejects.toBeInstanceOf(LeaseLostError);
    expect(await store.leases.fenced(b, async () => 'written')).toBe('written');
    // A stale release leaves the new holder's lease alone.
    await store.leases.release(a);
    expect(await store.leases.holds(b)).toBe(true);
  });

  it('released, is taken at once by another under the next token', async () => {
    const a = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    if (!a) throw new Error('not acquired');
    await store.leases.release(a);
    expect(await store.leases.holds(a)).toBe(false);
    expect(await store.leases.renew(a, 60_000)).toBe(false);
    expect(await store.leases.tryAcquire('controller', 'rep-b', 60_000)).toMatchObject({ token: 2 });
  });

  it('a fenced write is rolled back when its own claim is refused, and kept when accepted', async () => {
    const a = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    if (!a) throw new Error('not acquired');
    const stale = { ...a, token: a.token - 1 };
    await expect(
      store.leases.fenced(stale, async (trx) => {
        await trx.insertInto('installation').values({ id: 'never', created_at: 1 }).execute();
      }),
    ).rejects.toThrow(/no longer held/);
    await store.leases.fenced(a, async (trx) => {
      await trx.insertInto('installation').values({ id: 'kept', created_at: 1 }).execute();
    });
    const ids = (
      await store.leases.fenced(a, (trx) => trx.selectFrom('installation').select('id').execute())
    ).map((r) => r.id);
    expect(ids).toEqual(['kept']);
  });

  it('is seized whoever holds it (one process on SQLite), with the next token and no expiry', async () => {
    await store.leases.tryAcquire('controller', 'rep-old', 60_000);
    const seized = await store.leases.seize('controller', 'rep-new');
    expect(seized).toEqual({ name: 'controller', holder: 'rep-new', token: 2 });
    expect(await store.leases.holds(seized)).toBe(true);
    expect((await store.leases.seize('controller', 'rep-next')).token).toBe(3);
    expect((await store.leases.read('controller'))?.expiresAt).toBe(8_640_000_000_000_000);
  });
});
