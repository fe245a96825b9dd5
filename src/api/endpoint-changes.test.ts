/**
 * What the API tells the controller after a change: the endpoint's id, so that `corral serve` reconciles that
 * endpoint alone (controller/queue/), after a create, an update and a delete.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';

describe('the API tells the controller which endpoint changed', () => {
  let api: TestApi;
  let dispose: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await api?.app.close();
    await dispose?.();
  });

  it('names the endpoint after its create, update and delete', async () => {
    const [sqlite] = storeTargets();
    if (!sqlite) throw new Error('no sqlite target');
    const opened = await sqlite.open();
    dispose = opened.dispose;
    const told: (string | undefined)[] = [];
    api = await createTestApi(opened.store, { onEndpointsChanged: (endpointId) => told.push(endpointId) });
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    expect(told).toEqual([id]);
    const updated = await api.call('POST', 'endpoint/update', {
      endpoint_id: id,
      workerConfig: { minNum: 0, maxNum: 3 },
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect((await api.call('POST', 'endpoint/delete', { id })).status).toBe(200);
    expect(told).toEqual([id, id, id]);
  });
});
