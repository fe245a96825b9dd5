/** prepull-pods.ts by tables: the nodes pulled onto, the pre-pull pod, the verdict of its status, the outcome. */
import { describe, expect, it } from 'vitest';
import type { Node } from './api.js';
import type { ContainerState, Pod } from './objects.js';
import {
  PREPULL_LABEL,
  type PrepullVerdict,
  prepullNodes,
  prepullOutcome,
  prepullPod,
  prepullPodName,
  prepullVerdict,
  stalePrepullPods,
} from './prepull-pods.js';

function node(
  name: string,
  overrides: { labels?: Record<string, string>; gpus?: string; unschedulable?: boolean; ready?: string } = {},
): Node {
  return {
    metadata: { name, labels: overrides.labels ?? {} },
    spec: overrides.unschedulable ? { unschedulable: true } : {},
    status: {
      allocatable: overrides.gpus === undefined ? {} : { 'nvidia.com/gpu': overrides.gpus },
      ...(overrides.ready === undefined ? {} : { conditions: [{ type: 'Ready', status: overrides.ready }] }),
    },
  };
}

describe('prepullNodes', () => {
  const nodes = [
    node('cpu-1'),
    node('h100-a', { labels: { 'nvidia.com/gpu.product': 'NVIDIA-H100' }, gpus: '8' }),
    node('h100-b', { labels: { 'nvidia.com/gpu.product': 'NVIDIA-H100' }, gpus: '8', unschedulable: true }),
    node('h100-c', { labels: { 'nvidia.com/gpu.product': 'NVIDIA-H100' }, gpus: '8', ready: 'False' }),
    node('a100-a', {
      labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100', pool: 'big' },
      gpus: '4',
      ready: 'True',
    }),
    node('zero-gpus', { gpus: '0' }),
  ];
  const selectors = { h100: { label: 'nvidia.com/gpu.product', value: 'NVIDIA-H100' } };

  it.each<[string, string[], string[]]>([
    ['no product: every schedulable, ready node with GPUs', [], ['a100-a', 'h100-a']],
    ["a product: its nodes by the catalogue's label", ['h100'], ['h100-a']],
    ['a product nobody mapped: nvidia.com/gpu.product={id}', ['NVIDIA-A100'], ['a100-a']],
    ['two products: both', ['h100', 'NVIDIA-A100'], ['a100-a', 'h100-a']],
    ['a product without nodes: none', ['b200'], []],
  ])('%s', (_case, products, expected) => {
    expect(prepullNodes(nodes, products, { selectors })).toEqual(expected);
  });

  it('counts the configured GPU resource; a cluster without GPU nodes has none', () => {
    expect(prepullNodes(nodes, [], { selectors, gpuResource: 'amd.com/gpu' })).toEqual([]);
    expect(prepullNodes([node('cpu-1'), node('cpu-2')], [], { selectors: {} })).toEqual([]);
  });
});

