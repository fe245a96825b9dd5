/** The live replicas as a replica reads them from a real store's heartbeat rows, on manual timers. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import { ReplicaMembership } from './membership.js';

describe.each(storeTargets())('ReplicaMembership on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  const logged: string[] = [];
  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    logged.length = 0;
  });
  afterEach(async () => {
    await dispose();
  });

  const beat = (id: string) =>
    store.replicas.beat({ id, host: 'h', pid: 1, apiUrl: 'http://h:1', inFlight: 0, queued: 0 });
  const membership = (timers: ManualTimers) =>
    new ReplicaMembership({
      replicas: store.replicas,
      self: 'rep-b',
      intervalMs: 2_000,
      staleAfterMs: 6_000,
      timers,
      logger: {
        info: (_fields, message) => logged.push(message),
        warn: (_fields, message) => logged.push(message),
      },
    });

  it('reads the live replicas at start and every interval: a join and a leave re-split', async () => {
    const timers = new ManualTimers();
    await beat('rep-b');
    await beat('rep-c');
    const m = membership(timers);
    await m.start();
    expect(m.current()).toEqual({ count: 2, rank: 0 });
    await beat('rep-a');
    await timers.advanceSettling(1_999);
    expect(m.current()).toEqual({ count: 2, rank: 0 });
    await timers.advanceSettling(1);
    await m.settled();
    expect(m.current()).toEqual({ count: 3, rank: 1 });
    await store.replicas.remove('rep-c');
    await store.replicas.remove('rep-a');
    await timers.advanceSettling(2_000);
    await m.settled();
    expect(m.current()).toEqual({ count: 1, rank: 0 });
    await m.stop();
  });

  it('keeps the last split while the database cannot be read, and says so once', async () => {
    const timers = new ManualTimers();
    await beat('rep-a');
    const m = membership(timers);
    await m.start();
    expect(m.current()).toEqual({ count: 2, rank: 1 });
    await store.close();
    for (let read = 0; read < 3; read++) {
      await timers.advanceSettling(2_000);
      await m.settled();
    }
    expect(m.current()).toEqual({ count: 2, rank: 1 });
    expect(logged.filter((l) => l.startsWith('cannot read'))).toHaveLength(1);
    await m.stop();
  });
});
