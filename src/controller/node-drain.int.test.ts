import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { type StandInCluster, standInCluster } from '../../test/support/kube-cluster.js';
import type { KubeStandIn } from '../../test/support/kube-stand-in.js';
import type { Node } from '../runtime/kubernetes/api.js';
import { clientApi } from '../runtime/kubernetes/client-api.js';
import { KubernetesRuntime } from '../runtime/kubernetes/kubernetes-runtime.js';
import { Controller } from './controller.js';
import { answered } from './health/probe-result.js';
import { schedulerPlacement } from './placement/worker-placement.js';
import { RoutingTable } from './routing-table.js';

const NS = 'corral-workers';
/** Why the real kubectl cannot be run here, if it cannot. */
const noKubectl = (() => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'kubectl is not installed';
  }
})();

/** `kubectl drain NODE --ignore-daemonsets` (no --force) against the stand-in; its exit code and output. */
function kubectlDrain(standIn: KubeStandIn, node: string): Promise<{ code: number; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-drain-'));
  writeFileSync(join(dir, 'kubeconfig'), standIn.kubeconfig());
  const args = [
    '--kubeconfig',
    join(dir, 'kubeconfig'),
    'drain',
    node,
    '--ignore-daemonsets',
    '--timeout=20s',
  ];
  return new Promise((resolve) => {
    execFile('kubectl', args, { encoding: 'utf8' }, (error, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
}

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

function gpuNode(name: string): Node {
  return {
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'nvidia.com/gpu.product': 'b200' } },
    spec: {},
    status: { allocatable: { 'nvidia.com/gpu': '1' } },
  };
}

/**
 * A node drained as `kubectl drain` does it (cordon, then `POST pods/{name}/eviction` per pod), on the API stand-in
 * with the test as the scheduler (two one-GPU nodes) and the kubelet: the evicted worker ends at once (what hands
 * its queue jobs back: `onWorkerEnded` is the jobs side's `workerEnded`, which requeues them), not after the jobs
 * side's lost-worker timeout, and its replacement runs on the other node; and the same through the real `kubectl
 * drain` (where kubectl is installed), which refuses pods that declare no controller unless given `--force`.
 */
describe('Controller: a node drained under a Kubernetes worker', () => {
  let h: ControllerHarness;
  let cluster: StandInCluster;
  let standIn: KubeStandIn;
  let config: KubeConfig;
  let runtime: KubernetesRuntime;
  let controller: Controller;
  let ended: { workerId: string; reason: string; at: number }[];
  const installationId = `nd-${randomUUID().slice(0, 8)}`;

  beforeEach(async () => {
    h = await controllerHarness();
    cluster = await standInCluster({ namespace: NS, scheduleOnNodes: { gpuResource: 'nvidia.com/gpu' } });
    ({ standIn, config } = cluster);
    standIn.addNode(gpuNode('gpu-a'));
    standIn.addNode(gpuNode('gpu-b'));
    ended = [];
    runtime = new KubernetesRuntime({
      api: clientApi(config),
      namespace: NS,
      installationId,
      logger: pino({ level: 'silent' }),
      products: ['b200'],
      pods: { terminationGraceSeconds: 1 },
    });
    controller = new Controller({
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
      onWorkerEnded: (_endpointId, workerId, reason) => ended.push({ workerId, reason, at: Date.now() }),
    });
    controller.start();
  });

  afterEach(async () => {
    await controller.stop();
    await runtime.close();
    await cluster.close();
    await h.close();
  });

  const podOf = (workerId: string | undefined) =>
    standIn.pods(NS).find((p) => p.metadata?.labels?.['corral.dev/worker'] === workerId);

  /** An endpoint with one running worker: a reader of its running workers, the worker, its pod and that pod's node. */
  const oneRunningWorker = async () => {
    const endpoint = await h.create({
      productIds: ['b200'],
      workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 },
    });
    const running = async () =>
      (await h.store.workers.listByEndpoint(endpoint.id)).filter((w) => w.status.state === 'running');
    await vi.waitFor(async () => expect(await running()).toHaveLength(1), { timeout: 10_000 });
    const [first] = await running();
    const pod = podOf(first?.id);
    return { running, first, pod, drained: pod?.spec?.nodeName ?? '' };
  };

  it.skipIf(noKubectl !== undefined)(
    'the real kubectl drain (no --force) evicts the worker, which is replaced on the other node',
    async () => {
      const { running, first, pod, drained } = await oneRunningWorker();

      const { code, output } = await kubectlDrain(standIn, drained);
      expect(code, output).toBe(0);
      expect(output).toContain(`pod/${pod?.metadata?.name} evicted`);
      expect(output).toContain(`node/${drained} drained`);
      expect(ended.map((e) => e.workerId)).toContain(first?.id);
      await vi.waitFor(
        async () => {
          const now = await running();
          expect(now.map((w) => w.id)).not.toContain(first?.id);
          const replacement = podOf(now[0]?.id);
          expect(replacement?.spec?.nodeName).toBe(drained === 'gpu-a' ? 'gpu-b' : 'gpu-a');
        },
        { timeout: 15_000 },
      );
    },
  );

  it('an evicted worker ends at once and is replaced on another node', async () => {
    const { running, first, pod, drained } = await oneRunningWorker();
    expect(['gpu-a', 'gpu-b']).toContain(drained);
    // kubectl drain: it evicts only pods with a controller; Corral's has its env Secret.
    expect(pod?.metadata?.ownerReferences?.some((o) => o.controller === true)).toBe(true);

    standIn.patchNode(drained, { spec: { unschedulable: true } });
    const evictedAt = Date.now();
    expect(await standIn.evictPod(NS, pod?.metadata?.name ?? '')).toBe(201);

    // Ended at once (its jobs go back to the queue then), well within the jobs side's lost-worker timeout (35 s).
    await vi.waitFor(() => expect(ended.map((e) => e.workerId)).toContain(first?.id), { timeout: 5_000 });
    expect((ended.find((e) => e.workerId === first?.id)?.at ?? Infinity) - evictedAt).toBeLessThan(5_000);
    // Its replacement runs on the node that is left.
    await vi.waitFor(
      async () => {
        const now = await running();
        expect(now.map((w) => w.id)).not.toContain(first?.id);
        expect(now).toHaveLength(1);
        const replacement = podOf(now[0]?.id);
        expect(replacement?.spec?.nodeName).toBe(drained === 'gpu-a' ? 'gpu-b' : 'gpu-a');
      },
      { timeout: 15_000 },
    );
  });
});
