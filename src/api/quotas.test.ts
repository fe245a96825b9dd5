/**
 * Per-owner quotas and spec sizes through the API: each quota refused at create, update and credentials save
 * with 403 QUOTA_EXCEEDED and its metadata, nothing written; one owner's use never counted against another's;
 * admin keys held to the owner they act for; `GET quota`; each size bound a 400 naming the field, and a create or
 * update body over its own limit a 413.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, PREFIX, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { DEFAULT_JOB_POLICY } from '../domain/job.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { Store } from '../store/store.js';

const workerConfig = (minNum: number, maxNum: number, gpuNum: number) => ({
  workerConfig: { minNum, maxNum, gpuNum, freeTimeout: 60, maxConcurrent: 1 },
});

describe.each(storeTargets())('quotas and sizes on $name', (target) => {
  let api: TestApi;
  let store: Store;
  const disposers: (() => Promise<void>)[] = [];

  /** The API over a fresh store (4 simulated GPUs), with the given `quotas` section. */
  const open = async (quotas = '{}', shared?: Store) => {
    if (!shared) {
      const opened = await target.open();
      store = opened.store;
      disposers.push(opened.dispose);
    }
    api = await createTestApi(shared ?? store, { configText: `quotas: ${quotas}\n` });
    const app = api.app;
    disposers.push(() => app.close());
    return api;
  };
  afterEach(async () => {
    for (const dispose of disposers.splice(0).reverse()) await dispose();
  });

  const create = (overrides: Record<string, unknown> = {}, key?: string) =>
    api.call('POST', 'endpoint/create', originalClientCreateBody(overrides), key);
  const created = async (overrides: Record<string, unknown> = {}, key?: string) => {
    const response = await create(overrides, key);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.id as string;
  };
  const total = async (key?: string) => (await api.call('GET', 'endpoints', undefined, key)).body.total;
  const expectQuotaExceeded = (
    response: { status: number; body: any },
    metadata: { quota: string; limit: number; used: number; usedAfter: number },
  ) => {
    expect(response.status, JSON.stringify(response.body)).toBe(403);
    expect(response.body).toMatchObject({ code: 403, reason: 'QUOTA_EXCEEDED', metadata });
    expect(response.body.message).toContain(`above your quota of ${metadata.limit}`);
    expect(response.body.message).toContain(`would be ${metadata.usedAfter}`);
  };

  it('shows an owner its quotas (the defaults for 4 GPUs) and its use', async () => {
    await open();
    await created(workerConfig(1, 3, 1));
    await created(workerConfig(0, 2, 2));
    const response = await api.call('GET', 'quota');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      quota: { endpoints: 100, minGpus: 2, maxGpus: 16, workers: 100, credentials: 50 },
      used: { endpoints: 2, minGpus: 1, maxGpus: 7, workers: 5, credentials: 0 },
      source: 'default',
    });
  });

  it("shows the job quotas (configured, over the defaults) and what the owner's jobs take", async () => {
    await open('{ jobBytes: 1000000 }');
    const input = JSON.stringify({ prompt: 'a cat' });
    await store.jobs.enqueue(
      {
        id: 'j-1',
        endpointId: 'ep-1',
        ownerId: 'owner-a',
        input,
        webhook: null,
        policy: DEFAULT_JOB_POLICY,
        sync: false,
        createdAt: 1,
      },
      60_000,
    );
    expect((await api.call('GET', 'quota')).body).toMatchObject({
      quota: { queuedJobs: 10_000, jobBytes: 1_000_000 },
      used: { queuedJobs: 1, jobBytes: input.length },
      sources: { queuedJobs: 'default', jobBytes: 'config' },
    });
  });

  it.each([
    [
      'endpoints',
      '{ endpoints: 2 }',
      [workerConfig(0, 1, 1), workerConfig(0, 1, 1)],
      workerConfig(0, 1, 1),
      2,
      2,
      3,
    ],
    // The default for 4 GPUs: minNum may hold 2.
    ['minGpus', '{}', [workerConfig(2, 2, 1)], workerConfig(1, 1, 1), 2, 2, 3],
    ['maxGpus', '{ maxGpus: 4 }', [workerConfig(0, 2, 2)], workerConfig(0, 1, 1), 4, 4, 5],
    ['workers', '{ workers: 3 }', [workerConfig(0, 2, 1)], workerConfig(0, 2, 1), 3, 2, 4],
  ])(
    'refuses a create past the %s quota, writing nothing',
    async (quota, config, before, refused, limit, used, usedAfter) => {
      await open(config);
      for (const overrides of before) await created(overrides);
      expectQuotaExceeded(await create(refused), { quota, limit, used, usedAfter });
      expect(await total()).toBe(before.length);
    },
  );

  it('admits exactly up to the quota when one owner creates many endpoints at once', async () => {
    await open('{ endpoints: 3 }');
    const statuses = await Promise.all(Array.from({ length: 10 }, () => create().then((r) => r.status)));
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status === 403)).toHaveLength(7);
    expect(await total()).toBe(3);
  });

  it('refuses an update past a quota and leaves the endpoint as it was', async () => {
    await open();
    await created(workerConfig(1, 1, 1));
    const id = await created(workerConfig(0, 2, 1));
    const before = (await api.call('GET', `endpoint?id=${id}`)).body;
    const response = await api.call('POST', 'endpoint/update', { id, workerConfig: { minNum: 2 } });
    expectQuotaExceeded(response, { quota: 'minGpus', limit: 2, used: 1, usedAfter: 3 });
    expect((await api.call('GET', `endpoint?id=${id}`)).body).toEqual(before);
    // Within the quota, the same endpoint may change: its own use is replaced, not added.
    const fits = await api.call('POST', 'endpoint/update', { id, workerConfig: { minNum: 1 } });
    expect(fits.status, JSON.stringify(fits.body)).toBe(200);
  });

  it('lets an owner above a lowered quota shrink its endpoints but not grow them', async () => {
    await open('{ minGpus: unlimited }');
    const id = await created(workerConfig(4, 4, 1));
    await open('{}', store);
    const renamed = await api.call('POST', 'endpoint/update', { id, name: 'renamed' });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    const shrunk = await api.call('POST', 'endpoint/update', { id, workerConfig: { minNum: 3 } });
    expect(shrunk.status, JSON.stringify(shrunk.body)).toBe(200);
    expectQuotaExceeded(await create(workerConfig(1, 1, 1)), {
      quota: 'minGpus',
      limit: 2,
      used: 3,
      usedAfter: 4,
    });
  });

  it("counts only the owner's own endpoints, and applies per-owner quotas by owner id", async () => {
    await open('{ endpoints: 1, owners: { owner-b: { endpoints: 2 } } }');
    await created();
    expectQuotaExceeded(await create(), { quota: 'endpoints', limit: 1, used: 1, usedAfter: 2 });
    await created({}, api.keyB);
    await created({}, api.keyB);
    expectQuotaExceeded(await create({}, api.keyB), { quota: 'endpoints', limit: 2, used: 2, usedAfter: 3 });
    expect(await total()).toBe(1);
    expect(await total(api.keyB)).toBe(2);
    const quotaOfB = (await api.call('GET', 'quota', undefined, api.keyB)).body;
    expect(quotaOfB).toMatchObject({ quota: { endpoints: 2 }, used: { endpoints: 2 } });
  });

  it('frees quota when an endpoint is deleted, but not when it is stopped', async () => {
    await open('{ endpoints: 1 }');
    const id = await created();
    expect((await api.call('POST', 'endpoint/stop', { id })).status).toBe(200);
    expect((await create()).status).toBe(403);
    expect((await api.call('POST', 'endpoint/delete', { id })).status).toBe(200);
    await created();
  });

  it('holds an admin key acting for an owner to that owner quotas', async () => {
    await open('{ endpoints: 1, owners: { ops: { endpoints: unlimited } } }');
    await created();
    const admin = (
      await new ApiKeyService({ store, clock: Date.now }).create({
        ownerId: 'ops',
        name: 'ops',
        admin: true,
      })
    ).key;
    const asOwnerA = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      api.app.inject({
        method,
        url: `${PREFIX}/${path}`,
        headers: { authorization: `Bearer ${admin}`, 'x-corral-owner': 'owner-a' },
        ...(body === undefined ? {} : { payload: body as object }),
      });
    const refused = await asOwnerA('POST', 'endpoint/create', originalClientCreateBody());
    expectQuotaExceeded(
      { status: refused.statusCode, body: refused.json() },
      { quota: 'endpoints', limit: 1, used: 1, usedAfter: 2 },
    );
    expect((await asOwnerA('GET', 'quota')).json()).toMatchObject({
      quota: { endpoints: 1 },
      used: { endpoints: 1 },
    });
    // The admin's own owner has no such quota.
    expect((await api.call('POST', 'endpoint/create', originalClientCreateBody(), admin)).status).toBe(200);
  });

  it('refuses registry credentials past the quota', async () => {
    await open('{ credentials: 1 }');
    const save = (key?: string) =>
      api.call('POST', 'repository/auth/save', { name: 'hub', username: 'u', password: 'p' }, key);
    expect((await save()).status).toBe(200);
    expectQuotaExceeded(await save(), { quota: 'credentials', limit: 1, used: 1, usedAfter: 2 });
    expect((await api.call('GET', 'repository/auths')).body.auths).toHaveLength(1);
    expect((await save(api.keyB)).status).toBe(200);
  });
});

