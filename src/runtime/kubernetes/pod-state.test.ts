/**
 * Pods shaped as the API server, the scheduler and the kubelet write them (core/v1 PodStatus, ContainerStatus,
 * PodCondition), one per case a worker goes through, and what the runtime reports of each.
 */
import { describe, expect, it } from 'vitest';
import { LABELS, type WorkerSpec } from '../types.js';
import type { ContainerStatus, Pod, PodCondition, PodStatus } from './objects.js';
import { POD_ANNOTATIONS, POD_LABELS, podSpec } from './pod-spec.js';
import { podState } from './pod-state.js';

const GIB = 2 ** 30;
const CREATED = '2024-05-02T10:00:00Z';
const IMAGE = 'registry.example.com/llm/server:1.2';

const workerSpec: WorkerSpec = {
  workerId: 'ab12cd34-w0rk3r01',
  endpointId: 'ab12cd34ef56gh78',
  ownerId: 'alice@example.com',
  revision: 3,
  image: IMAGE,
  command: [],
  env: { PORT: '8000' },
  port: 8000,
  gpus: [{ index: 0, uuid: 'GPU-aaa' }],
  volumes: [],
  labels: {},
};

/** The pod Corral made, as the API server answers it (uid, resourceVersion, creationTimestamp filled in). */
function made(): Pod {
  const manifest = podSpec(
    workerSpec,
    { product: 'h100-80g', gpuNum: 1 },
    {
      namespace: 'corral-workers',
      namePrefix: 'corral-',
      installationLabels: { [LABELS.installation]: 'inst-abc123' },
      terminationGraceSeconds: 30,
      networkClaims: {},
      memoryGBPerGpu: 80,
    },
  );
  return {
    ...manifest,
    metadata: {
      ...manifest.metadata,
      uid: '4f6c1e2a-2b1d-4d55-9a53-0c7f3b1f5e21',
      resourceVersion: '184467',
      creationTimestamp: CREATED,
    },
  };
}

function pod(status: PodStatus, extra: { nodeName?: string; deletion?: boolean } = {}): Pod {
  const base = made();
  return {
    ...base,
    metadata: {
      ...base.metadata,
      ...(extra.deletion
        ? { deletionTimestamp: '2024-05-02T10:05:00Z', deletionGracePeriodSeconds: 30 }
        : {}),
    },
    spec: {
      containers: base.spec?.containers ?? [],
      ...base.spec,
      ...(extra.nodeName ? { nodeName: extra.nodeName } : {}),
    },
    status,
  };
}

const at = '2024-05-02T10:00:02Z';

