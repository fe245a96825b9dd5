import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { testWorkerSpec } from '../../test/support/runtime-contract.js';
import { FakeRuntime } from '../runtime/fake/fake-runtime.js';
import { LeaseLostError } from '../store/cluster/leases.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { FencedRuntime } from './fenced-runtime.js';

describe("a leader's fenced runtime (several replicas)", () => {
  let store: Store;
  let runtime: FakeRuntime;
  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    const timers = new ManualTimers();
    runtime = new FakeRuntime({ clock: () => 1_000_000 + timers.now, timers });
  });
  afterEach(async () => {
    await runtime.close();
    await store.close();
  });

  it("says what the runtime says of its pulls: a kubernetes leader's starts do not wait for the pre-pull", async () => {
    const claim = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    if (!claim) throw new Error('not acquired');
    const fenced = new FencedRuntime({ runtime, fence: { claim: () => claim }, leases: store.leases });
    expect(fenced.createPullsWhereItRuns).toBe(false);
    runtime.createPullsWhereItRuns = true;
    expect(fenced.createPullsWhereItRuns).toBe(true);
  });

  it("has the runtime's idle tiers while its term holds, and a deposed leader's tier calls are refused", async () => {
    const claim = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    if (!claim) throw new Error('not acquired');
    const fenced = new FencedRuntime({ runtime, fence: { claim: () => claim }, leases: store.leases });
    await fenced.create(testWorkerSpec({ image: 'img:1', workerId: 'w1', endpointId: 'ep1' }));
    const tiers = fenced.idleTiers;
    expect(tiers?.suspendable).toEqual(runtime.idleTiers.suspendable);
    await tiers?.freeze('w1');
    expect(runtime.idleTiers.tierOf('w1')).toBe('frozen');
    await tiers?.thaw('w1');
    expect(runtime.idleTiers.tierOf('w1')).toBeUndefined();
    await tiers?.freeze('w1');

    await store.leases.release(claim);
    await store.leases.tryAcquire('controller', 'rep-b', 60_000);
    await expect(tiers?.thaw('w1')).rejects.toBeInstanceOf(LeaseLostError);
    await expect(tiers?.suspend('w1', { deadlineMs: 1_000 })).rejects.toBeInstanceOf(LeaseLostError);
    expect(runtime.idleTiers.tierOf('w1')).toBe('frozen');
    expect(runtime.idleTiers.calls.filter((c) => c.startsWith('thaw'))).toHaveLength(1);
  });
});
