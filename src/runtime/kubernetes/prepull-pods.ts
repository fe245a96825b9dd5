/**
 * Image pre-pull on Kubernetes nodes, the pure part: which nodes an endpoint's image is pulled onto, the short-lived
 * pod that pulls it onto one node (`nodeName` set: no scheduler, no GPU), what a pre-pull pod's status says of the
 * image on its node, and what the nodes' verdicts make of the whole pre-pull. image-prepull.ts does the I/O.
 */
import { type ImagePullPolicy, LABEL_PREFIX, LABELS, type RuntimeErrorCode } from '../types.js';
import type { Node } from './api.js';
import { gpuNodes, schedulable } from './cluster-products.js';
import { dnsName, labelValue } from './names.js';
import type { Pod, PodManifest } from './objects.js';
import {
  DEFAULT_GPU_RESOURCE,
  type PodOptions,
  type ProductNodeLabel,
  podLabels,
  productSelector,
} from './pod-spec.js';
import { CREATE_FAILURE_REASONS, IMAGE_PULL_REASONS } from './pod-state.js';

/** On a pre-pull pod: the id of its pre-pull (one per prepareImage), so that its pods are found and swept. */
export const PREPULL_LABEL = `${LABEL_PREFIX}prepull`;
/** The pre-pull pod's one container. */
export const PREPULL_CONTAINER = 'pull';

/** The node's Ready condition, where it has one: a node that says it is not ready runs no pod. */
function ready(node: Node): boolean {
  const condition = node.status?.conditions?.find((c) => c.type === 'Ready');
  return condition === undefined || condition.status === 'True';
}

/**
 * The nodes a worker of the endpoint could run on, by name: the schedulable, ready nodes of the endpoint's products
 * (their node labels, as a worker's pod selects them); an endpoint that names no product, every schedulable,
 * ready node with GPUs of `gpuResource`. None (a cluster without GPU nodes): nothing to pull.
 */
export function prepullNodes(
  nodes: readonly Node[],
  productIds: readonly string[],
  options: { selectors: Readonly<Record<string, ProductNodeLabel>>; gpuResource?: string },
): string[] {
  const labels = productIds.map(
    (id) => Object.entries(productSelector(id, { products: options.selectors }))[0],
  );
  const onProduct = (node: Node): boolean =>
    labels.some((entry) => entry !== undefined && node.metadata?.labels?.[entry[0]] === entry[1]);
  const candidates =
    labels.length === 0
      ? gpuNodes(nodes, options.gpuResource)
      : nodes.filter((node) => schedulable(node) && onProduct(node));
  return candidates
    .filter(ready)
    .map((node) => node.metadata?.name ?? '')
    .filter((name) => name !== '')
    .sort();
}

/** The pre-pull pod's name: `${namePrefix}prepull-${runId}-${node}`, folded to a DNS label (63 characters). */
export function prepullPodName(runId: string, node: string, options: Pick<PodOptions, 'namePrefix'>): string {
  return dnsName(`${options.namePrefix}prepull-${runId}-`, node);
}

export interface PrepullPodInput {
  image: string;
  node: string;
  /** The pre-pull's id (PREPULL_LABEL). */
  runId: string;
  /** As the worker's pod pulls (pod-spec.ts, imagePullPolicy). */
  pullPolicy: ImagePullPolicy;
  /** The endpoint's pull Secret, as the worker's pod names it; undefined: a public image. */
  pullSecret?: string;
  /** The kubelet ends the pod after this (activeDeadlineSeconds), even with no Corral left to delete it. */
  deadlineSeconds: number;
  /**
   * The node's uid: the node is then the pod's controller (an owner reference), so that `kubectl drain` evicts a
   * pre-pull under way instead of refusing a pod without a controller, and a node deleted takes its pods along.
   */
  nodeUid?: string;
}

/**
 * The pod that pulls the image onto one node: bound to it (`nodeName`), asking for no GPU and almost nothing else,
 * its container doing nothing (`true`; an image without it fails to start, which says as much: the image is
 * there), never restarted, hidden from every GPU, without a token for the API. Labelled as Corral's (managed, the
 * installation) with PREPULL_LABEL and no worker label: adoption, which reads the worker label, never sees it.
 */
export function prepullPod(
  input: PrepullPodInput,
  options: Pick<PodOptions, 'namespace' | 'namePrefix' | 'installationLabels' | 'gpuResource'>,
): PodManifest {
  const installation = podLabels(options.installationLabels);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: prepullPodName(input.runId, input.node, options),
      namespace: options.namespace,
      labels: { ...installation, [LABELS.managed]: 'true', [PREPULL_LABEL]: labelValue(input.runId) },
      annotations: {},
      ...(input.nodeUid === undefined
        ? {}
        : {
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Node', name: input.node, uid: input.nodeUid, controller: true },
            ],
          }),
    },
    spec: {
      nodeName: input.node,
      containers: [
        {
          name: PREPULL_CONTAINER,
          image: input.image,
          imagePullPolicy: input.pullPolicy,
          command: ['true'],
          // A node whose runtime is nvidia by default would hand every GPU to an image that asks for them all.
          env: [{ name: 'NVIDIA_VISIBLE_DEVICES', value: 'void' }],
          resources: {
            requests: { cpu: '10m', memory: '16Mi' },
            limits: { cpu: '100m', memory: '64Mi' },
          },
          securityContext: {
            allowPrivilegeEscalation: false,
            privileged: false,
            capabilities: { drop: ['ALL'], add: [] },
            seccompProfile: { type: 'RuntimeDefault' },
          },
        },
      ],
      restartPolicy: 'Never',
      activeDeadlineSeconds: input.deadlineSeconds,
      terminationGracePeriodSeconds: 0,
      // GPU nodes are often tainted to keep other pods off (the workers' pods tolerate it too).
      tolerations: [
        { key: options.gpuResource ?? DEFAULT_GPU_RESOURCE, operator: 'Exists', effect: 'NoSchedule' },
      ],
      ...(input.pullSecret === undefined ? {} : { imagePullSecrets: [{ name: input.pullSecret }] }),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
    },
  };
}