describe('prepullPod', () => {
  const options = {
    namespace: 'corral-workers',
    namePrefix: 'corral-',
    installationLabels: { 'corral.dev/installation': 'inst-1' },
  };

  it('is bound to its node, asks for no GPU, does nothing, never restarts and carries no worker label', () => {
    const pod = prepullPod(
      {
        image: 'ghcr.io/team/app:1',
        node: 'gpu-1',
        runId: 'ab12cd34',
        pullPolicy: 'IfNotPresent',
        pullSecret: 'corral-pull-a1',
        deadlineSeconds: 900,
      },
      options,
    );
    expect(pod.metadata).toMatchObject({
      name: 'corral-prepull-ab12cd34-gpu-1',
      namespace: 'corral-workers',
      labels: {
        'corral.dev/managed': 'true',
        'corral.dev/installation': 'inst-1',
        [PREPULL_LABEL]: 'ab12cd34',
      },
    });
    expect(Object.keys(pod.metadata.labels)).not.toContain('corral.dev/worker');
    expect(pod.spec).toMatchObject({
      nodeName: 'gpu-1',
      restartPolicy: 'Never',
      activeDeadlineSeconds: 900,
      imagePullSecrets: [{ name: 'corral-pull-a1' }],
      automountServiceAccountToken: false,
      tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    });
    expect(pod.spec.nodeSelector).toBeUndefined();
    const [container] = pod.spec.containers;
    expect(container).toMatchObject({
      image: 'ghcr.io/team/app:1',
      imagePullPolicy: 'IfNotPresent',
      command: ['true'],
      env: [{ name: 'NVIDIA_VISIBLE_DEVICES', value: 'void' }],
    });
    expect(Object.keys(container?.resources?.limits ?? {})).toEqual(['cpu', 'memory']);
  });

  it("is its node's to drain: the node is its controller, so kubectl drain evicts it rather than refuse it", () => {
    const pod = prepullPod(
      {
        image: 'app:1',
        node: 'gpu-1',
        runId: 'r',
        pullPolicy: 'IfNotPresent',
        deadlineSeconds: 60,
        nodeUid: 'u-1',
      },
      options,
    );
    // kubectl drain refuses a pod whose metadata names no controller ("declare no controller", seen on a real cluster).
    expect(pod.metadata.ownerReferences?.filter((owner) => owner.controller)).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: 'gpu-1', uid: 'u-1', controller: true },
    ]);
  });

  it('a public image names no pull Secret', () => {
    const pod = prepullPod(
      { image: 'app:1', node: 'n', runId: 'r', pullPolicy: 'Always', deadlineSeconds: 60 },
      options,
    );
    expect(pod.spec.imagePullSecrets).toBeUndefined();
    expect(pod.spec.containers[0]?.imagePullPolicy).toBe('Always');
  });

  it('names fit 63 characters for any node name, and two nodes never share one', () => {
    const long = `ip-10-0-0-1.eu-west-1.compute.internal.${'x'.repeat(200)}`;
    const a = prepullPodName('ab12cd34', long, options);
    const b = prepullPodName('ab12cd34', `${long}y`, options);
    expect(a.length).toBeLessThanOrEqual(63);
    expect(a).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
    expect(a).not.toBe(b);
  });
});

function pod(state: ContainerState | undefined, status: Pod['status'] = {}): Pod {
  return {
    metadata: { name: 'p' },
    status: {
      ...status,
      ...(state
        ? {
            containerStatuses: [
              { name: 'pull', image: 'app:1', imageID: '', ready: false, restartCount: 0, state },
            ],
          }
        : {}),
    },
  };
}

