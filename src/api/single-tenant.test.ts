import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { Store } from '../store/store.js';

describe('a server whose workers are host processes (the local runtime) is single-tenant', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let local: TestApi;
  let adminKey: string;

  beforeAll(async () => {
    const target = storeTargets()[0];
    if (!target) throw new Error('no store');
    ({ store, dispose } = await target.open());
    local = await createTestApi(store, { singleTenant: true });
    adminKey = (
      await new ApiKeyService({ store, clock: () => Date.now() }).create({
        ownerId: 'operator',
        name: 'admin',
        admin: true,
      })
    ).key;
  });
  afterAll(async () => {
    await local.app.close();
    await dispose();
  });

  it('refuses to create an endpoint with a non-admin key: 403 RUNTIME_SINGLE_TENANT, and nothing is stored', async () => {
    const refused = await local.call('POST', 'endpoint/create', originalClientCreateBody(), local.keyA);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      code: 403,
      reason: 'RUNTIME_SINGLE_TENANT',
      message: expect.stringMatching(/host processes .*only an admin key may create endpoints/),
    });
    expect((await local.call('GET', 'endpoints', undefined, local.keyA)).body.total).toBe(0);
  });

  it('an admin key creates endpoints, also for another owner, which may read but not change or start them', async () => {
    const own = await local.call('POST', 'endpoint/create', originalClientCreateBody(), adminKey);
    expect(own.status).toBe(200);
    const forA = await local.app.inject({
      method: 'POST',
      url: '/gpu-instance/openapi/v1/endpoint/create',
      headers: {
        authorization: `Bearer ${adminKey}`,
        'x-corral-owner': 'owner-a',
        'content-type': 'application/json',
      },
      payload: JSON.stringify(originalClientCreateBody()),
    });
    expect(forA.statusCode).toBe(200);
    const id = forA.json().id as string;
    expect((await local.call('GET', `endpoint?id=${id}`, undefined, local.keyA)).status).toBe(200);
    const got = (await local.call('GET', `endpoint?id=${id}`, undefined, local.keyA)).body.endpoint;
    const update = await local.call('POST', 'endpoint/update', { ...got, id }, local.keyA);
    expect(update.status).toBe(403);
    expect(update.body.reason).toBe('RUNTIME_SINGLE_TENANT');
    expect((await local.call('POST', 'endpoint/stop', { id }, local.keyA)).status).toBe(200);
    const start = await local.call('POST', 'endpoint/start', { id }, local.keyA);
    expect(start.status).toBe(403);
  });

  it('on a multi-tenant runtime the same non-admin create succeeds', async () => {
    const docker = await createTestApi(store);
    try {
      const created = await docker.call('POST', 'endpoint/create', originalClientCreateBody(), docker.keyB);
      expect(created.status).toBe(200);
    } finally {
      await docker.app.close();
    }
  });
});
