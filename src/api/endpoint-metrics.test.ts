import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Worker } from '../domain/worker.js';
import type { EndpointTraffic } from '../gateway/metrics.js';
import type { Store } from '../store/store.js';

const TRAFFIC: EndpointTraffic = {
  window: { since: Date.parse('2026-11-25T10:00:00.000Z'), seconds: 300 },
  requests: { total: 12, byStatus: { 200: 10, 499: 1, 504: 1 } },
  latencyMs: { p50: 7.5, p99: 2250, mean: 340.2 },
  queueWaitMs: { p50: 0.5, p99: 1900, mean: 210 },
  queueDepth: 3,
  inFlight: 2,
  coldStarts: { count: 1, meanMs: 1830 },
};

describe.each(storeTargets())('GET endpoint/metrics on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  const apis: TestApi[] = [];
  const asked: string[] = [];

  beforeEach(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    store = opened.store;
  });
  afterEach(async () => {
    for (const api of apis.splice(0)) await api.app.close();
    asked.length = 0;
    await dispose();
  });

  const start = async (withGateway: boolean) => {
    const traffic = (endpointId: string) => {
      asked.push(endpointId);
      return TRAFFIC;
    };
    const api = await createTestApi(store, withGateway ? { traffic } : {});
    apis.push(api);
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(created.status).toBe(200);
    return { api, id: created.body.id as string };
  };

  const worker = (id: string, endpointId: string, state: Worker['status']['state']): Worker => ({
    id,
    endpointId,
    ownerId: 'owner-a',
    revision: 1,
    status: { state, error: '', message: '' },
    healthy: state === 'running',
    gpuUuids: [],
    address: null,
    createdAt: 1_000,
    updatedAt: 1_000,
    readyAt: null,
  });

  it('is linked from the endpoint, next to its log, in get and list', async () => {
    const { api, id } = await start(true);
    const url = `http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/metrics?id=${id}`;
    expect((await api.call('GET', `endpoint?id=${id}`)).body.endpoint.metrics).toBe(url);
    expect((await api.call('GET', 'endpoints')).body.endpoints[0].metrics).toBe(url);
  });

  it("summarises the endpoint's workers by state, the ready ones apart, and its traffic with its window", async () => {
    const { api, id } = await start(true);
    for (const [workerId, state] of [
      ['w1', 'running'],
      ['w2', 'running'],
      ['w3', 'starting'],
      ['w4', 'failed'],
      ['w5', 'failed'],
    ] as const) {
      await store.workers.upsert(worker(workerId, id, state));
    }
    const answer = await api.call('GET', `endpoint/metrics?endpoint_id=${id}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id,
      workers: { running: 2, starting: 1, failed: 2 },
      readyWorkers: 2,
      ...TRAFFIC,
      window: { since: '2026-11-25T10:00:00.000Z', seconds: 300 },
    });
    expect(asked).toEqual([id]);
  });

  it('answers null traffic where this process runs no gateway', async () => {
    const { api, id } = await start(false);
    expect((await api.call('GET', `endpoint/metrics?id=${id}`)).body).toEqual({
      id,
      workers: {},
      readyWorkers: 0,
      window: null,
      requests: null,
      latencyMs: null,
      queueWaitMs: null,
      queueDepth: null,
      inFlight: null,
      coldStarts: null,
    });
  });

  it("answers 404 for another owner's endpoint or an unknown one, 400 without an id", async () => {
    const { api, id } = await start(true);
    expect((await api.call('GET', `endpoint/metrics?id=${id}`, undefined, api.keyB)).status).toBe(404);
    expect((await api.call('GET', 'endpoint/metrics?id=nope')).body.reason).toBe('ENDPOINT_NOT_FOUND');
    expect((await api.call('GET', 'endpoint/metrics')).body.reason).toBe('INVALID_QUERY');
    expect((await api.call('GET', `endpoint/metrics?id=${id}`, undefined, null)).status).toBe(401);
    expect(asked).toEqual([]);
  });
});