describe.each(storeTargets())('spec sizes on $name', (target) => {
  let api: TestApi;
  let dispose: () => Promise<void>;

  afterEach(async () => {
    await api.app.close();
    await dispose();
  });
  const open = async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store);
  };

  const envs = (count: number, key = (i: number) => `K${i}`, value = 'v') =>
    Array.from({ length: count }, (_, i) => ({ key: key(i), value }));
  const image = (fields: Record<string, string>) => ({
    image: { image: 'registry.example.com/sdxl:1.0', ...fields },
  });

  it.each([
    ['101 envs', { envs: envs(101) }, 'envs', 100, 101],
    ['an env key of 129 characters', { envs: envs(1, () => 'K'.repeat(129)) }, 'envs.0.key', 128, 129],
    [
      'an env value of 16,385 characters',
      { envs: envs(1, () => 'K', 'v'.repeat(16_385)) },
      'envs.0.value',
      16_384,
      16_385,
    ],
    ['a command of 4,097 characters', image({ command: 'x'.repeat(4_097) }), 'image.command', 4_096, 4_097],
    ['an image of 1,025 characters', image({ image: `r/${'x'.repeat(1_023)}` }), 'image.image', 1_024, 1_025],
    [
      '17 volume mounts',
      {
        volumeMounts: Array.from({ length: 17 }, (_, i) => ({ type: 'local', size: 1, mountPath: `/v${i}` })),
      },
      'volumeMounts',
      16,
      17,
    ],
    ['17 products', { products: Array.from({ length: 17 }, () => ({ id: 'h100-80g' })) }, 'products', 16, 17],
    [
      'a health path of 1,025 characters',
      { healthy: { path: `/${'h'.repeat(1_024)}` } },
      'healthy.path',
      1_024,
      1_025,
    ],
  ])(
    'refuses %s on create and update with a 400 naming the field',
    async (_what, overrides, field, max, value) => {
      await open();
      const refused = await api.call('POST', 'endpoint/create', originalClientCreateBody(overrides));
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field, max, value } });
      expect(refused.body.message).toContain(`at most ${max}`);

      const id = (await api.call('POST', 'endpoint/create', originalClientCreateBody())).body.id;
      const update = await api.call('POST', 'endpoint/update', { id, ...overrides });
      expect(update.status, JSON.stringify(update.body)).toBe(400);
      expect(update.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field, max, value } });
    },
  );

  it('accepts a spec at every bound', async () => {
    await open();
    const response = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ envs: envs(100, (i) => `K${i}`.padEnd(128, '_'), 'v'.repeat(300)) }),
    );
    expect(response.status, JSON.stringify(response.body)).toBe(200);
  });

  it('charges the rate limit one more request per 16 KiB of body it parses', async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, {
      configText: 'rateLimit: { requestsPerSecond: 1, burst: 10 }\n',
    });
    // 100,000 bytes: 1 + 6 tokens.
    const large = { id: 'nope', padding: 'x'.repeat(100_000) };
    expect((await api.call('POST', 'endpoint/stop', large)).status).toBe(404);
    const throttled = await api.call('POST', 'endpoint/stop', large);
    expect(throttled.status).toBe(429);
    expect(throttled.body.reason).toBe('RATE_LIMITED');
    // The 3 tokens left still serve small requests, and a body over the limit costs one: it is refused unread.
    const oversized = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ envs: envs(20_000) }),
    );
    expect(oversized.status).toBe(413);
    expect((await api.call('GET', 'endpoints')).status).toBe(200);
    expect((await api.call('GET', 'endpoints')).status).toBe(200);
    expect((await api.call('GET', 'endpoints')).status).toBe(429);
  });

  it('refuses a create or update body over 64 KiB with a 413 saying the limit, other routes keep 1 MiB', async () => {
    await open();
    // The flood: 20,000 envs, about 0.6 MB.
    const flood = originalClientCreateBody({ envs: envs(20_000) });
    const refused = await api.call('POST', 'endpoint/create', flood);
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({ reason: 'BODY_TOO_LARGE', metadata: { limitBytes: 65_536 } });
    expect(refused.body.message).toContain('65536 bytes');
    const update = await api.call('POST', 'endpoint/update', { id: 'any', envs: envs(20_000) });
    expect(update.status).toBe(413);
    // The same size elsewhere is read and answered by the route.
    const stop = await api.call('POST', 'endpoint/stop', { id: 'nope', padding: 'x'.repeat(200_000) });
    expect(stop.body.reason).toBe('ENDPOINT_NOT_FOUND');
  });
});
