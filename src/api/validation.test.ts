import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';

const CONFIG = `
networkStorages:
  - { id: shared-models, clusterID: cluster-1, hostPath: /srv/models, owners: all }
`;

/** [what, endpoint fields to override, status, reason, field] */
const REJECTED: [string, Record<string, unknown>, number, string, string][] = [
  [
    'minNum below range',
    { workerConfig: { minNum: -1, maxNum: 1 } },
    400,
    'OUT_OF_RANGE',
    'workerConfig.minNum',
  ],
  [
    'maxNum above range',
    { workerConfig: { minNum: 0, maxNum: 21 } },
    400,
    'OUT_OF_RANGE',
    'workerConfig.maxNum',
  ],
  [
    'minNum > maxNum',
    { workerConfig: { minNum: 3, maxNum: 2 } },
    400,
    'MIN_ABOVE_MAX',
    'workerConfig.minNum',
  ],
  ['freeTimeout 0', { workerConfig: { freeTimeout: 0 } }, 400, 'OUT_OF_RANGE', 'workerConfig.freeTimeout'],
  [
    'freeTimeout 3601',
    { workerConfig: { freeTimeout: 3601 } },
    400,
    'OUT_OF_RANGE',
    'workerConfig.freeTimeout',
  ],
  [
    'concurrency 257',
    { workerConfig: { maxConcurrent: 257 } },
    400,
    'OUT_OF_RANGE',
    'workerConfig.maxConcurrent',
  ],
  ['gpuNum 9', { workerConfig: { gpuNum: 9 } }, 400, 'OUT_OF_RANGE', 'workerConfig.gpuNum'],
  [
    'requestTimeout 0',
    { workerConfig: { requestTimeout: 0 } },
    400,
    'OUT_OF_RANGE',
    'workerConfig.requestTimeout',
  ],
  [
    'requestTimeout 3601',
    { workerConfig: { requestTimeout: 3601 } },
    400,
    'OUT_OF_RANGE',
    'workerConfig.requestTimeout',
  ],
  [
    'unknown cudaVersion',
    { workerConfig: { cudaVersion: '99.0' } },
    400,
    'INVALID_FIELD',
    'workerConfig.cudaVersion',
  ],
  ['queue wait 301', { policy: { type: 'queue', value: 301 } }, 400, 'OUT_OF_RANGE', 'policy.value'],
  [
    'request count 1001',
    { policy: { type: 'concurrency', value: 1001 } },
    400,
    'OUT_OF_RANGE',
    'policy.value',
  ],
  ['unknown policy', { policy: { type: 'magic', value: 1 } }, 400, 'INVALID_FIELD', 'policy.type'],
  ['no port', { ports: [] }, 400, 'INVALID_FIELD', 'ports'],
  ['two ports', { ports: [{ port: 80 }, { port: 81 }] }, 400, 'INVALID_FIELD', 'ports'],
  ['reserved port', { ports: [{ port: '2223' }] }, 400, 'RESERVED_PORT', 'ports.0.port'],
  ['port 0', { ports: [{ port: 0 }] }, 400, 'OUT_OF_RANGE', 'ports.0.port'],
  ['port 65536', { ports: [{ port: 65536 }] }, 400, 'OUT_OF_RANGE', 'ports.0.port'],
  ['name of 221 characters', { name: 'n'.repeat(221) }, 400, 'INVALID_FIELD', 'name'],
  ['clusterID of 256 characters', { clusterID: 'c'.repeat(256) }, 400, 'INVALID_FIELD', 'clusterID'],
  [
    'unknown volume type',
    { volumeMounts: [{ type: 'nfs', mountPath: '/x' }] },
    400,
    'INVALID_FIELD',
    'volumeMounts.0.type',
  ],
  [
    'local volume too big',
    { volumeMounts: [{ type: 'local', size: 101, mountPath: '/x' }] },
    400,
    'OUT_OF_RANGE',
    'volumeMounts.0.size',
  ],
  [
    'unknown storage',
    { volumeMounts: [{ type: 'network', id: 'nope', mountPath: '/m' }] },
    400,
    'UNKNOWN_STORAGE',
    'volumeMounts.0.id',
  ],
  [
    'storage in another cluster',
    { clusterID: 'cluster-2', volumeMounts: [{ type: 'network', id: 'shared-models', mountPath: '/m' }] },
    400,
    'CLUSTER_MISMATCH',
    'clusterID',
  ],
  ['unknown product', { products: [{ id: 'tpu-v5' }] }, 400, 'UNKNOWN_PRODUCT', 'products.0.id'],
  [
    'unknown authId',
    { image: { image: 'x/y:1', authId: 'auth-nope' } },
    400,
    'UNKNOWN_CREDENTIALS',
    'image.authId',
  ],
  ['invalid appName', { appName: 'Not_A_Label' }, 400, 'INVALID_FIELD', 'appName'],
  ['rootfsSize other than 100', { rootfsSize: 50 }, 400, 'OUT_OF_RANGE', 'rootfsSize'],
  ['wrong type', { workerConfig: { minNum: 'two' } }, 400, 'INVALID_FIELD', 'workerConfig.minNum'],
  [
    'two workerConfigs',
    { workerConfig: [{ minNum: 1 }, { minNum: 2 }] },
    400,
    'INVALID_FIELD',
    'workerConfig',
  ],
  [
    'duplicate env',
    {
      envs: [
        { key: 'A', value: '1' },
        { key: 'A', value: '2' },
      ],
    },
    400,
    'INVALID_FIELD',
    'envs.1.key',
  ],
  ['reserved env', { envs: [{ key: 'CORRAL_WORKER_ID', value: 'x' }] }, 400, 'INVALID_FIELD', 'envs.0.key'],
  ['PORT other than the port', { envs: [{ key: 'PORT', value: '9' }] }, 400, 'INVALID_FIELD', 'envs.0.key'],
  [
    'relative mountPath',
    { volumeMounts: [{ type: 'local', size: 1, mountPath: 'data' }] },
    400,
    'INVALID_FIELD',
    'volumeMounts.0.mountPath',
  ],
  ['health path without /', { healthy: { path: 'health' } }, 400, 'INVALID_FIELD', 'healthy.path'],
  ['unknown type', { type: 'batch' }, 400, 'INVALID_FIELD', 'type'],
  ['jobsPath without /', { jobsPath: 'run' }, 400, 'INVALID_FIELD', 'jobsPath'],
  ['jobsPath with a query', { jobsPath: '/run?x=1' }, 400, 'INVALID_FIELD', 'jobsPath'],
  // Issue 29: each climbed from /e/{appName} to another owner's endpoint before the rule.
  ...[
    '/../other-app/x',
    '/%2e%2e/other-app/x',
    '/.%2e/other-app/x',
    '/..\\other-app',
    '/x%2F..%2Fother-app',
  ].map((jobsPath): [string, Record<string, unknown>, number, string, string] => [
    `jobsPath ${JSON.stringify(jobsPath)}`,
    { jobsPath },
    400,
    'INVALID_FIELD',
    'jobsPath',
  ]),
  ['health period 0', { healthy: { path: '/h', period: 0 } }, 400, 'OUT_OF_RANGE', 'healthy.period'],
  ['empty image', { image: { image: '' } }, 400, 'INVALID_FIELD', 'image.image'],
  ...[
    'bars//node:1',
    '../../../etc/passwd',
    '../../../../127.0.0.1:17150/ssrf-probe?x=',
    'Corral/Worker:1',
    'app@sha256:xyz',
  ].map((image): [string, Record<string, unknown>, number, string, string] => [
    `image ${JSON.stringify(image)}`,
    { image: { image } },
    400,
    'INVALID_FIELD',
    'image.image',
  ]),
];

