/**
 * A Pod as the API returns it -> the worker the runtime reports (RuntimeWorker), with the stage Kubernetes says the
 * pod is at and the Kubernetes reason kept as the worker's message ("0/3 nodes are available: 3 Insufficient
 * nvidia.com/gpu.", "ErrImagePull: ...", "OOMKilled: ..."). Pure: tested by tables of pods shaped as the API
 * server and the kubelet write them.
 */
import { exitDescription } from '../exit-description.js';
import { type ExitReason, LABELS, type RuntimePhase, type RuntimeWorker } from '../types.js';
import type { ContainerState, ContainerStatus, Pod, Timestamp } from './objects.js';
import { POD_ANNOTATIONS, POD_LABELS, WORKER_CONTAINER } from './pod-spec.js';
import { parseQuantity } from './quantity.js';

/**
 * Where a worker's pod is, in Kubernetes' terms:
 * - `unscheduled`: no node yet (PodScheduled False, e.g. Unschedulable), or the scheduler has not seen it;
 * - `creating`: on a node, its container not started yet (ContainerCreating: the image is pulled, volumes mounted);
 * - `image-pull-failed`: the kubelet cannot have the image (ErrImagePull, ImagePullBackOff, InvalidImageName, ...);
 * - `create-failed`: the container cannot be made or started (CreateContainerConfigError, RunContainerError, ...);
 * - `running`: its container runs (health is the controller's business);
 * - `exited`: its container ended (OOMKilled, Error, Completed) or the pod failed as a whole (Evicted);
 * - `deleting`: the pod has a deletionTimestamp: it is terminating and will be gone after its grace period.
 */
export type PodStage =
  | 'unscheduled'
  | 'creating'
  | 'image-pull-failed'
  | 'create-failed'
  | 'running'
  | 'exited'
  | 'deleting';

export interface PodState {
  stage: PodStage;
  /** The Kubernetes reason behind the stage: Unschedulable, ContainerCreating, ErrImagePull, OOMKilled, Evicted... */
  reason: string;
  worker: RuntimeWorker;
}

/** Waiting reasons of the kubelet's image manager (pkg/kubelet/images): the image cannot be had. */
export const IMAGE_PULL_REASONS: ReadonlySet<string> = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'ImageInspectError',
]);

/** Waiting reasons of the kubelet when the container cannot be created or started (pkg/kubelet/container). */
export const CREATE_FAILURE_REASONS: ReadonlySet<string> = new Set([
  'CreateContainerConfigError',
  'CreateContainerError',
  'PreCreateHookError',
  'PreStartHookError',
  'PostStartHookError',
  'RunContainerError',
]);

/**
 * The worker's phase at each stage: no node has room yet is `pending` (the scheduler's words are the message), the
 * kubelet getting the image and creating the container (or failing to pull it) `pulling`, a container that cannot be
 * started `starting`. Controller states follow these (docs/workers.md).
 */
export const RUNTIME_PHASE: Readonly<Record<PodStage, RuntimePhase>> = {
  unscheduled: 'pending',
  creating: 'pulling',
  'image-pull-failed': 'pulling',
  'create-failed': 'starting',
  running: 'running',
  exited: 'exited',
  deleting: 'exited',
};

function millis(at: Timestamp | undefined): number {
  if (at === undefined) return 0;
  const ms = at instanceof Date ? at.getTime() : Date.parse(at);
  return Number.isNaN(ms) ? 0 : ms;
}

/** The worker's own labels: the exact ones kept in the annotation, else the pod's labels without Kubernetes' own. */
function ownLabels(pod: Pod): Record<string, string> {
  const saved = pod.metadata?.annotations?.[POD_ANNOTATIONS.labels];
  if (saved !== undefined) {
    try {
      const parsed: unknown = JSON.parse(saved);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
        const entries = Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string');
        return Object.fromEntries(entries);
      }
    } catch {
      // An annotation edited by hand: fall back to the labels.
    }
  }
  const labels = { ...(pod.metadata?.labels ?? {}) };
  delete labels[POD_LABELS.product];
  return labels;
}

function workerStatus(pod: Pod): ContainerStatus | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.find((status) => status.name === WORKER_CONTAINER) ?? statuses[0];
}

interface Exit {
  exitCode?: number;
  exitReason?: ExitReason;
  /** The kubelet's reason: OOMKilled, Error, Completed, ContainerStatusUnknown. */
  reason: string;
}

function exitOf(state: ContainerState | undefined): Exit | undefined {
  const terminated = state?.terminated;
  if (!terminated) return undefined;
  const reason = terminated.reason ?? '';
  return {
    exitCode: terminated.exitCode,
    ...(reason === 'OOMKilled' ? { exitReason: 'out-of-memory' as const } : {}),
    reason,
  };
}

function joined(reason: string, detail: string | undefined): string {
  const text = detail?.trim() ?? '';
  if (reason === '') return text;
  return text === '' ? reason : `${reason}: ${text}`;
}

interface Stage {
  stage: PodStage;
  reason: string;
  message: string;
  exit?: Exit;
}

