/**
 * KubernetesRuntime.prepareImage (image-prepull.ts) on the API stand-in with the test as the kubelet: the image is
 * pulled onto each node a worker of the endpoint could run on by a pod bound to it, as the workers' pods pull; a
 * missing image fails with the kubelet's words; no pre-pull pod is left in any outcome; a cluster without GPU nodes
 * answers at once. The pods and verdicts themselves: prepull-pods.test.ts.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type StandInCluster, standInCluster } from '../../../test/support/kube-cluster.js';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import { eventually } from '../../../test/support/runtime-contract.js';
import { type ImageRequest, RuntimeError } from '../types.js';
import { clientApi } from './client-api.js';
import { KubernetesRuntime, type KubernetesRuntimeOptions } from './kubernetes-runtime.js';
import type { Pod } from './objects.js';
import { PREPULL_LABEL, prepullPod } from './prepull-pods.js';

const NS = 'corral-workers';
const IMAGE = 'ghcr.io/team/app:1';
const MISSING = 'ghcr.io/team/app:nope';

let cluster: StandInCluster;
let runtime: KubernetesRuntime | undefined;
/** Every pod the API server was asked to create, as created. */
let created: Pod[];
let installationId = '';

function gpuNode(name: string, product: string) {
  return {
    metadata: { name, labels: { 'nvidia.com/gpu.product': product } },
    spec: {},
    status: { allocatable: { 'nvidia.com/gpu': '8' }, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function start(namespace = NS, overrides: Partial<KubernetesRuntimeOptions> = {}): KubernetesRuntime {
  installationId = `ip-${randomUUID().slice(0, 8)}`;
  runtime = new KubernetesRuntime({
    api: clientApi(cluster.config),
    namespace,
    installationId,
    logger: pino({ level: 'silent' }),
    products: ['h100'],
    pods: { terminationGraceSeconds: 2, products: { h100: { value: 'NVIDIA-H100' } } },
    watchBackoff: { initialMs: 20, maxMs: 100 },
    ...overrides,
  });
  return runtime;
}

const prepullPods = (namespace = NS) =>
  cluster.standIn.pods(namespace).filter((p) => p.metadata?.labels?.[PREPULL_LABEL] !== undefined);

function request(overrides: Partial<ImageRequest> = {}, productIds: string[] = ['h100']): ImageRequest {
  return { image: IMAGE, endpoint: { ownerId: 'owner-1', authId: '', productIds }, ...overrides };
}

beforeEach(async () => {
  cluster = await standInCluster({ namespace: NS, missingImages: new Set([MISSING]) });
  created = [];
  cluster.standIn.onChange((kind, type, object) => {
    if (kind === 'pods' && type === 'ADDED') created.push(object as Pod);
  });
  cluster.standIn.addNode({ metadata: { name: 'cpu-1' }, spec: {}, status: {} });
});

afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
  await cluster.close();
});

describe('KubernetesRuntime.prepareImage', () => {
  it('a cluster without GPU nodes: resolves at once, no pod made', async () => {
    await start().prepareImage(request({}, []));
    expect(created).toEqual([]);
  });

  it("pulls onto each node of the endpoint's products with one pod bound there, saying the nodes done, and leaves none", async () => {
    cluster.standIn.addNode(gpuNode('h100-a', 'NVIDIA-H100'));
    cluster.standIn.addNode(gpuNode('h100-b', 'NVIDIA-H100'));
    cluster.standIn.addNode(gpuNode('a100-a', 'NVIDIA-A100'));
    const progress: string[] = [];
    await start().prepareImage(request(), (p) => progress.push(p.message));
    expect(created.map((p) => p.spec?.nodeName).sort()).toEqual(['h100-a', 'h100-b']);
    for (const pod of created) {
      expect(pod.spec?.containers[0]).toMatchObject({ image: IMAGE, imagePullPolicy: 'IfNotPresent' });
      expect(pod.spec?.containers[0]?.resources?.limits?.['nvidia.com/gpu']).toBeUndefined();
      expect(pod.metadata?.name?.length).toBeLessThanOrEqual(63);
    }
    expect(progress[0]).toBe(`pulling ${IMAGE} onto 2 node(s): 0 of 2 done`);
    for (const line of progress) expect(line).toMatch(/^pulling \S+ onto 2 node\(s\): [0-2] of 2 done$/);
    // Every pod deleted before the call returns.
    expect(prepullPods()).toEqual([]);
    // No product named: every GPU node; the endpoint's pull policy as its workers' pods pull.
    created = [];
    await runtime?.prepareImage(
      request({ endpoint: { ownerId: 'owner-1', authId: '', productIds: [], pullPolicy: 'Always' } }),
    );
    expect(created.map((p) => p.spec?.nodeName).sort()).toEqual(['a100-a', 'h100-a', 'h100-b']);
    expect(created.map((p) => p.spec?.containers[0]?.imagePullPolicy)).toEqual([
      'Always',
      'Always',
      'Always',
    ]);
    expect(prepullPods()).toEqual([]);
  });

  it('an image no node can pull fails with IMAGE_PULL_FAILED in the kubelet words, its pods deleted', async () => {
    cluster.standIn.addNode(gpuNode('h100-a', 'NVIDIA-H100'));
    const error = await start()
      .prepareImage(request({ image: MISSING }))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error).toMatchObject({ code: 'IMAGE_PULL_FAILED' });
    expect((error as Error).message).toContain(`cannot pull image ${MISSING} on node h100-a: ErrImagePull`);
    expect(created).toHaveLength(1);
    expect(prepullPods()).toEqual([]);
  });

  it("a private image: the pods pull with the owner's pull Secret, pruned once no worker uses it", async () => {
    cluster.standIn.addNode(gpuNode('h100-a', 'NVIDIA-H100'));
    let asked = 0;
    await start().prepareImage({
      ...request({ endpoint: { ownerId: 'owner-1', authId: 'cred-1', productIds: ['h100'] } }),
      registryAuth: async () => {
        asked += 1;
        return { username: 'u', password: 'p', server: 'ghcr.io' };
      },
    });
    expect(asked).toBe(1);
    expect(created[0]?.spec?.imagePullSecrets).toEqual([{ name: 'corral-pull-cred-1' }]);
    expect(cluster.standIn.secrets(NS).map((s) => s.metadata?.name)).not.toContain('corral-pull-cred-1');
  });

  it('nodes that never say: RUNTIME_ERROR at the deadline (not the image failed), the pods deleted; one a stopped Corral left is swept', async () => {
    // No kubelet watches this namespace: the pods stay Pending.
    const timers = new ManualTimers(Date.now());
    cluster.standIn.addNode(gpuNode('h100-a', 'NVIDIA-H100'));
    const kubernetes = start('elsewhere', { timers, clock: () => timers.now, prepullDeadlineMs: 60_000 });
    const installationLabels = { 'corral.dev/installation': installationId };
    const left = prepullPod(
      { image: IMAGE, node: 'h100-a', runId: 'left0001', pullPolicy: 'IfNotPresent', deadlineSeconds: 60 },
      { namespace: 'elsewhere', namePrefix: 'corral-', installationLabels },
    );
    await clientApi(cluster.config).createPod('elsewhere', left);
    // Past its deadline and a minute: a pre-pull of this Corral's would have deleted it.
    timers.now += 121_000;
    const outcome = kubernetes.prepareImage(request()).then(
      () => undefined,
      (e: unknown) => e,
    );
    // The one left is deleted; this pre-pull's own pod waits for its node.
    await eventually(() => {
      const names = prepullPods('elsewhere').map((p) => p.metadata?.name);
      expect(names).toHaveLength(1);
      expect(names).not.toContain(left.metadata.name);
    });
    expect(prepullPods('elsewhere')[0]?.spec?.activeDeadlineSeconds).toBe(60);
    // Not a worker: adoption does not see it.
    expect(await kubernetes.list({})).toEqual([]);
    await timers.advanceSettling(60_000);
    expect(await outcome).toMatchObject({
      code: 'RUNTIME_ERROR',
      message: `cannot pre-pull image ${IMAGE}: no node finished within 60 s`,
    });
    expect(prepullPods('elsewhere')).toEqual([]);
  });

  it('a runtime closed during a pre-pull: UNAVAILABLE, and its pods are still deleted', async () => {
    cluster.standIn.addNode(gpuNode('h100-a', 'NVIDIA-H100'));
    const outcome = start('elsewhere')
      .prepareImage(request())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    await eventually(() => expect(prepullPods('elsewhere')).toHaveLength(1));
    await runtime?.close();
    expect(await outcome).toMatchObject({ code: 'UNAVAILABLE' });
    expect(prepullPods('elsewhere')).toEqual([]);
  });
});
