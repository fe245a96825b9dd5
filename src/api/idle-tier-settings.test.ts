import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import { idleTiersOff } from '../runtime/idle-tiers.js';
import type { Store } from '../store/store.js';

const [sqlite] = storeTargets();

describe('workerConfig.keepFrozen and keepSuspended (idle tiers)', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  const apis: TestApi[] = [];

  beforeEach(async () => {
    if (!sqlite) throw new Error('no sqlite target');
    ({ store, dispose } = await sqlite.open());
  });
  afterEach(async () => {
    for (const api of apis.splice(0)) await api.app.close();
    await dispose();
  });

  const apiWith = async (options: Parameters<typeof createTestApi>[1] = {}) => {
    const api = await createTestApi(store, options);
    apis.push(api);
    return api;
  };

  it('default to 0 (today: stopped at freeTimeout), accept numeric strings, and are echoed', async () => {
    const api = await apiWith();
    const plain = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(plain.status).toBe(200);
    const got = await api.call('GET', `endpoint?id=${plain.body.id}`);
    expect(got.body.endpoint.workerConfig).toMatchObject({ keepFrozen: 0, keepSuspended: 0 });

    const tiered = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({
        workerConfig: { minNum: 0, maxNum: 1, keepFrozen: '600', keepSuspended: 3600 },
      }),
    );
    expect(tiered.status, JSON.stringify(tiered.body)).toBe(200);
    const echoed = await api.call('GET', `endpoint?id=${tiered.body.id}`);
    expect(echoed.body.endpoint.workerConfig).toMatchObject({ keepFrozen: 600, keepSuspended: 3600 });

    const updated = await api.call('POST', 'endpoint/update', {
      id: tiered.body.id,
      workerConfig: { keepFrozen: '0' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.endpoint.workerConfig).toMatchObject({ keepFrozen: 0, keepSuspended: 3600 });
  });

  it('an endpoint stored before the idle tiers existed reads as keepFrozen 0 and keepSuspended 0', async () => {
    const endpoint = sampleEndpoint();
    const { keepFrozenSeconds: _f, keepSuspendedSeconds: _s, ...before } = endpoint.spec.workers;
    const old = { ...endpoint, spec: { ...endpoint.spec, workers: before as typeof endpoint.spec.workers } };
    await store.endpoints.create(old, [], {
      at: 0,
      ownerId: old.ownerId,
      actor: 't',
      action: 'c',
      targetId: old.id,
    });
    expect((await store.endpoints.get(old.ownerId, old.id))?.spec.workers).toMatchObject({
      keepFrozenSeconds: 0,
      keepSuspendedSeconds: 0,
    });
  });

  it.each([
    ['keepFrozen', -1, 'OUT_OF_RANGE'],
    ['keepSuspended', 'soon', 'INVALID_FIELD'],
    ['keepFrozen', '1.5', 'INVALID_FIELD'],
  ])('refuses %s: %j with a 400 naming the field', async (field, value, reason) => {
    const api = await apiWith();
    const refused = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ workerConfig: { minNum: 0, maxNum: 1, [field]: value } }),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.reason).toBe(reason);
    expect(JSON.stringify(refused.body)).toContain(`workerConfig.${field}`);
  });

  it('on a runtime without a freezer (kubernetes without node agents) a tier above 0 is a 400 naming the runtime and the agent', async () => {
    const api = await apiWith({ idleTiersOff: idleTiersOff({ name: 'kubernetes' }) });
    const refused = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ workerConfig: { minNum: 0, maxNum: 1, keepFrozen: 60 } }),
    );
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain(
      'the kubernetes runtime has no node agent configured (kubernetes.nodeAgent',
    );
    expect(JSON.stringify(refused.body)).toContain('workerConfig.keepFrozen');
    const zero = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ workerConfig: { minNum: 0, maxNum: 1, keepFrozen: 0 } }),
    );
    expect(zero.status).toBe(200);
  });
});