/**
 * What a pre-pull pod says of the image on its node:
 * - `present`: its container was created, started or ended (whatever its exit), or could not be created or started
 *   (RunContainerError, CreateContainerError, StartError...): the kubelet had the image first;
 * - `pull-failed`: the kubelet cannot have the image (pod-state.ts's IMAGE_PULL_REASONS: ErrImagePull,
 *   ImagePullBackOff, InvalidImageName, ErrImageNeverPull...), `message` its words;
 * - `not-run`: the node did not run the pod (refused at admission, OutOfcpu; past its deadline; deleted by another);
 * - `pending`: not yet said (the kubelet is pulling, or has not seen the pod).
 */
export type PrepullVerdict =
  | { kind: 'pending' }
  | { kind: 'present' }
  | { kind: 'pull-failed'; message: string }
  | { kind: 'not-run'; message: string };

function joined(reason: string | undefined, message: string | undefined): string {
  return [reason, message?.trim()].filter((part) => part !== undefined && part !== '').join(': ');
}

/** The verdict of a pre-pull pod as last seen; undefined: the pod is gone (deleted by someone else). */
export function prepullVerdict(pod: Pod | undefined): PrepullVerdict {
  if (!pod) return { kind: 'not-run', message: 'the pre-pull pod was deleted' };
  const statuses = pod.status?.containerStatuses ?? [];
  const status = statuses.find((s) => s.name === PREPULL_CONTAINER) ?? statuses[0];
  const waiting = status?.state?.waiting;
  const reason = waiting?.reason ?? '';
  if (IMAGE_PULL_REASONS.has(reason))
    return { kind: 'pull-failed', message: joined(reason, waiting?.message) };
  if (CREATE_FAILURE_REASONS.has(reason) || status?.state?.running) return { kind: 'present' };
  const terminated = status?.state?.terminated ?? status?.lastState?.terminated;
  // A container the kubelet never made, ended with its pod (a deadline while pulling), says nothing of the image.
  if (terminated && terminated.reason !== 'ContainerStatusUnknown') return { kind: 'present' };
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded')
    return { kind: 'not-run', message: joined(pod.status?.reason ?? phase, pod.status?.message) };
  return { kind: 'pending' };
}

/** The pre-pull as a whole: under way, or its result (`failedNodes`: nodes the image did not reach, for the log). */
export type PrepullOutcome =
  | { done: false; nodesDone: number }
  | { done: true; ok: true; failedNodes: string[] }
  | { done: true; ok: false; code: RuntimeErrorCode; message: string };

/**
 * The nodes' verdicts (node -> verdict) as one outcome, once every node said (or `final`: at the deadline, the
 * nodes still pending count as not reached). The image is ready when one node at least has it (a node-local failure,
 * a full disk, does not fail the endpoint: a worker placed there fails as it would without a pre-pull); it cannot be
 * had (IMAGE_PULL_FAILED, the kubelet's words) when no node has it and one could not pull it; anything else (no
 * node ran its pod, none finished in time) is RUNTIME_ERROR: tried again, not the endpoint's failure.
 */
export function prepullOutcome(
  image: string,
  verdicts: ReadonlyMap<string, PrepullVerdict>,
  final: boolean,
  deadlineSeconds: number,
): PrepullOutcome {
  const entries = [...verdicts];
  const pending = entries.filter(([, v]) => v.kind === 'pending');
  if (pending.length > 0 && !final) return { done: false, nodesDone: entries.length - pending.length };
  const failed = entries.filter(([, v]) => v.kind !== 'present').map(([node]) => node);
  if (entries.some(([, v]) => v.kind === 'present')) return { done: true, ok: true, failedNodes: failed };
  const pullFailure = entries.find(([, v]) => v.kind === 'pull-failed');
  if (pullFailure) {
    const [node, verdict] = pullFailure;
    const why = verdict.kind === 'pull-failed' ? verdict.message : '';
    return {
      done: true,
      ok: false,
      code: 'IMAGE_PULL_FAILED',
      message: `cannot pull image ${image} on node ${node}: ${why}`,
    };
  }
  const notRun = entries.find(([, v]) => v.kind === 'not-run');
  const why =
    notRun && notRun[1].kind === 'not-run'
      ? `node ${notRun[0]} did not run the pre-pull pod (${notRun[1].message})`
      : `no node finished within ${deadlineSeconds} s`;
  return { done: true, ok: false, code: 'RUNTIME_ERROR', message: `cannot pre-pull image ${image}: ${why}` };
}

/**
 * Pre-pull pods left behind (a Corral stopped mid-pull, a delete that failed): those of no pre-pull under way here
 * that were made longer than their deadline and a minute ago (another replica's, still pulling, are younger).
 */
export function stalePrepullPods(
  pods: Iterable<Pod>,
  active: ReadonlySet<string>,
  now: number,
  deadlineSeconds: number,
): string[] {
  const stale: string[] = [];
  for (const pod of pods) {
    const runId = pod.metadata?.labels?.[PREPULL_LABEL];
    const created = pod.metadata?.creationTimestamp;
    const at = created === undefined ? Number.NaN : new Date(created).getTime();
    if (runId === undefined || active.has(runId) || Number.isNaN(at)) continue;
    if (now - at > (deadlineSeconds + 60) * 1000) stale.push(pod.metadata?.name ?? '');
  }
  return stale.filter((name) => name !== '');
}
