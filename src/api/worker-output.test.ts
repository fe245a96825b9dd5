import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, PREFIX, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Worker } from '../domain/worker.js';
import type { Store } from '../store/store.js';
import type { KeptOutput } from '../store/workers/worker-outputs.js';

const ENDED_AT = Date.parse('2026-11-21T23:30:09.871Z');

describe.each(storeTargets())('the output of workers that ended, through the API, on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let api: TestApi;
  let id: string;

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    api = await createTestApi(store);
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(created.status).toBe(200);
    id = created.body.id;
  });
  afterEach(async () => {
    await api.app.close();
    await dispose();
  });

  const keep = (workerId: string, over: Partial<KeptOutput> = {}) =>
    store.workerOutputs.save({
      workerId,
      endpointId: id,
      endedAt: ENDED_AT,
      failed: true,
      reason: 'worker exited with code 3',
      truncated: false,
      lines: ['booting', 'EXIT_ON_START: exiting with code 3'],
      ...over,
    });
  const log = async (query: string, key = api.keyA) => {
    const response = await api.app.inject({
      method: 'GET',
      url: `${PREFIX}/endpoint/worker/log?${query}`,
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: response.statusCode, text: response.body, headers: response.headers };
  };
  const row = (workerId: string, state: Worker['status']['state']): Worker => ({
    id: workerId,
    endpointId: id,
    ownerId: 'owner-a',
    revision: 1,
    status: { state, error: state === 'failed' ? 'RUNTIME_ERROR' : '', message: '' },
    healthy: false,
    gpuUuids: [],
    address: null,
    createdAt: 1_000,
    updatedAt: 1_000,
    readyAt: null,
  });

  it('serves the kept output of a worker that no longer exists, saying that it ended', async () => {
    await keep('w-gone');
    const answer = await log(`id=${id}&worker=w-gone&follow=1`);
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(answer.headers['x-corral-worker-ended']).toBe('2026-11-21T23:30:09.871Z');
    expect(answer.text).toBe(
      '[corral] worker w-gone ended at 2026-11-21T23:30:09.871Z (worker exited with code 3); its output:\n' +
        'booting\nEXIT_ON_START: exiting with code 3\n',
    );
  });

  it('applies tail to the kept lines and says when older ones were dropped', async () => {
    await keep('w-gone', { truncated: true });
    const answer = await log(`id=${id}&worker=w-gone&tail=1`);
    expect(answer.text).toBe(
      '[corral] worker w-gone ended at 2026-11-21T23:30:09.871Z (worker exited with code 3); ' +
        'its last output (older lines were not kept):\nEXIT_ON_START: exiting with code 3\n',
    );
    expect((await log(`id=${id}&worker=w-gone&tail=0`)).text.split('\n')).toHaveLength(2);
  });

  it('serves the kept output of a failed worker still listed', async () => {
    await store.workers.upsert(row('w-failed', 'failed'));
    await keep('w-failed');
    const answer = await log(`id=${id}&worker=w-failed`);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('EXIT_ON_START: exiting with code 3\n');
  });

  it('answers 404 WORKER_NOT_FOUND only when nothing is known of the worker', async () => {
    const answer = await log(`id=${id}&worker=w-never`);
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text)).toMatchObject({ reason: 'WORKER_NOT_FOUND' });
  });

  it("keeps another owner's ended workers hidden", async () => {
    await keep('w-gone');
    const answer = await log(`id=${id}&worker=w-gone`, api.keyB);
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text)).toMatchObject({ reason: 'ENDPOINT_NOT_FOUND' });
    expect((await api.call('GET', `endpoint/worker/ended?id=${id}`, undefined, api.keyB)).status).toBe(404);
  });

  it('lists the ended workers, the most recent first, with links to their output', async () => {
    expect((await api.call('GET', `endpoint/worker/ended?id=${id}`)).body).toEqual({ workers: [] });
    await keep('w-1');
    await keep('w-2', { endedAt: ENDED_AT + 1000, failed: false, reason: 'scaled down', truncated: true });
    const answer = await api.call('GET', `endpoint/worker/ended?endpoint_id=${id}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      workers: [
        {
          id: 'w-2',
          endedAt: '2026-11-21T23:30:10.871Z',
          failed: false,
          reason: 'scaled down',
          truncated: true,
          log: `http://127.0.0.1:8080${PREFIX}/endpoint/worker/log?id=${id}&worker=w-2`,
        },
        {
          id: 'w-1',
          endedAt: '2026-11-21T23:30:09.871Z',
          failed: true,
          reason: 'worker exited with code 3',
          truncated: false,
          log: `http://127.0.0.1:8080${PREFIX}/endpoint/worker/log?id=${id}&worker=w-1`,
        },
      ],
    });
  });
});
