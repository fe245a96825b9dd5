import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';

describe.each(storeTargets())('endpoint operations on $name', (target) => {
  let api: TestApi;
  let store: Store;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    store = opened.store;
    api = await createTestApi(store);
  });
  afterEach(async () => {
    await api.app.close();
    await dispose();
  });

  const create = async (overrides: Record<string, unknown> = {}) => {
    const response = await api.call('POST', 'endpoint/create', originalClientCreateBody(overrides));
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.id as string;
  };

  it('serves a client written for the original service unchanged', async () => {
    const id = await create();
    expect(id).toMatch(/^[a-z][a-z0-9]{15}$/);

    const list = await api.call('GET', 'endpoints?pageSize=10&pageNum=0');
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    const listed = list.body.endpoints[0];
    expect(listed.ports).toEqual([{ port: '8000' }]);
    expect(listed.workerConfig).toMatchObject({
      freeTimeout: '300',
      maxConcurrent: '2',
      minNum: 0,
      maxNum: 2,
    });
    expect(listed.policy).toEqual({ type: 'queue', value: '60' });

    const got = await api.call('GET', `endpoint?id=${id}`);
    expect(got.status).toBe(200);
    const endpoint = got.body.endpoint;
    expect(endpoint).toMatchObject({
      id,
      name: 'sdxl',
      appName: id,
      url: `http://${id}.localhost:8000`,
      ports: [{ port: 8000 }],
      image: { image: 'registry.example.com/sdxl:1.0', authId: '', command: 'python serve.py' },
      products: [{ id: 'h100-80g' }],
      rootfsSize: 100,
      volumeMounts: [{ type: 'local', id: '', size: 30, mountPath: '/data' }],
      envs: [{ key: 'MODEL', value: 'sdxl' }],
      healthy: {
        path: '/health',
        initialDelay: 0,
        period: 2,
        timeout: 2,
        successThreshold: 1,
        failureThreshold: 3,
      },
      state: { state: 'deploying', error: '' },
      workers: [],
    });
    expect(endpoint.clusterID).toBeUndefined();
    expect(endpoint.log).toBe(`http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/log?id=${id}`);

    // Clients echo the whole object back with their change (numbers as strings, extra keys included).
    const echoed = { ...endpoint, workerConfig: { ...endpoint.workerConfig, maxNum: '3' } };
    const updated = await api.call('POST', 'endpoint/update', echoed);
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.endpoint.workerConfig.maxNum).toBe(3);
    expect(updated.body.endpoint.ports).toEqual([{ port: 8000 }]);

    expect((await api.call('POST', 'endpoint/delete', { name: id })).body).toEqual({});
    expect((await api.call('GET', `endpoint?id=${id}`)).status).toBe(404);
    expect((await api.call('GET', 'endpoints')).body).toEqual({ endpoints: [], total: 0 });
  });

  it('a partial update changes only what it sends', async () => {
    const id = await create();
    const updated = await api.call('POST', 'endpoint/update', { id, workerConfig: { maxNum: 5 } });
    expect(updated.status).toBe(200);
    const e = updated.body.endpoint;
    expect(e.workerConfig).toMatchObject({ minNum: 0, maxNum: 5, freeTimeout: '300', maxConcurrent: '2' });
    expect(e.envs).toEqual([{ key: 'MODEL', value: 'sdxl' }]);
    expect(e.name).toBe('sdxl');
  });

  it('an update wrapped like create, or a get response sent back whole, changes what it says', async () => {
    const id = await create();
    const wrapped = await api.call('POST', 'endpoint/update', {
      id,
      endpoint: { workerConfig: { maxNum: 6 }, envs: [{ key: 'MODEL', value: 'flux' }] },
    });
    expect(wrapped.status, JSON.stringify(wrapped.body)).toBe(200);
    expect(wrapped.body.endpoint.workerConfig.maxNum).toBe(6);
    expect(wrapped.body.endpoint.envs).toEqual([{ key: 'MODEL', value: 'flux' }]);

    const got = (await api.call('GET', `endpoint?id=${id}`)).body;
    got.endpoint.name = 'renamed';
    const echoed = await api.call('POST', 'endpoint/update', got);
    expect(echoed.status, JSON.stringify(echoed.body)).toBe(200);
    expect(echoed.body.endpoint.name).toBe('renamed');

    // A flat body that happens to carry an `endpoint` key is read flat, as before.
    const flat = await api.call('POST', 'endpoint/update', {
      id,
      name: 'flat',
      endpoint: { name: 'ignored' },
    });
    expect(flat.body.endpoint.name).toBe('flat');
  });

  it('a key sent as [] or {} clears it', async () => {
    const id = await create({ healthy: { path: '/ready', period: 5 } });
    const updated = await api.call('POST', 'endpoint/update', {
      id,
      envs: [],
      volumeMounts: [],
      healthy: {},
    });
    expect(updated.body.endpoint.envs).toEqual([]);
    expect(updated.body.endpoint.volumeMounts).toEqual([]);
    expect(updated.body.endpoint.healthy).toMatchObject({ path: '/health', period: 2 });
  });

  it('healthy sent as [] restores the health defaults, like {}', async () => {
    const defaults = {
      path: '/health',
      initialDelay: 0,
      period: 2,
      timeout: 2,
      successThreshold: 1,
      failureThreshold: 3,
    };
    const id = await create({ healthy: { path: '/ready', period: 5, failureThreshold: 9 } });
    const updated = await api.call('POST', 'endpoint/update', { id, healthy: [] });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.endpoint.healthy).toEqual(defaults);
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.healthy).toEqual(defaults);
    const created = await create({ healthy: [] });
    expect((await api.call('GET', `endpoint?id=${created}`)).body.endpoint.healthy).toEqual(defaults);
  });

  it.each(['workerConfig', 'policy', 'image'])(
    '%s sent as [] is a 400 that says it is required and cannot be cleared',
    async (field) => {
      const id = await create();
      const before = (await api.call('GET', `endpoint?id=${id}`)).body;
      for (const response of [
        await api.call('POST', 'endpoint/update', { id, [field]: [] }),
        await api.call('POST', 'endpoint/create', originalClientCreateBody({ [field]: [] })),
      ]) {
        expect(response.status).toBe(400);
        expect(response.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field } });
        expect(response.body.message).toMatch(new RegExp(`^${field} is required and cannot be cleared`));
      }
      expect((await api.call('GET', `endpoint?id=${id}`)).body).toEqual(before);
    },
  );

  it('changing the image makes a new revision; changing scaling numbers does not', async () => {
    const id = await create();
    await api.call('POST', 'endpoint/update', { id, workerConfig: { maxNum: 4 }, policy: { value: 10 } });
    await api.call('POST', 'endpoint/update', { id, image: { image: 'registry.example.com/sdxl:1.1' } });
    const log = await api.call('GET', `endpoint/log?id=${id}`);
    expect(log.body.events.map((e: { data: { revision: number } }) => e.data.revision)).toEqual([1, 1, 2]);
    expect(log.body.events.map((e: { type: string }) => e.type)).toEqual(['created', 'updated', 'updated']);
  });

  it("the log's updated events name the fields by their wire keys", async () => {
    const id = await create();
    await api.call('POST', 'endpoint/update', {
      id,
      workerConfig: { maxNum: 4 },
      policy: { value: 30 },
      envs: [],
      ports: [{ port: 9000 }],
      products: [],
      volumeMounts: [],
      healthy: { period: 5 },
    });
    const [, updated] = (await api.call('GET', `endpoint/log?id=${id}`)).body.events;
    const fields = ['workerConfig', 'ports', 'policy', 'products', 'volumeMounts', 'envs', 'healthy'];
    expect(updated).toMatchObject({ type: 'updated', message: `updated ${fields.join(', ')}` });
    expect(updated.data).toEqual({ fields, revision: 2 });
  });

  it('accepts the object or a one-element array, and ints as strings', async () => {
    const id = await create({
      workerConfig: { minNum: '1', maxNum: '2', freeTimeout: '10', maxConcurrent: '1', gpuNum: '2' },
      policy: { type: 'concurrency', value: '3' },
      image: { image: 'x/y:z' },
      healthy: [{ path: '/ok' }],
    });
    const e = (await api.call('GET', `endpoint?id=${id}`)).body.endpoint;
    expect(e.workerConfig).toMatchObject({ minNum: 1, maxNum: 2, gpuNum: 2 });
    expect(e.policy).toEqual({ type: 'concurrency', value: '3' });
    expect(e.healthy.path).toBe('/ok');
  });

  it("a lone surrogate in a string is refused with 400, so that no stored spec breaks the owner's later writes", async () => {
    for (const name of ['\ud800', 'a\udfffb']) {
      const refused = await api.call('POST', 'endpoint/create', originalClientCreateBody({ name }));
      expect(refused.status).toBe(400);
      expect(refused.body.reason).toBe('INVALID_JSON');
      expect(refused.body.message).toContain('valid Unicode');
    }
    // A paired surrogate (an emoji) is a character like any other; PostgreSQL reads it back in the quota's sum.
    const id = await create({ name: 'chat \ud83d\ude00' });
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.name).toBe('chat \u{1f600}');
    expect(
      (await api.call('POST', 'endpoint/create', originalClientCreateBody({ appName: 'after' }))).status,
    ).toBe(200);
  });

  it('cudaVersion "" means not set: the default on create, unchanged on update (waverless sends it)', async () => {
    const id = await create({ workerConfig: { minNum: 0, maxNum: 1, cudaVersion: '' } });
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.workerConfig.cudaVersion).toBe('any');
    const pinned = await create({ workerConfig: { minNum: 0, maxNum: 1, cudaVersion: '12.4' } });
    const updated = await api.call('POST', 'endpoint/update', {
      endpoint_id: pinned,
      workerConfig: { maxNum: 2, cudaVersion: '' },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.endpoint.workerConfig).toMatchObject({ maxNum: 2, cudaVersion: '12.4' });
  });

  it('image.pullPolicy is kept, shown, validated, and "" goes back to the installation\'s', async () => {
    const id = await create({ image: { image: 'app:latest', pullPolicy: 'IfNotPresent' } });
    const shown = async () => (await api.call('GET', `endpoint?id=${id}`)).body.endpoint.image;
    expect(await shown()).toMatchObject({ image: 'app:latest', pullPolicy: 'IfNotPresent' });
    const wrong = await api.call('POST', 'endpoint/update', {
      endpoint_id: id,
      image: { pullPolicy: 'Sometimes' },
    });
    expect(wrong.status).toBe(400);
    expect(JSON.stringify(wrong.body)).toContain('image.pullPolicy');
    const cleared = await api.call('POST', 'endpoint/update', { endpoint_id: id, image: { pullPolicy: '' } });
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200);
    expect(await shown()).not.toHaveProperty('pullPolicy');
  });

  it('pages zero-based, newest first', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await create());
    const page0 = await api.call('GET', 'endpoints?pageSize=2&pageNum=0');
    const page1 = await api.call('GET', 'endpoints?pageSize=2&pageNum=1');
    expect(page0.body.total).toBe(3);
    expect(
      [...page0.body.endpoints, ...page1.body.endpoints].map((e: { id: string }) => e.id).sort(),
    ).toEqual([...ids].sort());
    expect(page1.body.endpoints).toHaveLength(1);
    expect((await api.call('GET', 'endpoints?pageNum=-1')).body.reason).toBe('INVALID_QUERY');
  });

  it("another owner's ids answer 404 everywhere", async () => {
    const id = await create();
    const asB = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      api.call(method, path, body, api.keyB);
    expect((await asB('GET', `endpoint?id=${id}`)).status).toBe(404);
    expect((await asB('POST', 'endpoint/update', { id, name: 'x' })).status).toBe(404);
    expect((await asB('POST', 'endpoint/stop', { id })).status).toBe(404);
    expect((await asB('POST', 'endpoint/delete', { id })).status).toBe(404);
    expect((await asB('GET', `endpoint/log?id=${id}`)).status).toBe(404);
    expect((await asB('GET', 'endpoints')).body.total).toBe(0);
    expect((await api.call('GET', `endpoint?id=${id}`)).status).toBe(200);
  });

  it('stop and start change the state and log it', async () => {
    const id = await create();
    expect((await api.call('POST', 'endpoint/stop', { id })).status).toBe(200);
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.state.state).toBe('stopped');
    expect((await api.call('POST', 'endpoint/start', { endpoint_id: id })).status).toBe(200);
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.state.state).toBe('deploying');
    const types = (await api.call('GET', `endpoint/log?id=${id}`)).body.events.map(
      (e: { type: string }) => e.type,
    );
    expect(types).toEqual(['created', 'stopped', 'started']);
  });

  it('appName: custom, unique (409), and free again after delete', async () => {
    const id = await create({ appName: 'my-app' });
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.url).toBe(
      'http://my-app.localhost:8000',
    );
    const taken = await api.call('POST', 'endpoint/create', originalClientCreateBody({ appName: 'my-app' }));
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ code: 409, reason: 'APP_NAME_TAKEN', metadata: { field: 'appName' } });
    const takenByOther = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ appName: 'my-app' }),
      api.keyB,
    );
    expect(takenByOther.status).toBe(409);
    await api.call('POST', 'endpoint/delete', { id });
    expect(
      (await api.call('POST', 'endpoint/create', originalClientCreateBody({ appName: 'my-app' }))).status,
    ).toBe(200);
  });

  it('openaiModel: set, shown, changed and removed; one endpoint per model name of an owner (409); a bad name 400', async () => {
    const id = await create({ openaiModel: 'meta-llama/Llama-3.1-8B-Instruct' });
    const shown = async () => (await api.call('GET', `endpoint?id=${id}`)).body.endpoint.openaiModel;
    expect(await shown()).toBe('meta-llama/Llama-3.1-8B-Instruct');
    expect((await api.call('GET', 'endpoints')).body.endpoints[0].openaiModel).toBe(
      'meta-llama/Llama-3.1-8B-Instruct',
    );
    const taken = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ openaiModel: 'meta-llama/Llama-3.1-8B-Instruct' }),
    );
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ reason: 'OPENAI_MODEL_TAKEN', metadata: { field: 'openaiModel' } });
    // Another owner's endpoint may have the same name: each owner's router picks among its own.
    const otherOwner = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ openaiModel: 'meta-llama/Llama-3.1-8B-Instruct' }),
      api.keyB,
    );
    expect(otherOwner.status).toBe(200);
    const second = await create({ openaiModel: 'qwen2.5:7b' });
    const clash = await api.call('POST', 'endpoint/update', {
      id: second,
      openaiModel: 'meta-llama/Llama-3.1-8B-Instruct',
    });
    expect(clash.status).toBe(409);
    expect(clash.body.reason).toBe('OPENAI_MODEL_TAKEN');
    const bad = await api.call('POST', 'endpoint/update', { id, openaiModel: 'two words' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field: 'openaiModel' } });
    expect((await api.call('POST', 'endpoint/update', { id, workerConfig: { maxNum: 3 } })).status).toBe(200);
    expect(await shown()).toBe('meta-llama/Llama-3.1-8B-Instruct');
    expect((await api.call('POST', 'endpoint/update', { id, openaiModel: '' })).status).toBe(200);
    expect(await shown()).toBeUndefined();
    expect(
      (
        await api.call('POST', 'endpoint/update', {
          id: second,
          openaiModel: 'meta-llama/Llama-3.1-8B-Instruct',
        })
      ).status,
    ).toBe(200);
  });

  it('reports limits with every field of the spec, all integers, min <= max', async () => {
    const limits = (await api.call('GET', 'endpoint/limit')).body;
    const names = [
      'RootfsSize',
      'LocalVolumeSize',
      'WorkerNum',
      'FreeTimeout',
      'ConcurrencyNum',
      'QueueWaitTime',
      'RequestNum',
      'GPUNum',
      'RequestTimeout',
    ];
    for (const name of names) {
      expect(Number.isInteger(limits[`min${name}`]), name).toBe(true);
      expect(limits[`min${name}`]).toBeLessThanOrEqual(limits[`max${name}`]);
    }
    expect(limits.freeRootfsSize).toBe(100);
    expect(limits.freeLocalVolumeSize).toBe(30);
    expect(limits.cudaVersionList).toEqual(['11.8', '12.0', '12.1', '12.2', '12.3', '12.4']);
  });

  it('reports exactly the default limits the issue asks for, as integers', async () => {
    const limits = (await api.call('GET', 'endpoint/limit')).body;
    // Written out rather than read from DEFAULT_LIMITS: a changed default must fail here.
    expect(limits).toStrictEqual({
      minRootfsSize: 100,
      maxRootfsSize: 100,
      freeRootfsSize: 100,
      minLocalVolumeSize: 0,
      maxLocalVolumeSize: 100,
      freeLocalVolumeSize: 30,
      minWorkerNum: 0,
      maxWorkerNum: 20,
      minFreeTimeout: 1,
      maxFreeTimeout: 3600,
      minConcurrencyNum: 1,
      maxConcurrencyNum: 256,
      minQueueWaitTime: 1,
      maxQueueWaitTime: 300,
      minRequestNum: 1,
      maxRequestNum: 1000,
      minGPUNum: 1,
      maxGPUNum: 8,
      minRequestTimeout: 1,
      maxRequestTimeout: 3600,
      cudaVersionList: ['11.8', '12.0', '12.1', '12.2', '12.3', '12.4'],
    });
  });

  it('a list without pageSize returns up to 1000 endpoints, and total counts them all', async () => {
    // Written through the store, four at a time: 1001 creates through the API would make this test slow.
    const endpoints = Array.from({ length: 1001 }, (_, i) =>
      sampleEndpoint({ ownerId: 'owner-a', at: 1_700_000_000_000 + i }),
    );
    let next = 0;
    const writer = async () => {
      for (let endpoint = endpoints[next++]; endpoint; endpoint = endpoints[next++]) {
        await store.endpoints.create(endpoint, [], {
          at: endpoint.createdAt,
          ownerId: endpoint.ownerId,
          actor: 'test',
          action: 'endpoint.create',
          targetId: endpoint.id,
        });
      }
    };
    await Promise.all([writer(), writer(), writer(), writer()]);

    const first = await api.call('GET', 'endpoints');
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(1001);
    expect(first.body.endpoints).toHaveLength(1000);
    // Newest first: the oldest one is left for the second page.
    expect(first.body.endpoints[0].id).toBe(endpoints[1000]?.id);
    expect(first.body.endpoints.map((e: { id: string }) => e.id)).not.toContain(endpoints[0]?.id);
    const second = await api.call('GET', 'endpoints?pageNum=1');
    expect(second.body.endpoints.map((e: { id: string }) => e.id)).toEqual([endpoints[0]?.id]);
    expect(second.body.total).toBe(1001);
    // A larger pageSize is capped at 1000 too.
    expect((await api.call('GET', 'endpoints?pageSize=5000')).body.endpoints).toHaveLength(1000);
  });

  it('lists products from the GPU inventory', async () => {
    const products = (await api.call('GET', 'products')).body.products;
    expect(products.map((p: { id: string; gpusTotal: number }) => [p.id, p.gpusTotal])).toEqual([
      ['a100-40g', 2],
      ['h100-80g', 2],
    ]);
  });

  it('records an audit entry for every mutation', async () => {
    const id = await create();
    await api.call('POST', 'endpoint/update', { id, name: 'n' });
    await api.call('POST', 'endpoint/stop', { id });
    await api.call('POST', 'endpoint/start', { id });
    await api.call('POST', 'endpoint/delete', { id });
    const saved = await api.call('POST', 'repository/auth/save', {
      name: 'hub',
      username: 'u',
      password: 'p',
    });
    await api.call('POST', 'repository/auth/delete', { id: saved.body.id });
    await api.call('POST', 'endpoint/update', { id: 'missing', name: 'n' });
    const entries = await store.audit.list('owner-a', 20);
    expect(entries.map((e) => e.action).reverse()).toEqual([
      'key.create',
      'endpoint.create',
      'endpoint.update',
      'endpoint.stop',
      'endpoint.start',
      'endpoint.delete',
      'credentials.save',
      'credentials.delete',
    ]);
    expect(entries.every((e) => e.actor.length > 0)).toBe(true);
  });
});