describe.each(storeTargets())('validation on $name', (target) => {
  let api: TestApi;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, { configText: CONFIG });
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
  });

  it.each(REJECTED)('create rejects %s', async (_what, overrides, status, reason, field) => {
    const response = await api.call('POST', 'endpoint/create', originalClientCreateBody(overrides));
    expect(response.status, JSON.stringify(response.body)).toBe(status);
    expect(response.body).toMatchObject({ code: status, reason, metadata: { field } });
    expect(response.body.message.length).toBeGreaterThan(0);
  });

  it.each(REJECTED)(
    'update rejects %s and leaves the endpoint as it was',
    async (_what, overrides, status, reason) => {
      const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
      const id = created.body.id as string;
      const before = (await api.call('GET', `endpoint?id=${id}`)).body;
      const response = await api.call('POST', 'endpoint/update', { id, ...overrides });
      expect(response.status, JSON.stringify(response.body)).toBe(status);
      expect(response.body.reason).toBe(reason);
      expect((await api.call('GET', `endpoint?id=${id}`)).body).toEqual(before);
    },
  );

  it('accepts a network volume in its own cluster and returns clusterID', async () => {
    const created = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({
        clusterID: 'cluster-1',
        volumeMounts: [{ type: 'network', id: 'shared-models', mountPath: '/models' }],
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const endpoint = (await api.call('GET', `endpoint?id=${created.body.id}`)).body.endpoint;
    expect(endpoint.clusterID).toBe('cluster-1');
    expect(endpoint.volumeMounts).toEqual([
      { type: 'network', id: 'shared-models', size: 0, mountPath: '/models' },
    ]);
  });

  it('creates a queue endpoint without ports, echoes type and jobsPath, and changes them by update', async () => {
    const { ports: _ports, ...body } = originalClientCreateBody({ type: 'queue' }).endpoint as Record<
      string,
      unknown
    >;
    const created = await api.call('POST', 'endpoint/create', { endpoint: body });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    const endpoint = (await api.call('GET', `endpoint?id=${id}`)).body.endpoint;
    expect(endpoint).toMatchObject({ type: 'queue', jobsPath: '/run', ports: [{ port: 8000 }] });
    const updated = await api.call('POST', 'endpoint/update', { id, type: 'http', jobsPath: '/jobs' });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint).toMatchObject({
      type: 'http',
      jobsPath: '/jobs',
    });
    const plain = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect((await api.call('GET', `endpoint?id=${plain.body.id}`)).body.endpoint).toMatchObject({
      type: 'http',
      jobsPath: '/run',
    });
  });

  it('reports every problem at once in metadata.issues', async () => {
    const response = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ workerConfig: { minNum: 5, maxNum: 2, gpuNum: 0 }, name: 'n'.repeat(300) }),
    );
    expect(response.body.metadata.issues.map((i: { field: string }) => i.field).sort()).toEqual([
      'name',
      'workerConfig.gpuNum',
      'workerConfig.minNum',
    ]);
  });

  it('reports a field of the wrong type and the other fields out of range in the same answer', async () => {
    const body = {
      workerConfig: { minNum: -1, gpuNum: 'two' },
      healthy: { period: 'often' },
      name: 'n'.repeat(300),
    };
    const create = await api.call('POST', 'endpoint/create', originalClientCreateBody(body));
    const fields = (response: typeof create) =>
      response.body.metadata.issues.map((i: { field: string; reason: string }) => `${i.field} ${i.reason}`);
    expect(create.status).toBe(400);
    expect(fields(create).sort()).toEqual([
      'healthy.period INVALID_FIELD',
      'name INVALID_FIELD',
      'workerConfig.gpuNum INVALID_FIELD',
      'workerConfig.minNum OUT_OF_RANGE',
    ]);
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    const update = await api.call('POST', 'endpoint/update', { id: created.body.id, ...body });
    expect(update.status).toBe(400);
    expect(fields(update).sort()).toEqual(fields(create).sort());
  });

  it('a create with a port list at fault and no image names both, and not the port as missing', async () => {
    const response = await api.call('POST', 'endpoint/create', {
      endpoint: { ports: [{ port: 80 }, { port: 81 }], workerConfig: { maxNum: 99 } },
    });
    expect(response.body.metadata.issues.map((i: { field: string }) => i.field).sort()).toEqual([
      'image.image',
      'ports',
      'workerConfig.maxNum',
    ]);
  });

  it('stores no endpoint whose image is not a reference, and says what is wrong with it', async () => {
    const before = (await api.call('GET', 'endpoints')).body.total as number;
    const response = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ image: { image: '../../../../127.0.0.1:17150/ssrf-probe?x=' } }),
    );
    expect(response.status).toBe(400);
    expect(response.body.metadata.field).toBe('image.image');
    expect(response.body.message).toContain('".." is not a registry host');
    expect((await api.call('GET', 'endpoints')).body.total).toBe(before);
  });

  it('create needs an image and a port', async () => {
    const response = await api.call('POST', 'endpoint/create', { endpoint: { name: 'x' } });
    expect(response.status).toBe(400);
    expect(response.body.metadata.field).toBe('image.image');
    expect((await api.call('POST', 'endpoint/create', { name: 'x' })).body.metadata.field).toBe('endpoint');
  });
});

