/**
 * `GET billing/endpoints` (RunPod's billing route) over the ledger of a real store: RunPod's fields and Corral's,
 * an owner sees only its own workers, an admin every owner's or one's, and a bad query is refused.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { ApiKeyService } from '../service/api-key-service.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 2);
const PRICES = 'usage: { currency: EUR, prices: { gpus: { h100-80g: { perHour: 3 } } } }\n';

describe('GET billing/endpoints', () => {
  let store: Store;
  let api: TestApi;

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    api = await createTestApi(store, { configText: PRICES });
    const holding = (workerId: string, ownerId: string, endpointId: string) => ({
      workerId,
      ownerId,
      endpointId,
      gpuProductId: 'h100-80g',
      gpuCount: 2,
      hostMemoryBytes: 0,
    });
    const a = holding('wa', 'owner-a', 'ep-a');
    const b = holding('wb', 'owner-b', 'ep-b');
    await store.usageSegments.apply([
      { holding: a, at: T0, state: 'starting' },
      { holding: b, at: T0, state: 'idle' },
    ]);
    await store.usageSegments.apply([
      { holding: a, at: T0 + HOUR / 2, state: 'active' },
      { holding: b, at: T0 + HOUR / 4, state: null },
    ]);
    await store.usageSegments.apply([{ holding: a, at: T0 + HOUR, state: null }]);
  });

  afterEach(async () => {
    await store.close();
  });

  const range = `startTime=${new Date(T0).toISOString()}&endTime=${new Date(T0 + 2 * HOUR).toISOString()}`;

  it("answers an owner's own rows in RunPod's shape, with GPU-seconds per state and the amount", async () => {
    const res = await api.call('GET', `billing/endpoints?bucketSize=day&${range}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        time: '2026-11-02T00:00:00.000Z',
        amount: 6,
        timeBilledMs: HOUR,
        diskSpaceBilledGb: 0,
        endpointId: 'ep-a',
        ownerId: 'owner-a',
        gpuSeconds: { downloading: 0, starting: 3600, active: 3600, idle: 0, frozen: 0, suspended: 0 },
        currency: 'EUR',
      },
    ]);
    const byGpu = await api.call('GET', `billing/endpoints?grouping=gpuTypeId&${range}`, undefined, api.keyB);
    expect(byGpu.body).toMatchObject([{ gpuTypeId: 'h100-80g', ownerId: 'owner-b', timeBilledMs: HOUR / 4 }]);
  });

  it("gives an admin every owner's rows, or one owner's", async () => {
    const keys = new ApiKeyService({ store, clock: () => Date.now() });
    const admin = (await keys.create({ ownerId: 'ops', name: 'admin', admin: true })).key;
    const all = await api.call('GET', `billing/endpoints?bucketSize=hour&${range}`, undefined, admin);
    expect((all.body as { endpointId: string }[]).map((r) => r.endpointId).sort()).toEqual(['ep-a', 'ep-b']);
    const one = await api.call('GET', `billing/endpoints?ownerId=owner-b&${range}`, undefined, admin);
    expect((one.body as { ownerId: string }[]).map((r) => r.ownerId)).toEqual(['owner-b']);
    // An owner's ownerId is its own, whatever it asks.
    const own = await api.call('GET', `billing/endpoints?ownerId=owner-b&${range}`);
    expect((own.body as { ownerId: string }[]).map((r) => r.ownerId)).toEqual(['owner-a']);
  });

  it("groups by state or by owner too (Corral's own groupings), each state's amount apart", async () => {
    const byState = await api.call('GET', `billing/endpoints?grouping=state&bucketSize=day&${range}`);
    expect(byState.status).toBe(200);
    expect(byState.body).toMatchObject([
      { state: 'active', ownerId: 'owner-a', amount: 3, timeBilledMs: HOUR / 2 },
      { state: 'starting', ownerId: 'owner-a', amount: 3, timeBilledMs: HOUR / 2 },
    ]);
    const keys = new ApiKeyService({ store, clock: () => Date.now() });
    const admin = (await keys.create({ ownerId: 'ops', name: 'admin', admin: true })).key;
    const byOwner = await api.call(
      'GET',
      `billing/endpoints?grouping=ownerId&bucketSize=day&${range}`,
      undefined,
      admin,
    );
    expect(byOwner.body).toMatchObject([
      { ownerId: 'owner-a', timeBilledMs: HOUR, amount: 6 },
      { ownerId: 'owner-b', timeBilledMs: HOUR / 4, amount: 1.5 },
    ]);
  });

  it('refuses a bucket, a grouping or a range it does not know', async () => {
    for (const query of [
      'bucketSize=year',
      'grouping=owner',
      'startTime=yesterday',
      `startTime=2026-11-03T00:00:00Z&endTime=2026-11-02T00:00:00Z`,
    ]) {
      const res = await api.call('GET', `billing/endpoints?${query}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ reason: 'INVALID_QUERY' });
    }
  });
});
