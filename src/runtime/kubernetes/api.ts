/**
 * The narrow interface of the Kubernetes API calls the Kubernetes runtime makes (Kysely's habit: the runtime sees
 * these few calls, not the whole client). client-api.ts implements it over @kubernetes/client-node; the tests'
 * stand-in (test/support/kube-stand-in.ts) serves the same calls over HTTP. Failures are KubernetesApiError: an
 * HTTP answer carries its status and the Status body's reason; no answer at all (refused, reset, timed out) is
 * `unreachable`.
 */
import type { Pod, Secret } from './objects.js';

/** A list as the API returns it: the items and the list's resourceVersion, where a watch resumes from. */
export interface ObjectList<T> {
  items: T[];
  resourceVersion: string;
}

/** One event of a watch stream: ADDED/MODIFIED/DELETED carry the object, ERROR a Status, BOOKMARK a version. */
export type WatchEvent<T = Pod> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | { type: 'BOOKMARK'; resourceVersion: string }
  | { type: 'ERROR'; status: ApiStatus };

/** The API's `Status` object, as error bodies and watch ERROR events carry it. */
export interface ApiStatus {
  code?: number;
  /** NotFound, AlreadyExists, Conflict, Expired, Gone, Forbidden, Unauthorized, Invalid... */
  reason?: string;
  message?: string;
}

export interface PodLogOptions {
  container: string;
  follow: boolean;
  tailLines?: number;
  signal?: AbortSignal;
}

/** A PersistentVolumeClaim, as far as Corral reads it. */
export interface PersistentVolumeClaim {
  metadata?: { name?: string };
  status?: { phase?: string };
}

/** A Node, as far as Corral reads it (products and allocatable GPUs, whether it is ready for a pre-pull, and its
 * addresses, where its node agent listens). */
export interface Node {
  metadata?: { name?: string; uid?: string; labels?: { [key: string]: string }; resourceVersion?: string };
  spec?: { unschedulable?: boolean };
  status?: {
    allocatable?: { [key: string]: string };
    capacity?: { [key: string]: string };
    /** Ready, MemoryPressure, DiskPressure...: `status` 'True', 'False' or 'Unknown'. */
    conditions?: { type: string; status: string }[];
    addresses?: { type?: string; address?: string }[];
  };
}

/** Resource usage of a pod's containers (metrics.k8s.io PodMetrics): cpu and memory as quantities. */
export interface PodMetrics {
  containers: { name: string; usage: { cpu?: string; memory?: string } }[];
}

export interface KubernetesApi {
  /** The API server's address, for messages. */
  readonly server: string;
  createPod(namespace: string, pod: Pod): Promise<Pod>;
  /** Deletes with the grace period (seconds); 404 when there is no such pod. */
  deletePod(namespace: string, name: string, graceSeconds: number): Promise<void>;
  readPod(namespace: string, name: string): Promise<Pod>;
  listPods(namespace: string, labelSelector: string): Promise<ObjectList<Pod>>;
  /**
   * Watches the namespace's pods from `resourceVersion`. Resolves once the stream is open; `onEvent` hears each
   * event in order; `onEnd` is called once when the stream ends (the server closed it: undefined) or fails. Aborting
   * the signal ends it without calling `onEnd`.
   */
  watchPods(
    namespace: string,
    options: { labelSelector: string; resourceVersion: string; signal: AbortSignal },
    onEvent: (event: WatchEvent) => void,
    onEnd: (error: unknown) => void,
  ): Promise<void>;
  /** The container's output (pods/log); with `follow`, the stream stays open while the container runs. */
  podLog(namespace: string, name: string, options: PodLogOptions): Promise<AsyncIterable<Buffer | string>>;
  /** PodMetrics from metrics.k8s.io; 404 where the metrics API has none (or no metrics server is installed). */
  podMetrics(namespace: string, name: string): Promise<PodMetrics>;
  createSecret(namespace: string, secret: Secret): Promise<Secret>;
  deleteSecret(namespace: string, name: string): Promise<void>;
  listSecrets(namespace: string, labelSelector: string): Promise<ObjectList<Secret>>;
  readPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim>;
  listNodes(labelSelector?: string): Promise<ObjectList<Node>>;
  /**
   * Sets (a string) or removes (null) labels of a node, leaving its others (a JSON merge patch): the model cache's
   * labels, which say the node's cache holds a model (node-model-cache.ts).
   */
  patchNodeLabels(name: string, labels: Record<string, string | null>): Promise<void>;
  /** Watches the cluster's nodes from `resourceVersion`, as watchPods does the namespace's pods. */
  watchNodes(
    options: { resourceVersion: string; signal: AbortSignal },
    onEvent: (event: WatchEvent<Node>) => void,
    onEnd: (error: unknown) => void,
  ): Promise<void>;
}

/** A failed API call: `status` is the HTTP status of an answer; undefined with `unreachable` when none came. */
export class KubernetesApiError extends Error {
  override name = 'KubernetesApiError';

  constructor(
    message: string,
    readonly status: number | undefined,
    readonly reason: string,
    readonly unreachable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function apiStatusOf(error: unknown): number | undefined {
  return error instanceof KubernetesApiError ? error.status : undefined;
}

/** `key=value,key2=value2`: a label selector of equalities. */
export function labelSelector(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}