describe.each(storeTargets())('create defaults under narrowed limits on $name', (target) => {
  let api: TestApi;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, {
      configText: `
limits:
  minFreeTimeout: 120
  minWorkerNum: 1
  minConcurrencyNum: 2
  minGPUNum: 2
  maxRequestTimeout: 60
  minQueueWaitTime: 10
  minRequestNum: 8
`,
    });
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
  });

  it('a create that leaves the numbers out gets the defaults moved into the configured ranges', async () => {
    const created = await api.call('POST', 'endpoint/create', {
      endpoint: { image: { image: 'x/y:1' }, ports: [{ port: 8000 }] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const endpoint = (await api.call('GET', `endpoint?id=${created.body.id}`)).body.endpoint;
    expect(endpoint.workerConfig).toEqual({
      minNum: 1,
      maxNum: 1,
      freeTimeout: '120',
      maxConcurrent: '2',
      gpuNum: 2,
      cudaVersion: 'any',
      requestTimeout: 60,
      keepFrozen: 0,
      keepSuspended: 0,
    });
    expect(endpoint.policy).toEqual({ type: 'queue', value: '10' });
  });

  it("a policy without a value gets the default of its type's range", async () => {
    const created = await api.call('POST', 'endpoint/create', {
      endpoint: { image: { image: 'x/y:1' }, ports: [{ port: 8000 }], policy: { type: 'concurrency' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const endpoint = (await api.call('GET', `endpoint?id=${created.body.id}`)).body.endpoint;
    expect(endpoint.policy).toEqual({ type: 'concurrency', value: '8' });
  });

  it('a value the client sends is still checked against the range', async () => {
    const refused = await api.call('POST', 'endpoint/create', {
      endpoint: { image: { image: 'x/y:1' }, ports: [{ port: 8000 }], workerConfig: { freeTimeout: 60 } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      reason: 'OUT_OF_RANGE',
      metadata: { field: 'workerConfig.freeTimeout' },
    });
  });
});