function condition(type: string, status: string, reason?: string, message?: string): PodCondition {
  return {
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime: at,
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
}

/** The conditions of a pod bound to a node whose container is not ready. */
const scheduledNotReady: PodCondition[] = [
  condition('PodReadyToStartContainers', 'True'),
  condition('Initialized', 'True'),
  condition('Ready', 'False', 'ContainersNotReady', 'containers with unready status: [worker]'),
  condition('ContainersReady', 'False', 'ContainersNotReady', 'containers with unready status: [worker]'),
  condition('PodScheduled', 'True'),
];

function container(state: ContainerStatus['state'], extra: Partial<ContainerStatus> = {}): ContainerStatus {
  return {
    name: 'worker',
    image: IMAGE,
    imageID: '',
    ready: false,
    restartCount: 0,
    started: false,
    state,
    lastState: {},
    ...extra,
  };
}

const pulled = {
  imageID:
    'registry.example.com/llm/server@sha256:9b1c2f7a5e3d4c6b8a0f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3',
  containerID: 'containerd://7d3e0c9b8a4f2e1d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a4938271605f',
};

function onNode(statuses: ContainerStatus[], phase = 'Pending', conditions = scheduledNotReady): PodStatus {
  return {
    phase,
    conditions,
    hostIP: '10.0.1.12',
    hostIPs: [{ ip: '10.0.1.12' }],
    podIP: '10.244.1.17',
    podIPs: [{ ip: '10.244.1.17' }],
    startTime: at,
    containerStatuses: statuses,
    qosClass: 'Burstable',
  };
}

const terminated = (exitCode: number, reason: string) =>
  container(
    {
      terminated: {
        exitCode,
        reason,
        startedAt: '2024-05-02T10:01:00Z',
        finishedAt: '2024-05-02T10:04:00Z',
        containerID: pulled.containerID,
      },
    },
    pulled,
  );

const failedConditions = [
  condition('PodReadyToStartContainers', 'False'),
  condition('Initialized', 'True'),
  condition('Ready', 'False', 'PodFailed'),
  condition('ContainersReady', 'False', 'PodFailed'),
  condition('PodScheduled', 'True'),
];

const cases: {
  name: string;
  pod: Pod;
  stage: string;
  phase: string;
  message: string;
  exitCode?: number;
  oom?: boolean;
  address?: { host: string; port: number };
}[] = [
  {
    name: 'just created, not yet seen by the scheduler',
    pod: pod({ phase: 'Pending', qosClass: 'Burstable' }),
    stage: 'unscheduled',
    phase: 'pending',
    message: 'waiting for the scheduler',
  },
  {
    name: 'unschedulable: not enough GPUs',
    pod: pod({
      phase: 'Pending',
      conditions: [
        condition(
          'PodScheduled',
          'False',
          'Unschedulable',
          '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.',
        ),
      ],
      qosClass: 'Burstable',
    }),
    stage: 'unscheduled',
    phase: 'pending',
    message: '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.',
  },
  {
    name: 'unschedulable: no node of the product, with the preemption verdict',
    pod: pod({
      phase: 'Pending',
      conditions: [
        condition(
          'PodScheduled',
          'False',
          'Unschedulable',
          "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are " +
            'available: 3 Preemption is not helpful for scheduling.',
        ),
      ],
      qosClass: 'Burstable',
    }),
    stage: 'unscheduled',
    phase: 'pending',
    message:
      "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are " +
      'available: 3 Preemption is not helpful for scheduling.',
  },
  {
    name: 'bound to a node, no container status yet',
    pod: pod(
      { phase: 'Pending', conditions: [condition('PodScheduled', 'True')] },
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'creating',
    phase: 'pulling',
    message: 'ContainerCreating on node gpu-node-1',
  },
  {
    name: 'ContainerCreating (the image is being pulled)',
    pod: pod(
      {
        phase: 'Pending',
        conditions: [condition('PodReadyToStartContainers', 'False'), ...scheduledNotReady.slice(1)],
        hostIP: '10.0.1.12',
        startTime: at,
        containerStatuses: [container({ waiting: { reason: 'ContainerCreating' } })],
        qosClass: 'Burstable',
      },
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'creating',
    phase: 'pulling',
    message: 'ContainerCreating',
  },
  {
    name: 'ErrImagePull',
    pod: pod(
      onNode([
        container({
          waiting: {
            reason: 'ErrImagePull',
            message:
              `failed to pull and unpack image "${IMAGE}": failed to resolve reference "${IMAGE}": unexpected ` +
              'status from HEAD request to https://registry.example.com/v2/llm/server/manifests/1.2: 401 Unauthorized',
          },
        }),
      ]),
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'image-pull-failed',
    phase: 'pulling',
    message:
      `ErrImagePull: failed to pull and unpack image "${IMAGE}": failed to resolve reference "${IMAGE}": unexpected ` +
      'status from HEAD request to https://registry.example.com/v2/llm/server/manifests/1.2: 401 Unauthorized',
  },
  {
    name: 'ImagePullBackOff',
    pod: pod(
      onNode([
        container({ waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${IMAGE}"` } }),
      ]),
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'image-pull-failed',
    phase: 'pulling',
    message: `ImagePullBackOff: Back-off pulling image "${IMAGE}"`,
  },
  {
    name: 'InvalidImageName',
    pod: pod(
      onNode([
        container({
          waiting: {
            reason: 'InvalidImageName',
            message:
              'Failed to apply default image tag "Registry/LLM:1.2": couldn\'t parse image name "Registry/LLM:1.2": ' +
              'invalid reference format: repository name (library/Registry/LLM) must be lowercase',
          },
        }),
      ]),
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'image-pull-failed',
    phase: 'pulling',
    message:
      'InvalidImageName: Failed to apply default image tag "Registry/LLM:1.2": couldn\'t parse image name ' +
      '"Registry/LLM:1.2": invalid reference format: repository name (library/Registry/LLM) must be lowercase',
  },
  {
    name: 'CreateContainerConfigError',
    pod: pod(
      onNode([
        container({
          waiting: {
            reason: 'CreateContainerConfigError',
            message:
              'container has runAsNonRoot and image will run as root (pod: "corral-ab12cd34-w0rk3r01", ...)',
          },
        }),
      ]),
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'create-failed',
    phase: 'starting',
    message:
      'CreateContainerConfigError: container has runAsNonRoot and image will run as root (pod: ' +
      '"corral-ab12cd34-w0rk3r01", ...)',
  },
  {
    name: 'running: address is the pod IP and the app port',
    pod: pod(
      onNode(
        [
          container(
            { running: { startedAt: '2024-05-02T10:01:00Z' } },
            { ...pulled, ready: true, started: true },
          ),
        ],
        'Running',
        [
          condition('PodReadyToStartContainers', 'True'),
          condition('Initialized', 'True'),
          condition('Ready', 'True'),
          condition('ContainersReady', 'True'),
          condition('PodScheduled', 'True'),
        ],
      ),
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'running',
    phase: 'running',
    message: 'Running on node gpu-node-1',
    address: { host: '10.244.1.17', port: 8000 },
  },
  {
    name: 'OOMKilled',
    pod: pod(onNode([terminated(137, 'OOMKilled')], 'Failed', failedConditions), { nodeName: 'gpu-node-1' }),
    stage: 'exited',
    phase: 'exited',
    message: 'OOMKilled: ran out of memory: limit 81920 MiB (exit code 137)',
    exitCode: 137,
    oom: true,
  },
  {
    name: 'Error with its exit code',
    pod: pod(onNode([terminated(1, 'Error')], 'Failed', failedConditions), { nodeName: 'gpu-node-1' }),
    stage: 'exited',
    phase: 'exited',
    message: 'Error: exited with code 1',
    exitCode: 1,
  },
  {
    name: 'Completed',
    pod: pod(onNode([terminated(0, 'Completed')], 'Succeeded', failedConditions), { nodeName: 'gpu-node-1' }),
    stage: 'exited',
    phase: 'exited',
    message: 'Completed: exited with code 0',
    exitCode: 0,
  },
  {
    name: 'Evicted by the kubelet for its ephemeral storage',
    pod: pod(
      {
        ...onNode(
          [
            container(
              {
                terminated: {
                  exitCode: 137,
                  reason: 'ContainerStatusUnknown',
                  message: 'The container could not be located when the pod was terminated',
                  startedAt: '2024-05-02T10:01:00Z',
                  finishedAt: '2024-05-02T10:04:00Z',
                },
              },
              pulled,
            ),
          ],
          'Failed',
          [
            condition(
              'DisruptionTarget',
              'True',
              'TerminationByKubelet',
              'Pod ephemeral local storage usage ...',
            ),
            ...failedConditions,
          ],
        ),
        reason: 'Evicted',
        message: 'Pod ephemeral local storage usage exceeds the total limit of containers 160Gi. ',
      },
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'exited',
    phase: 'exited',
    message:
      'Evicted: Pod ephemeral local storage usage exceeds the total limit of containers 160Gi.; ' +
      'ContainerStatusUnknown: killed (signal 9, exit code 137)',
    exitCode: 137,
  },
  {
    name: 'refused by the node at admission, no container status',
    pod: pod(
      {
        phase: 'Failed',
        reason: 'UnexpectedAdmissionError',
        message:
          'Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu',
        conditions: [condition('PodScheduled', 'True')],
        startTime: at,
      },
      { nodeName: 'gpu-node-1' },
    ),
    stage: 'exited',
    phase: 'exited',
    message:
      'UnexpectedAdmissionError: Allocate failed due to no healthy devices present; cannot allocate unhealthy ' +
      'devices nvidia.com/gpu',
  },
  {
    name: 'deleted behind Corral: terminating while still running',
    pod: pod(
      onNode(
        [
          container(
            { running: { startedAt: '2024-05-02T10:01:00Z' } },
            { ...pulled, ready: true, started: true },
          ),
        ],
        'Running',
      ),
      { nodeName: 'gpu-node-1', deletion: true },
    ),
    stage: 'deleting',
    phase: 'exited',
    message: 'Terminating: the pod is being deleted (grace period 30 s)',
  },
  {
    name: "evicted (a node's drain): terminating, the eviction said",
    pod: (() => {
      const evicted = pod(
        onNode(
          [
            container(
              { running: { startedAt: '2024-05-02T10:01:00Z' } },
              { ...pulled, ready: true, started: true },
            ),
          ],
          'Running',
        ),
        { nodeName: 'gpu-node-1', deletion: true },
      );
      const disruption = {
        type: 'DisruptionTarget',
        status: 'True',
        reason: 'EvictionByEvictionAPI',
        message: 'Eviction API: evicting',
      };
      const conditions = [...(evicted.status?.conditions ?? []), disruption];
      return { ...evicted, status: { ...evicted.status, conditions } };
    })(),
    stage: 'deleting',
    phase: 'exited',
    message:
      'Terminating: EvictionByEvictionAPI: Eviction API: evicting; the pod is being deleted (grace period 30 s)',
  },
  {
    name: 'deleted, its container already ended by the SIGTERM',
    pod: pod(onNode([terminated(143, 'Error')], 'Failed', failedConditions), {
      nodeName: 'gpu-node-1',
      deletion: true,
    }),
    stage: 'deleting',
    phase: 'exited',
    message:
      'Terminating: the pod is being deleted (grace period 30 s); Error: killed (signal 15, exit code 143)',
    exitCode: 143,
  },
];

describe('podState', () => {
  it.each(cases)(
    '$name -> $stage ($phase)',
    ({ pod: input, stage, phase, message, exitCode, oom, address }) => {
      const state = podState(input);
      expect(state?.stage).toBe(stage);
      expect(state?.worker.phase).toBe(phase);
      expect(state?.worker.message).toBe(message);
      expect(state?.worker.exitCode).toBe(exitCode);
      expect(state?.worker.exitReason).toBe(oom ? 'out-of-memory' : undefined);
      expect(state?.worker.address).toEqual(address);
    },
  );

  it('keeps the Kubernetes reason', () => {
    const reasons = cases.map((c) => podState(c.pod)?.reason);
    expect(reasons).toEqual([
      '',
      'Unschedulable',
      'Unschedulable',
      'ContainerCreating',
      'ContainerCreating',
      'ErrImagePull',
      'ImagePullBackOff',
      'InvalidImageName',
      'CreateContainerConfigError',
      'Running',
      'OOMKilled',
      'Error',
      'Completed',
      'Evicted',
      'UnexpectedAdmissionError',
      'Terminating',
      'Terminating',
      'Terminating',
    ]);
  });

  it('names the worker, its exact labels, GPUs, memory limit and creation time', () => {
    const state = podState(cases[0]?.pod ?? {});
    expect(state?.worker).toMatchObject({
      workerId: 'ab12cd34-w0rk3r01',
      endpointId: 'ab12cd34ef56gh78',
      revision: 3,
      labels: {
        [LABELS.managed]: 'true',
        [LABELS.endpoint]: 'ab12cd34ef56gh78',
        [LABELS.worker]: 'ab12cd34-w0rk3r01',
        [LABELS.revision]: '3',
        [LABELS.owner]: 'alice@example.com',
        [LABELS.installation]: 'inst-abc123',
      },
      gpuUuids: ['GPU-aaa'],
      memoryLimitBytes: 80 * GIB,
      createdAt: Date.parse(CREATED),
    });
    expect(state?.worker.labels).not.toHaveProperty(POD_LABELS.product);
  });

  it('reads the timestamps the official client gives as Dates', () => {
    const base = made();
    const state = podState({ ...base, metadata: { ...base.metadata, creationTimestamp: new Date(CREATED) } });
    expect(state?.worker.createdAt).toBe(Date.parse(CREATED));
  });

  it('takes the labels from the pod when the annotation is missing or broken', () => {
    const base = made();
    const broken: Record<string, string>[] = [{}, { [POD_ANNOTATIONS.labels]: '{not json' }];
    for (const annotations of broken) {
      const state = podState({ ...base, metadata: { ...base.metadata, annotations } });
      expect(state?.worker.workerId).toBe('ab12cd34-w0rk3r01');
      expect(state?.worker.labels[LABELS.installation]).toBe('inst-abc123');
      expect(state?.worker.labels).not.toHaveProperty(POD_LABELS.product);
      expect(state?.worker.gpuUuids).toEqual([]);
    }
  });

  it('is undefined for a pod that is not a Corral worker', () => {
    expect(
      podState({ metadata: { name: 'coredns-5d78c9869d-abcde', labels: { 'k8s-app': 'kube-dns' } } }),
    ).toBe(undefined);
    expect(podState({})).toBeUndefined();
  });

  it('gives no address before the pod has an IP, and takes podIPs when podIP is absent', () => {
    const running = cases.find((c) => c.stage === 'running')?.pod ?? {};
    const { podIP: _ip, podIPs: _ips, ...withoutIp } = running.status ?? {};
    expect(podState({ ...running, status: withoutIp })?.worker.address).toBeUndefined();
    expect(
      podState({ ...running, status: { ...withoutIp, podIPs: [{ ip: 'fd00::17' }] } })?.worker.address,
    ).toEqual({ host: 'fd00::17', port: 8000 });
  });
});