/** The stage, in the order that decides it: deletion, exit, failure of the pod, scheduling, the container. */
function stageOf(pod: Pod, memoryLimitBytes: number | undefined): Stage {
  const status = workerStatus(pod);
  const exit = exitOf(status?.state);
  const describe = (e: Exit) =>
    joined(e.reason, exitDescription({ exitCode: e.exitCode, exitReason: e.exitReason, memoryLimitBytes }));

  if (pod.metadata?.deletionTimestamp !== undefined) {
    const grace = pod.metadata.deletionGracePeriodSeconds;
    // Why, where Kubernetes says (since 1.26): an eviction (a drain's), a preemption, a taint, the kubelet.
    const disruption = pod.status?.conditions?.find(
      (c) => c.type === 'DisruptionTarget' && c.status === 'True',
    );
    const why = disruption ? `${joined(disruption.reason ?? '', disruption.message)}; ` : '';
    const detail = `${why}the pod is being deleted${grace === undefined ? '' : ` (grace period ${grace} s)`}`;
    return {
      stage: 'deleting',
      reason: 'Terminating',
      message: `Terminating: ${detail}${exit ? `; ${describe(exit)}` : ''}`,
      ...(exit ? { exit } : {}),
    };
  }
  const phase = pod.status?.phase;
  // The pod as a whole failed (Evicted, UnexpectedAdmissionError, NodeAffinity...): its reason says more than the
  // container's, which the kubelet reports as an Error or ContainerStatusUnknown.
  if (phase === 'Failed' && pod.status?.reason) {
    const message = joined(pod.status.reason, pod.status.message);
    return {
      stage: 'exited',
      reason: pod.status.reason,
      message: exit ? `${message}; ${describe(exit)}` : message,
      ...(exit ? { exit } : {}),
    };
  }
  if (exit) return { stage: 'exited', reason: exit.reason, message: describe(exit), exit };
  if (phase === 'Failed' || phase === 'Succeeded') {
    return {
      stage: 'exited',
      reason: phase,
      message: joined(phase, pod.status?.message),
      exit: { reason: phase },
    };
  }

  const scheduled = pod.status?.conditions?.find((condition) => condition.type === 'PodScheduled');
  if (scheduled?.status !== 'True' && !pod.spec?.nodeName) {
    const reason = scheduled?.reason ?? '';
    // The scheduler's own words say why: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    const message = scheduled?.message?.trim() || (reason === '' ? 'waiting for the scheduler' : reason);
    return { stage: 'unscheduled', reason, message };
  }

  const waiting = status?.state?.waiting;
  if (waiting) {
    const reason = waiting.reason ?? '';
    const message = joined(reason, waiting.message);
    if (IMAGE_PULL_REASONS.has(reason)) return { stage: 'image-pull-failed', reason, message };
    if (CREATE_FAILURE_REASONS.has(reason)) return { stage: 'create-failed', reason, message };
    return { stage: 'creating', reason, message: message || 'ContainerCreating' };
  }
  if (status?.state?.running) {
    const node = pod.spec?.nodeName;
    return { stage: 'running', reason: 'Running', message: node ? `Running on node ${node}` : 'Running' };
  }
  // Bound to a node that has not reported the container yet.
  const node = pod.spec?.nodeName;
  return {
    stage: 'creating',
    reason: 'ContainerCreating',
    message: node ? `ContainerCreating on node ${node}` : 'ContainerCreating',
  };
}

function appPort(pod: Pod): number | undefined {
  const containers = pod.spec?.containers ?? [];
  const container = containers.find((c) => c.name === WORKER_CONTAINER) ?? containers[0];
  const port = container?.ports?.find((p) => p.name === 'http') ?? container?.ports?.[0];
  return port?.containerPort;
}

function memoryLimit(pod: Pod): number | undefined {
  const containers = pod.spec?.containers ?? [];
  const container = containers.find((c) => c.name === WORKER_CONTAINER) ?? containers[0];
  const quantity = container?.resources?.limits?.memory;
  const bytes = quantity === undefined ? undefined : parseQuantity(quantity);
  return bytes === undefined || bytes <= 0 ? undefined : Math.round(bytes);
}

/**
 * The worker a pod is, or undefined for a pod that is not a Corral worker (no worker or endpoint label). Its
 * address is the pod's IP and the app port, once its container runs.
 */
export function podState(pod: Pod): PodState | undefined {
  const labels = ownLabels(pod);
  const workerId = labels[LABELS.worker];
  const endpointId = labels[LABELS.endpoint];
  if (workerId === undefined || endpointId === undefined) return undefined;
  const memoryLimitBytes = memoryLimit(pod);
  const { stage, reason, message, exit } = stageOf(pod, memoryLimitBytes);
  const port = appPort(pod);
  const podIp = pod.status?.podIP ?? pod.status?.podIPs?.[0]?.ip;
  const running = workerStatus(pod)?.state?.running !== undefined && stage === 'running';
  const gpus = pod.metadata?.annotations?.[POD_ANNOTATIONS.gpus] ?? '';
  const worker: RuntimeWorker = {
    workerId,
    endpointId,
    revision: Number(labels[LABELS.revision] ?? 0) || 0,
    labels,
    phase: RUNTIME_PHASE[stage],
    ...(running && podIp && port !== undefined ? { address: { host: podIp, port } } : {}),
    ...(exit?.exitCode === undefined ? {} : { exitCode: exit.exitCode }),
    ...(exit?.exitReason === undefined ? {} : { exitReason: exit.exitReason }),
    ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }),
    message,
    createdAt: millis(pod.metadata?.creationTimestamp),
    gpuUuids: gpus.split(',').filter((uuid) => uuid !== ''),
  };
  return { stage, reason, worker };
}
