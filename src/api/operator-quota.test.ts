/**
 * The operator's quota through the API: the owner of the first key (admin, printed at the first start) or of any
 * admin key creates minNum up to all the server's GPUs without a config file, while every other owner keeps the
 * default GPU quotas; a quota the config sets for the operator by owner id still holds; a revoked admin key makes
 * its owner an ordinary one again; `GET quota` says which applies and why.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { Store } from '../store/store.js';

const workers = (minNum: number, maxNum: number) => ({
  workerConfig: [{ minNum, maxNum, freeTimeout: 300, maxConcurrent: 1, gpuNum: 1 }],
});

describe.each(storeTargets())("the operator's quota on $name", (target) => {
  let api: TestApi;
  let store: Store;
  let keys: ApiKeyService;
  const disposers: (() => Promise<void>)[] = [];

  /** A server with `gpus` simulated GPUs, no config file's quotas (the defaults), and its first key. */
  const open = async (gpus: string, configText = 'quotas: {}\n') => {
    const opened = await target.open();
    store = opened.store;
    disposers.push(opened.dispose);
    api = await createTestApi(store, { configText, flags: { gpus } });
    const app = api.app;
    disposers.push(() => app.close());
    keys = new ApiKeyService({ store, clock: Date.now });
    // What `corral serve` does at its first start; keys exist already (the test's owners), so it is made here.
    return (await keys.create({ ownerId: 'default', name: 'first key', admin: true })).key;
  };
  afterEach(async () => {
    for (const dispose of disposers.splice(0).reverse()) await dispose();
  });
  const create = (overrides: Record<string, unknown>, key?: string) =>
    api.call('POST', 'endpoint/create', originalClientCreateBody(overrides), key);

  it.each([
    ['one GPU', 'h100-80g:1', 1],
    ['two GPUs', 'h100-80g:2', 2],
  ])(
    'lets the first key create minNum equal to all GPUs on %s, without a config file',
    async (_w, gpus, all) => {
      const first = await open(gpus);
      const response = await create(workers(all, all), first);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const report = (await api.call('GET', 'quota', undefined, first)).body;
      expect(report).toMatchObject({
        quota: { minGpus: 'unlimited', maxGpus: 'unlimited', endpoints: 100, secrets: 100 },
        used: { minGpus: all },
        source: 'operator',
        sources: { minGpus: 'operator', maxGpus: 'operator', endpoints: 'default' },
      });
      expect(report.reason).toContain('admin key');
    },
  );

  it('keeps the default GPU quotas for every other owner, and says so', async () => {
    await open('h100-80g:2');
    expect((await create(workers(1, 1))).status).toBe(200);
    const refused = await create(workers(1, 1));
    expect(refused.status).toBe(403);
    expect(refused.body.metadata).toEqual({ quota: 'minGpus', limit: 1, used: 1, usedAfter: 2 });
    expect((await api.call('GET', 'quota')).body).toMatchObject({
      quota: { minGpus: 1, maxGpus: 8 },
      source: 'default',
      reason: 'the defaults for a server with 2 GPU(s)',
    });
  });

  it('treats the owner of any admin key as the operator, until the key is revoked', async () => {
    await open('h100-80g:2');
    const ops = await keys.create({ ownerId: 'ops', name: 'ops', admin: true });
    const opsUser = (await keys.create({ ownerId: 'ops', name: 'ops user', admin: false })).key;
    // The owner is the operator, whichever of its keys calls.
    expect((await create(workers(2, 2), opsUser)).status).toBe(200);
    await keys.revoke(ops.id);
    const refused = await create(workers(1, 1), opsUser);
    expect(refused.status).toBe(403);
    expect((await api.call('GET', 'quota', undefined, opsUser)).body.source).toBe('default');
  });

  it('holds the operator to GPU quotas the config sets for it by owner id, and no other', async () => {
    const first = await open('h100-80g:2', 'quotas: { minGpus: 1, owners: { default: { maxGpus: 2 } } }\n');
    const response = await create(workers(2, 2), first);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const refused = await create(workers(0, 1), first);
    expect(refused.body.metadata).toEqual({ quota: 'maxGpus', limit: 2, used: 2, usedAfter: 3 });
    expect((await api.call('GET', 'quota', undefined, first)).body).toMatchObject({
      quota: { minGpus: 'unlimited', maxGpus: 2 },
      source: 'config',
      sources: { minGpus: 'operator', maxGpus: 'config' },
    });
  });
});
