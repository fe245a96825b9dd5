import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { type StandInCluster, standInCluster } from '../../test/support/kube-cluster.js';
import type { KubeStandIn } from '../../test/support/kube-stand-in.js';
import type { TestKubelet } from '../../test/support/test-kubelet.js';
import type { Endpoint } from '../domain/endpoint.js';
import { clientApi } from '../runtime/kubernetes/client-api.js';
import { KubernetesRuntime } from '../runtime/kubernetes/kubernetes-runtime.js';
import { Controller } from './controller.js';
import { answered } from './health/probe-result.js';
import { schedulerPlacement } from './placement/worker-placement.js';
import { RoutingTable } from './routing-table.js';

const NS = 'corral-workers';
const FULL = '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.';
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * The controller over the Kubernetes runtime on the API stand-in (real HTTP, real watches), the test playing the
 * scheduler and the kubelet: a worker whose pod the scheduler has no room for is `pending` with the scheduler's
 * words, during its create and after a restart, and follows its pod once it runs.
 */
describe('Controller: workers the Kubernetes scheduler has no room for', () => {
  let h: ControllerHarness;
  let cluster: StandInCluster;
  let standIn: KubeStandIn;
  let config: KubeConfig;
  let kubelet: TestKubelet;
  const installationId = `sw-${randomUUID().slice(0, 8)}`;
  const started: { controller: Controller; runtime: KubernetesRuntime }[] = [];

  /** A `corral serve` of this installation: its own runtime and controller, on the one store. */
  function serve(): { controller: Controller; runtime: KubernetesRuntime } {
    const runtime = new KubernetesRuntime({
      api: clientApi(config),
      namespace: NS,
      installationId,
      logger: pino({ level: 'silent' }),
      products: ['b200'],
      pods: { terminationGraceSeconds: 1 },
    });
    const controller = new Controller({
      store: h.store,
      runtime,
      gpus: [],
      placement: schedulerPlacement(runtime.gpuScheduler),
      probe: async () => answered(200),
      logger: silent,
      clock: Date.now,
      routes: new RoutingTable(),
      storagePaths: new Map(),
      revealCredentials: async () => undefined,
      installationId,
      intervalMs: 50,
      startingProbeIntervalMs: 20,
    });
    controller.start();
    started.push({ controller, runtime });
    return { controller, runtime };
  }

  async function stop(served: { controller: Controller; runtime: KubernetesRuntime }): Promise<void> {
    await served.controller.stop();
    await served.runtime.close();
  }

  const rows = async (endpoint: Endpoint) =>
    (await h.store.workers.listByEndpoint(endpoint.id)).map((w) => ({
      id: w.id,
      state: w.status.state,
      message: w.status.message,
      address: w.address,
    }));

  beforeEach(async () => {
    h = await controllerHarness();
    cluster = await standInCluster({ namespace: NS, unschedulable: new Map([['b200', FULL]]) });
    ({ standIn, config, kubelet } = cluster);
  });

  afterEach(async () => {
    for (const served of started.splice(0)) await stop(served);
    await cluster.close();
    await h.close();
  });

  const create = () =>
    h.create({ productIds: ['b200'], workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } });

  it("is pending with the scheduler's words while its create waits, is placed once, and its pod goes on a scale-down", async () => {
    const endpoint = await create();
    serve();
    await vi.waitFor(
      async () => expect(await rows(endpoint)).toMatchObject([{ state: 'pending', message: FULL }]),
      {
        timeout: 10_000,
      },
    );
    // Passes go on: the pending worker is the scheduler's to place, not placed (created) again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await rows(endpoint)).toMatchObject([{ state: 'pending', message: FULL }]);
    expect(standIn.pods(NS)).toHaveLength(1);

    await h.update(endpoint, { workers: { minWorkers: 0, maxWorkers: 0 } });
    await vi.waitFor(() => expect(standIn.pods(NS)).toEqual([]), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await rows(endpoint)).toEqual([]), { timeout: 10_000 });
  });

  it('after a restart, its adopted pod is pending with the same words, then followed until it runs', async () => {
    const endpoint = await create();
    const first = serve();
    await vi.waitFor(
      async () => expect(await rows(endpoint)).toMatchObject([{ state: 'pending', message: FULL }]),
      {
        timeout: 10_000,
      },
    );
    const [row] = await rows(endpoint);
    started.splice(0);
    await stop(first);

    serve();
    await vi.waitFor(async () => expect(await rows(endpoint)).toEqual([{ ...row, address: null }]), {
      timeout: 10_000,
    });
    // Room is made: the scheduler binds the pod, the kubelet runs it, and the adopted worker follows.
    const [pod] = standIn.pods(NS);
    await kubelet.bind(pod?.metadata?.name ?? '', 'test-node-2');
    await vi.waitFor(
      async () => {
        const ip = standIn.pods(NS)[0]?.status?.podIP;
        expect(ip).toBeDefined();
        expect(await rows(endpoint)).toEqual([
          { id: row?.id, state: 'running', message: '', address: { host: ip, port: 8000 } },
        ]);
      },
      { timeout: 10_000 },
    );
    expect(standIn.pods(NS)).toHaveLength(1);
  });
});
