/**
 * KubernetesRuntime as the two parts joined, on the API stand-in with the test as the kubelet: the catalogue counts
 * the adapter's pods and follows the nodes' watch without a call of the runtime's, a create selects the node label
 * the catalogue found for a product nobody configured, the node watch starts at the first use, and a closed runtime
 * refuses every call. Each part's own behaviour: pod-adapter.test.ts, node-catalog.test.ts; the WorkerRuntime
 * contract: kubernetes.contract.test.ts.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type StandInCluster,
  standInCluster,
  standInWorkerSpec,
} from '../../../test/support/kube-cluster.js';
import { eventually } from '../../../test/support/runtime-contract.js';
import { RuntimeError } from '../types.js';
import { clientApi } from './client-api.js';
import { KubernetesRuntime } from './kubernetes-runtime.js';

const NS = 'corral-workers';

let cluster: StandInCluster;
let runtime: KubernetesRuntime;

beforeEach(async () => {
  // No b200 pod is ever placed: it waits, its GPUs counted as waiting.
  cluster = await standInCluster({
    namespace: NS,
    unschedulable: new Map([['b200', '0/3 nodes are available']]),
  });
  // Products configured by id only: their nodes carry nvidia.com/gpu.product={id}.
  runtime = new KubernetesRuntime({
    api: clientApi(cluster.config),
    namespace: NS,
    installationId: `kr-${randomUUID().slice(0, 8)}`,
    logger: pino({ level: 'silent' }),
    products: ['h100', 'b200'],
    pods: { terminationGraceSeconds: 2 },
    watchBackoff: { initialMs: 20, maxMs: 100 },
  });
});

afterEach(async () => {
  await runtime.close();
  await cluster.close();
});

describe('KubernetesRuntime', () => {
  it("reports each product's nodes' allocatable GPUs and what its pods request, following the nodes' watch", async () => {
    await runtime.start();
    cluster.standIn.addNode({
      // The node the test kubelet binds every pod to.
      metadata: { name: 'test-node-1', labels: { 'nvidia.com/gpu.product': 'h100' } },
      status: { allocatable: { 'nvidia.com/gpu': '8' } },
    });
    // Asked before any pod: what the pods request is counted again once they change.
    await eventually(() =>
      expect(runtime.gpuScheduler.products()[0]).toMatchObject({ gpusTotal: 8, gpusFree: 8 }),
    );
    await runtime.create(standInWorkerSpec('w1', { placement: { product: 'h100', gpuNum: 2, authId: '' } }));
    void runtime
      .create(standInWorkerSpec('w2', { placement: { product: 'b200', gpuNum: 1, authId: '' } }))
      .catch(() => undefined);
    await eventually(() => expect(runtime.pod('w2')).toBeDefined());
    const nodeCalls = () => [
      cluster.standIn.requests.get('GET nodes'),
      cluster.standIn.requests.get('GET nodes?watch'),
    ];
    expect(nodeCalls()).toEqual([1, 1]);
    await eventually(() =>
      expect(runtime.gpuScheduler.products()).toEqual([
        {
          id: 'h100',
          nodes: 1,
          gpusTotal: 8,
          gpusPerNodeMax: 8,
          gpusRequested: 2,
          gpusFree: 6,
          gpusWaiting: 0,
        },
        {
          id: 'b200',
          nodes: 0,
          gpusTotal: 0,
          gpusPerNodeMax: 0,
          gpusRequested: 0,
          gpusFree: 0,
          gpusWaiting: 1,
        },
      ]),
    );
    // A node that joins, one relabelled, one that leaves: the watch says so, with no call of the runtime's.
    cluster.standIn.addNode({
      metadata: {
        name: 'gpu-2',
        labels: { 'nvidia.com/gpu.product': 'NVIDIA-B200', 'nvidia.com/gpu.memory': '183359' },
      },
      status: { allocatable: { 'nvidia.com/gpu': '8' } },
    });
    await eventually(() =>
      expect(runtime.gpuScheduler.products().map((p) => [p.id, p.gpusTotal, p.gpusFree])).toEqual([
        ['h100', 8, 6],
        ['b200', 0, 0],
        ['b200-180g', 8, 8],
      ]),
    );
    cluster.standIn.patchNode('test-node-1', { spec: { unschedulable: true } });
    cluster.standIn.removeNode('gpu-2');
    await eventually(() =>
      expect(runtime.gpuScheduler.products().map((p) => [p.id, p.nodes, p.gpusTotal])).toEqual([
        ['h100', 0, 0],
        ['b200', 0, 0],
      ]),
    );
    // One list and one watch at the start, nothing since.
    expect(nodeCalls()).toEqual([1, 1]);
  });

  it("a create for a product only the nodes show selects the GPU model's label the catalogue found", async () => {
    await runtime.start();
    cluster.standIn.addNode({
      metadata: {
        name: 'gpu-2',
        labels: { 'nvidia.com/gpu.product': 'NVIDIA-B200', 'nvidia.com/gpu.memory': '183359' },
      },
      status: { allocatable: { 'nvidia.com/gpu': '8' } },
    });
    await eventually(() => expect(runtime.gpuScheduler.products().map((p) => p.id)).toContain('b200-180g'));
    await runtime.create(
      standInWorkerSpec('w1', { placement: { product: 'b200-180g', gpuNum: 1, authId: '' } }),
    );
    expect(runtime.pod('w1')?.spec?.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-B200' });
    await runtime.remove('w1', { graceSeconds: 0 });
  });

  it('the first use starts the node watch without start(); a closed runtime refuses every call and lists nothing', async () => {
    expect(await runtime.list({})).toEqual([]);
    await eventually(() => expect(runtime.nodeWatchStats).toMatchObject({ lists: 1, watches: 1 }));
    await runtime.close();
    cluster.standIn.resetRequests();
    const error = await runtime.list({}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', message: 'the Kubernetes runtime is closed' });
    await expect(runtime.start()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(cluster.standIn.requestCount()).toBe(0);
  });
});
