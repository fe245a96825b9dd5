/**
 * Queue endpoints on a server whose workers could not reach the worker-facing listener (Kubernetes with the
 * listener on loopback): refused at create and at an update to `queue` with QUEUE_UNREACHABLE and the setting to
 * change; http endpoints are not affected.
 */
import { afterEach, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { describeOnce, storeTargets } from '../../test/support/stores.js';
import { kubernetesWorkersUnreachable } from '../app/worker-facing-url.js';

describeOnce('queue endpoints when workers cannot reach the worker-facing listener', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  const apiWith = async (queueOff: string | undefined): Promise<TestApi> => {
    const [sqlite] = storeTargets();
    if (!sqlite) throw new Error('no store');
    const { store, dispose } = await sqlite.open();
    const api = await createTestApi(store, queueOff === undefined ? {} : { queueOff });
    closers.push(dispose, () => api.app.close());
    return api;
  };

  it('are refused with QUEUE_UNREACHABLE naming the listener and the setting; http endpoints are created', async () => {
    const reason = kubernetesWorkersUnreachable({ listen: { host: '127.0.0.1', port: 8082 } });
    const api = await apiWith(reason);
    const queue = await api.call('POST', 'endpoint/create', originalClientCreateBody({ type: 'queue' }));
    expect(queue.status).toBe(400);
    expect(queue.body.reason).toBe('QUEUE_UNREACHABLE');
    expect(queue.body.message).toContain('127.0.0.1:8082, a loopback address no pod reaches');
    expect(queue.body.message).toContain('CORRAL_WORKERS_ADDR');
    const http = await api.call('POST', 'endpoint/create', originalClientCreateBody({ type: 'http' }));
    expect(http.status, JSON.stringify(http.body)).toBe(200);
    const toQueue = await api.call('POST', 'endpoint/update', { endpoint_id: http.body.id, type: 'queue' });
    expect(toQueue.status).toBe(400);
    expect(toQueue.body.reason).toBe('QUEUE_UNREACHABLE');
  });

  it('are created where workers reach the listener', async () => {
    const api = await apiWith(kubernetesWorkersUnreachable({ listen: { host: '0.0.0.0', port: 8082 } }));
    const queue = await api.call('POST', 'endpoint/create', originalClientCreateBody({ type: 'queue' }));
    expect(queue.status, JSON.stringify(queue.body)).toBe(200);
  });
});