describe('prepullVerdict', () => {
  it.each<[string, Pod | undefined, PrepullVerdict]>([
    ['not seen by a kubelet yet', pod(undefined, { phase: 'Pending' }), { kind: 'pending' }],
    ['pulling', pod({ waiting: { reason: 'ContainerCreating' } }, { phase: 'Pending' }), { kind: 'pending' }],
    ['started', pod({ running: {} }), { kind: 'present' }],
    [
      'ran `true`',
      pod({ terminated: { exitCode: 0, reason: 'Completed' } }, { phase: 'Succeeded' }),
      { kind: 'present' },
    ],
    [
      'no `true` in the image',
      pod({ terminated: { exitCode: 128, reason: 'StartError' } }, { phase: 'Failed' }),
      { kind: 'present' },
    ],
    [
      'start failed',
      pod({ waiting: { reason: 'RunContainerError', message: 'exec: "true" not found' } }),
      { kind: 'present' },
    ],
    ['create failed', pod({ waiting: { reason: 'CreateContainerError' } }), { kind: 'present' }],
    [
      'not found',
      pod({ waiting: { reason: 'ErrImagePull', message: 'failed to pull: not found' } }),
      { kind: 'pull-failed', message: 'ErrImagePull: failed to pull: not found' },
    ],
    [
      'backing off',
      pod({ waiting: { reason: 'ImagePullBackOff' } }),
      { kind: 'pull-failed', message: 'ImagePullBackOff' },
    ],
    [
      'invalid',
      pod({ waiting: { reason: 'InvalidImageName' } }),
      { kind: 'pull-failed', message: 'InvalidImageName' },
    ],
    [
      'Never, not on the node',
      pod({ waiting: { reason: 'ErrImageNeverPull' } }),
      { kind: 'pull-failed', message: 'ErrImageNeverPull' },
    ],
    [
      'refused at admission',
      pod(undefined, {
        phase: 'Failed',
        reason: 'OutOfcpu',
        message: "Node didn't have enough resource: cpu",
      }),
      { kind: 'not-run', message: "OutOfcpu: Node didn't have enough resource: cpu" },
    ],
    [
      'past its deadline while pulling',
      pod(
        { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown' } },
        { phase: 'Failed', reason: 'DeadlineExceeded' },
      ),
      { kind: 'not-run', message: 'DeadlineExceeded' },
    ],
    ['deleted by someone else', undefined, { kind: 'not-run', message: 'the pre-pull pod was deleted' }],
  ])('%s', (_case, input, expected) => {
    expect(prepullVerdict(input)).toEqual(expected);
  });
});

describe('prepullOutcome', () => {
  const present: PrepullVerdict = { kind: 'present' };
  const pending: PrepullVerdict = { kind: 'pending' };
  const failed: PrepullVerdict = { kind: 'pull-failed', message: 'ErrImagePull: not found' };
  const notRun: PrepullVerdict = { kind: 'not-run', message: 'OutOfcpu' };
  const of = (...verdicts: PrepullVerdict[]) => new Map(verdicts.map((v, n) => [`n${n + 1}`, v]));

  it.each<[string, Map<string, PrepullVerdict>, boolean, ReturnType<typeof prepullOutcome>]>([
    ['a node still pulling', of(present, pending), false, { done: false, nodesDone: 1 }],
    ['every node has it', of(present, present), false, { done: true, ok: true, failedNodes: [] }],
    [
      'one node could not: ready, that node said',
      of(present, failed, notRun),
      false,
      { done: true, ok: true, failedNodes: ['n2', 'n3'] },
    ],
    [
      'no node could pull it',
      of(failed, failed),
      false,
      {
        done: true,
        ok: false,
        code: 'IMAGE_PULL_FAILED',
        message: 'cannot pull image app:1 on node n1: ErrImagePull: not found',
      },
    ],
    [
      'no node ran its pod',
      of(notRun),
      false,
      {
        done: true,
        ok: false,
        code: 'RUNTIME_ERROR',
        message: 'cannot pre-pull image app:1: node n1 did not run the pre-pull pod (OutOfcpu)',
      },
    ],
    [
      'the deadline, one node done',
      of(present, pending),
      true,
      { done: true, ok: true, failedNodes: ['n2'] },
    ],
    [
      'the deadline, none done',
      of(pending, pending),
      true,
      {
        done: true,
        ok: false,
        code: 'RUNTIME_ERROR',
        message: 'cannot pre-pull image app:1: no node finished within 60 s',
      },
    ],
  ])('%s', (_case, verdicts, final, expected) => {
    expect(prepullOutcome('app:1', verdicts, final, 60)).toEqual(expected);
  });
});

describe('stalePrepullPods', () => {
  const now = Date.parse('2026-11-30T06:00:00Z');
  const at = (runId: string, minutesAgo: number): Pod => ({
    metadata: {
      name: `corral-prepull-${runId}-n1`,
      labels: { [PREPULL_LABEL]: runId },
      creationTimestamp: new Date(now - minutesAgo * 60_000).toISOString(),
    },
  });

  it('only pods of no pre-pull under way here, older than their deadline and a minute', () => {
    const pods = [at('old', 20), at('young', 5), at('mine', 30)];
    expect(stalePrepullPods(pods, new Set(['mine']), now, 15 * 60)).toEqual(['corral-prepull-old-n1']);
  });
});
