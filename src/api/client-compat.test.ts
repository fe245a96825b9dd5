/**
 * Contract tests: request bodies of real clients of the original service (waverless's Go provider and others),
 * replayed byte for byte through the app, on SQLite and PostgreSQL. The bodies live in test/support/wire-fixtures.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, PREFIX, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { fillIds, OTHER_CLIENTS, WAVERLESS } from '../../test/support/wire-fixtures.js';
import type { Worker } from '../domain/worker.js';
import type { Store } from '../store/store.js';

describe.each(storeTargets())('real clients replayed byte for byte on $name', (target) => {
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

  /** Sends `payload` exactly as given, with Go's net/http headers for a JSON body. */
  const send = async (path: string, payload: string, key: string = api.keyA) => {
    const response = await api.app.inject({
      method: 'POST',
      url: `${PREFIX}/${path}`,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload,
    });
    return { status: response.statusCode, body: response.json() };
  };
  const get = async (id: string) => (await api.call('GET', `endpoint?id=${id}`)).body.endpoint;
  /** A worker row as the controller reports a running one. */
  const reportWorker = (endpointId: string, id: string, ownerId = 'owner-a'): Promise<void> => {
    const worker: Worker = {
      id,
      endpointId,
      ownerId,
      revision: 1,
      status: { state: 'running', error: '', message: '' },
      healthy: true,
      gpuUuids: [],
      address: { host: '127.0.0.1', port: 40000 },
      createdAt: 1,
      updatedAt: 1,
      readyAt: 1,
    };
    return store.workers.upsert(worker);
  };

  it('serves waverless\'s deploy and scale-down: drain the victim, then an update with cudaVersion ""', async () => {
    const created = await send('endpoint/create', WAVERLESS.create);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const endpointId = created.body.id as string;
    await reportWorker(endpointId, `${endpointId.slice(0, 8)}-aaaaaaaa`);
    await reportWorker(endpointId, `${endpointId.slice(0, 8)}-bbbbbbbb`);
    const before = await get(endpointId);
    expect(before.workerConfig).toMatchObject({
      minNum: 2,
      maxNum: 2,
      cudaVersion: 'any',
      requestTimeout: 3600,
    });
    expect(before.workers.map((w: { drain: boolean }) => w.drain)).toEqual([false, false]);

    const victim = `${endpointId.slice(0, 8)}-bbbbbbbb`;
    const drained = await send('endpoint/worker/drain', fillIds(WAVERLESS.drain, { workerId: victim }));
    expect(drained).toEqual({ status: 200, body: {} });
    expect(await store.workers.drainRequested()).toEqual(new Set([victim]));

    const scaled = await send('endpoint/update', fillIds(WAVERLESS.scaleTo1, { endpointId }));
    expect(scaled.status, JSON.stringify(scaled.body)).toBe(200);
    expect(scaled.body.endpoint.workerConfig).toMatchObject({ minNum: 1, maxNum: 1, cudaVersion: 'any' });
    const workers = (await get(endpointId)).workers as { id: string; drain: boolean }[];
    expect(Object.fromEntries(workers.map((w) => [w.id, w.drain]))).toEqual({
      [`${endpointId.slice(0, 8)}-aaaaaaaa`]: false,
      [victim]: true,
    });

    // drain: false undoes it.
    const undrained = await send('endpoint/worker/drain', `{"workerID":"${victim}","drain":false}`);
    expect(undrained).toEqual({ status: 200, body: {} });
    expect(await store.workers.drainRequested()).toEqual(new Set());
  });

  it("answers a drain of an unknown worker, or another owner's, 404 WORKER_NOT_FOUND in the error format", async () => {
    const endpointId = (await send('endpoint/create', WAVERLESS.create)).body.id as string;
    await reportWorker(endpointId, 'w-of-a');
    for (const [workerId, key] of [
      ['w-of-a', api.keyB],
      ['no-such-worker', api.keyA],
    ] as const) {
      const answer = await send('endpoint/worker/drain', fillIds(WAVERLESS.drain, { workerId }), key);
      expect(answer).toEqual({
        status: 404,
        body: {
          code: 404,
          reason: 'WORKER_NOT_FOUND',
          message: `you have no worker "${workerId}"`,
          metadata: { workerId },
        },
      });
    }
    expect(await store.workers.drainRequested()).toEqual(new Set());
  });

  it('answers a drain body without workerID, or with a drain that is not a boolean, 400 INVALID_FIELD', async () => {
    for (const [payload, field] of [
      ['{"drain":true}', 'workerID'],
      ['{"workerID":"w1","drain":"true"}', 'drain'],
    ] as const) {
      const answer = await send('endpoint/worker/drain', payload);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ code: 400, reason: 'INVALID_FIELD', metadata: { field } });
    }
  });

  it('reads an update that names the endpoint by endpoint_id', async () => {
    const endpointId = (await send('endpoint/create', WAVERLESS.create)).body.id as string;
    const updated = await send('endpoint/update', fillIds(OTHER_CLIENTS.updateByEndpointId, { endpointId }));
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.endpoint).toMatchObject({ id: endpointId, workerConfig: { minNum: 0, maxNum: 3 } });
  });

  it('reads a lone ports object as a one-element array, on create and on update', async () => {
    const created = await send('endpoint/create', OTHER_CLIENTS.createWithLonePorts);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const endpointId = created.body.id as string;
    expect((await get(endpointId)).ports).toEqual([{ port: 8080 }]);
    const updated = await send('endpoint/update', fillIds(OTHER_CLIENTS.updateWithLonePorts, { endpointId }));
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.endpoint.ports).toEqual([{ port: 9000 }]);
  });
});
