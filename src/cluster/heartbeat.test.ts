/** The heartbeat row of a replica on a real store, on manual timers: written at start and every interval, gone at stop. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import { gatewayLoad, Heartbeat } from './heartbeat.js';

const [sqlite] = storeTargets();

describe('Heartbeat', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  beforeEach(async () => {
    if (!sqlite) throw new Error('no sqlite target');
    ({ store, dispose } = await sqlite.open());
  });
  afterEach(async () => {
    await dispose();
  });

  it('writes its row at start and its load at every beat, and removes the row at stop', async () => {
    const timers = new ManualTimers();
    const warnings: string[] = [];
    let load = { inFlight: 0, queued: 0 };
    const heartbeat = new Heartbeat({
      replicas: store.replicas,
      beat: () => ({ id: 'rep-a', host: 'h', pid: 7, apiUrl: 'http://h:1', ...load }),
      intervalMs: 2_000,
      pruneAfterMs: 600_000,
      timers,
      logger: { warn: (_fields, message) => warnings.push(message) },
    });
    await heartbeat.start();
    expect((await store.replicas.list()).replicas).toMatchObject([{ id: 'rep-a', inFlight: 0, queued: 0 }]);
    load = { inFlight: 5, queued: 2 };
    await timers.advanceSettling(1_999);
    expect((await store.replicas.list()).replicas[0]?.inFlight).toBe(0);
    await timers.advanceSettling(1);
    await heartbeat.settled();
    expect((await store.replicas.list()).replicas).toMatchObject([{ id: 'rep-a', inFlight: 5, queued: 2 }]);
    await heartbeat.stop();
    expect((await store.replicas.list()).replicas).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('says once that beats fail while the database is gone, and tells each beat whether it was taken', async () => {
    const timers = new ManualTimers();
    const warnings: string[] = [];
    const beats: boolean[] = [];
    const heartbeat = new Heartbeat({
      replicas: store.replicas,
      beat: () => ({ id: 'rep-a', host: 'h', pid: 7, apiUrl: 'http://h:1', inFlight: 0, queued: 0 }),
      intervalMs: 2_000,
      pruneAfterMs: 600_000,
      timers,
      logger: { warn: (_fields, message) => warnings.push(message) },
      onBeat: (accepted) => beats.push(accepted),
    });
    await heartbeat.start();
    await timers.advanceSettling(2_000);
    await heartbeat.settled();
    expect(beats).toEqual([true]);
    await store.close();
    for (let beat = 0; beat < 3; beat++) {
      await timers.advanceSettling(2_000);
      await heartbeat.settled();
    }
    expect(warnings).toEqual(['heartbeat failed; said once while it fails']);
    expect(beats).toEqual([true, false, false, false]);
    await heartbeat.stop();
  });

  it('sums the load over every endpoint', () => {
    expect(
      gatewayLoad([
        { inFlight: 2, queueLength: 0 },
        { inFlight: 3, queueLength: 4 },
      ]),
    ).toEqual({ inFlight: 5, queued: 4 });
    expect(gatewayLoad([])).toEqual({ inFlight: 0, queued: 0 });
  });
});
