/**
 * WorkerRuntime on a Kubernetes cluster: one Pod per worker in Corral's namespace, placed by the scheduler. State
 * comes from one watch over this installation's pods (pod-view.ts), so list and inspect make no API call while it
 * is up; pods are built by pod-spec.ts and read by pod-state.ts. A create waits, through the watch, until the pod
 * runs (its address is the pod IP and the app port) or the kubelet cannot start it; a pod deleted behind Corral's
 * back is a removed worker; pods of another installation are never seen, so never touched. A second watch follows the
 * cluster's nodes: the runtime's scheduler places GPUs (`gpuScheduler`), and its products are the nodes' GPU models
 * and allocatable GPUs less what Corral's pods hold (cluster-products.ts), read without an API call.
 */
import type { Logger } from 'pino';
import type { Timers } from '../../service/clock.js';
import {
  type ImageRequest,
  isWaitingPhase,
  LABELS,
  type LogOptions,
  type PullProgress,
  RuntimeError,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
} from '../types.js';
import { type KubernetesApi, labelSelector, type Node } from './api.js';
import { isApiNotFound, kubernetesError } from './api-errors.js';
import { CallLimit } from './call-limit.js';
import { type ClusterCatalog, clusterCatalog, type ProductCapacity } from './cluster-products.js';
import { ObjectView } from './object-view.js';
import type { Pod } from './objects.js';
import { POD_LABELS, type PodOptions, type PodPlacement, podSpec, WORKER_CONTAINER } from './pod-spec.js';
import { type PodState, podState } from './pod-state.js';
import { PodView } from './pod-view.js';
import { PullSecrets } from './pull-secrets.js';
import { parseQuantity } from './quantity.js';

export interface KubernetesRuntimeOptions {
  api: KubernetesApi;
  namespace: string;
  /** The installation's id: its pods carry it, and only its pods are watched, adopted and removed. */
  installationId?: string;
  /** Pod and Secret names start with this; default `corral-`. */
  namePrefix?: string;
  /** How pods are made: GPU resource name, products' node labels, memory per GPU, claims, sandbox, grace. */
  pods?: Partial<Omit<PodOptions, 'namespace' | 'namePrefix' | 'installationLabels'>>;
  /** The configured products' ids, in order (their node labels are in `pods.products`); default none. */
  products?: readonly string[];
  logger: Logger;
  timers?: Timers;
  /** Watch reconnect backoff; default 200 ms doubling up to 5 s. */
  watchBackoff?: { initialMs: number; maxMs: number };
  /** How long a removal waits past the grace period for the kubelet to confirm the pod is gone; default 15 s. */
  removeMarginMs?: number;
  /** Pod creates and deletes in flight at once (call-limit.ts); default 64. */
  maxWritesInFlight?: number;
}

const DEFAULT_GRACE_SECONDS = 10;

interface Entry {
  pod: Pod;
  state: PodState;
}

type Waiter = (entry: Entry | undefined) => void;

function workerIdOf(pod: Pod): string | undefined {
  return podState(pod)?.worker.workerId;
}

/** `wanted` is the selector's entries, taken once per listing (a pass lists 10,000 workers). */
function matches(labels: Record<string, string>, wanted: readonly [string, string][]): boolean {
  for (let i = 0; i < wanted.length; i++) {
    const entry = wanted[i];
    if (entry && labels[entry[0]] !== entry[1]) return false;
  }
  return true;
}

/** CPU in cores and memory in bytes from metrics.k8s.io quantities (`12345678n`, `52Mi`). */
function usage(quantity: string | undefined): number {
  if (quantity === undefined) return 0;
  return parseQuantity(quantity) ?? 0;
}

export class KubernetesRuntime implements WorkerRuntime {
  readonly name = 'kubernetes' as const;
  readonly #o: KubernetesRuntimeOptions;
  readonly #logger: Logger;
  readonly #podOptions: PodOptions;
  readonly #view: PodView;
  /** The cluster's nodes, from a watch of their own: the products and their GPUs. */
  readonly #nodes: ObjectView<Node>;
  /** The products as of the last change of a node or a pod; recomputed when asked after one. */
  #catalog: ClusterCatalog | undefined;
  /** The products' node labels, configured and found on the nodes: they change with the nodes only. */
  #selectors: ClusterCatalog['selectors'] | undefined;
  #nodesStarted: Promise<void> | undefined;
  readonly #secrets: PullSecrets;
  /** Pod creates and deletes: a burst of thousands is paced, not thrown at the API server at once. */
  readonly #writes: CallLimit;
  /** workerId -> its pod and what it reads as. */
  readonly #workers = new Map<string, Entry>();
  /** workerId -> those waiting for its pod to change. */
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #watchers = new Set<(event: RuntimeEvent) => void>();
  readonly #streams = new Set<AbortController>();
  #closed = false;

  constructor(options: KubernetesRuntimeOptions) {
    this.#o = options;
    this.#writes = new CallLimit(options.maxWritesInFlight ?? 64);
    this.#logger = options.logger.child({ runtime: 'kubernetes' });
    const installationLabels: Record<string, string> =
      options.installationId === undefined ? {} : { [LABELS.installation]: options.installationId };
    this.#podOptions = {
      terminationGraceSeconds: DEFAULT_GRACE_SECONDS,
      networkClaims: {},
      ...options.pods,
      namespace: options.namespace,
      namePrefix: options.namePrefix ?? 'corral-',
      installationLabels,
    };
    const own = { [LABELS.managed]: 'true', ...installationLabels };
    this.#view = new PodView({
      api: options.api,
      namespace: options.namespace,
      labelSelector: labelSelector(own),
      logger: this.#logger,
      ...(options.timers ? { timers: options.timers } : {}),
      ...(options.watchBackoff ? { backoff: options.watchBackoff } : {}),
      onChange: (before, after) => this.#changed(before, after),
    });
    this.#nodes = new ObjectView<Node>({
      kind: 'node',
      logger: this.#logger,
      ...(options.timers ? { timers: options.timers } : {}),
      ...(options.watchBackoff ? { backoff: options.watchBackoff } : {}),
      source: {
        list: () => options.api.listNodes(),
        watch: (o, onEvent, onEnd) => options.api.watchNodes(o, onEvent, onEnd),
      },
      onChange: () => {
        this.#catalog = undefined;
        this.#selectors = undefined;
      },
    });
    this.#secrets = new PullSecrets({
      api: options.api,
      podOptions: this.#podOptions,
      labelSelector: `${labelSelector(own)},${POD_LABELS.credential}`,
      logger: this.#logger,
    });
  }

  /** Where the API server is, for messages. */
  get server(): string {
    return this.#o.api.server;
  }

  /** The watch's counters (lists, watches opened, relists after 410 Gone, reconnects). */
  get watchStats(): PodView['stats'] {
    return this.#view.stats;
  }

  /**
   * Lists and starts the watches; throws (RuntimeError) when the API server cannot be used for pods. Nodes that
   * cannot be listed (no permission, say) are said in the log and tried again: the products are empty meanwhile.
   */
  async start(): Promise<void> {
    await this.#ready();
    await this.#watchNodes();
  }

  /** The node view's first list and watch, once (the view retries by itself after a failure). */
  #watchNodes(): Promise<void> {
    this.#nodesStarted ??= this.#nodes.sync().catch((error: unknown) => {
      this.#logger.warn(
        { err: kubernetesError(error, 'cannot list nodes', this.server).message },
        'cannot read the cluster nodes: no GPU products until they can be listed',
      );
    });
    return this.#nodesStarted;
  }

  /** The scheduler places workers on the cluster's GPUs; the products are its nodes' (cluster-products.ts). */
  readonly gpuScheduler: { products(): ProductCapacity[] } = {
    products: () => this.#products().products,
  };

  /** The node view's counters (lists, watches opened, relists after 410 Gone, reconnects). */
  get nodeWatchStats(): ObjectView<Node>['stats'] {
    return this.#nodes.stats;
  }

  async prepareImage(_request: ImageRequest): Promise<void> {
    // The kubelet pulls on the node the scheduler picks, at the pod's start: nothing to make present here. A missing
    // image shows at the create (ErrImagePull). An API server that cannot be reached fails as every call does.
    await this.#ready();
  }

  async create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    await this.#ready();
    if (this.#workers.has(spec.workerId)) {
      throw new RuntimeError('RUNTIME_ERROR', `worker ${spec.workerId} already exists`);
    }
    const placement: PodPlacement = {
      product: spec.placement?.product ?? '',
      gpuNum: spec.placement?.gpuNum ?? spec.gpus.length,
      authId: spec.placement?.authId ?? '',
    };
    let secret: string | undefined;
    try {
      if (placement.authId) {
        secret = await this.#secrets.acquire(placement.authId, spec.ownerId, spec.registryAuth);
      }
      await this.#checkClaims(spec);
      // A product the nodes show without configuration selects the GPU model's label value.
      const pod = podSpec(spec, secret === undefined ? { ...placement, authId: '' } : placement, {
        ...this.#podOptions,
        products: this.#productSelectors(),
      });
      const waiting = this.#waitUntilStarted(spec, onProgress);
      // Awaited once the pod is made; a close meanwhile must not reject it unobserved.
      waiting.promise.catch(() => undefined);
      try {
        await this.#writes.run(() => this.#o.api.createPod(this.#o.namespace, pod));
      } catch (error) {
        waiting.cancel();
        throw error;
      }
      this.#logger.info({ workerId: spec.workerId, pod: pod.metadata.name }, 'pod created');
      return await waiting.promise;
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 409) throw new RuntimeError('RUNTIME_ERROR', `worker ${spec.workerId} already exists`);
      throw kubernetesError(error, `cannot start worker ${spec.workerId} (image ${spec.image})`, this.server);
    } finally {
      if (secret !== undefined) this.#secrets.release(secret);
    }
  }

  async remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    await this.#ready().catch((error: unknown) => {
      throw kubernetesError(error, `cannot remove worker ${workerId}`, this.server);
    });
    const entry = this.#workers.get(workerId);
    if (!entry) return;
    const name = entry.pod.metadata?.name ?? '';
    const grace = options?.graceSeconds ?? this.#podOptions.terminationGraceSeconds;
    const gone = this.#waitFor(workerId, (e) => e === undefined);
    try {
      await this.#writes.run(() => this.#o.api.deletePod(this.#o.namespace, name, grace));
    } catch (error) {
      if (!isApiNotFound(error)) {
        gone.cancel();
        throw kubernetesError(error, `cannot remove worker ${workerId}`, this.server);
      }
    }
    // The kubelet confirms the deletion once the container has stopped: the removal ends when the pod is gone.
    const margin = this.#o.removeMarginMs ?? 15_000;
    const confirmed = await gone.within(grace * 1000 + margin);
    if (!confirmed) {
      this.#logger.warn({ workerId, pod: name }, 'the pod is still terminating after its grace period');
    }
    this.#logger.info({ workerId, pod: name }, 'worker removed');
    await this.#pruneSecrets();
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    await this.#ready();
    const wanted = Object.entries(selector);
    const found: RuntimeWorker[] = [];
    for (const { state } of this.#workers.values()) {
      if (matches(state.worker.labels, wanted)) found.push({ ...state.worker });
    }
    return found;
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    await this.#ready();
    const entry = this.#workers.get(workerId);
    return entry ? { ...entry.state.worker } : undefined;
  }

  /** The pod a worker runs in, as the watch last saw it (for tests and the products report). */
  pod(workerId: string): Pod | undefined {
    return this.#workers.get(workerId)?.pod;
  }

  /** Every pod of this installation, as the watch sees it. */
  async pods(): Promise<Pod[]> {
    await this.#ready();
    return [...this.#workers.values()].map((e) => e.pod);
  }

  /** Every product's node label: configured ones, and those of the GPU models the nodes show (recomputed after a node changed). */
  #productSelectors(): ClusterCatalog['selectors'] {
    this.#selectors ??= {
      ...clusterCatalog([...this.#nodes.current().values()], [], this.#catalogOptions()).selectors,
      ...this.#podOptions.products,
    };
    return this.#selectors;
  }

  #catalogOptions(): Parameters<typeof clusterCatalog>[2] {
    return {
      configured: this.#o.products ?? [],
      ...(this.#podOptions.products ? { products: this.#podOptions.products } : {}),
      ...(this.#podOptions.gpuResource === undefined ? {} : { gpuResource: this.#podOptions.gpuResource }),
    };
  }

  /** The products and their capacity, from the nodes and Corral's pods as the watches last saw them. */
  #products(): ClusterCatalog {
    this.#catalog ??= clusterCatalog(
      [...this.#nodes.current().values()],
      [...this.#workers.values()].map((e) => e.pod),
      this.#catalogOptions(),
    );
    return this.#catalog;
  }

  async *logs(workerId: string, options: LogOptions): AsyncGenerator<string> {
    await this.#ready();
    const entry = this.#workers.get(workerId);
    if (!entry) throw new RuntimeError('NOT_FOUND', `worker ${workerId} does not exist`);
    if (options.signal?.aborted) return;
    if (options.tail === 0) {
      options.onOpen?.();
      return;
    }
    const name = entry.pod.metadata?.name ?? '';
    const controller = new AbortController();
    const abort = () => controller.abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    // A followed log ends with its worker, whatever the stream does.
    const gone = this.#waitFor(workerId, (e) => e === undefined);
    void gone.promise.then(abort, () => undefined);
    this.#streams.add(controller);
    try {
      let stream: AsyncIterable<Buffer | string>;
      try {
        stream = await this.#o.api.podLog(this.#o.namespace, name, {
          container: WORKER_CONTAINER,
          follow: options.follow,
          ...(options.tail === undefined ? {} : { tailLines: options.tail }),
          signal: controller.signal,
        });
      } catch (error) {
        if (isApiNotFound(error)) throw await this.#logNotFound(workerId, entry.pod, error);
        // 400: the container has not started yet (or is gone): it has written nothing.
        if ((error as { status?: number }).status === 400) {
          options.onOpen?.();
          return;
        }
        throw kubernetesError(error, `cannot read the log of worker ${workerId}`, this.server);
      }
      options.onOpen?.();
      let rest = '';
      try {
        for await (const chunk of stream) {
          const lines = (rest + chunk.toString()).split('\n');
          rest = lines.pop() ?? '';
          for (const line of lines) yield line.replace(/\r$/, '');
          if (controller.signal.aborted) break;
        }
      } catch (error) {
        if (!controller.signal.aborted) throw kubernetesError(error, 'log stream failed', this.server);
      }
      if (rest !== '') yield rest;
    } finally {
      gone.cancel();
      options.signal?.removeEventListener('abort', abort);
      controller.abort();
      this.#streams.delete(controller);
    }
  }

  /**
   * A 404 from pods/log is the pod's only when the pod is gone: the API server answers 404 too when the pod's node
   * cannot be found to ask its kubelet for the log (`pods "gpu-node-1" not found`, naming the node).
   */
  async #logNotFound(workerId: string, pod: Pod, error: unknown): Promise<RuntimeError> {
    const gone = await this.#o.api.readPod(this.#o.namespace, pod.metadata?.name ?? '').then(
      () => false,
      (e: unknown) => isApiNotFound(e),
    );
    if (gone) return new RuntimeError('NOT_FOUND', `worker ${workerId} does not exist`);
    const node = pod.spec?.nodeName ?? '(none)';
    return kubernetesError(
      error,
      `cannot read the log of worker ${workerId}: its pod's node ${node} did not serve it (no such node, or no kubelet answers)`,
      this.server,
    );
  }

  async stats(workerId: string): Promise<WorkerStats | undefined> {
    await this.#ready();
    const entry = this.#workers.get(workerId);
    if (!entry) return undefined;
    try {
      const metrics = await this.#o.api.podMetrics(this.#o.namespace, entry.pod.metadata?.name ?? '');
      let cores = 0;
      let memory = 0;
      for (const container of metrics.containers) {
        cores += usage(container.usage.cpu);
        memory += usage(container.usage.memory);
      }
      return { cpuPercent: cores * 100, memoryBytes: Math.round(memory) };
    } catch (error) {
      // No metrics for it (yet), or no metrics server in the cluster.
      if (isApiNotFound(error)) return undefined;
      throw kubernetesError(error, `cannot read stats of worker ${workerId}`, this.server);
    }
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    this.#watchers.add(onEvent);
    void this.#ready().catch(() => undefined);
    return () => {
      this.#watchers.delete(onEvent);
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#view.close();
    this.#nodes.close();
    for (const stream of this.#streams) stream.abort();
    this.#streams.clear();
    for (const waiters of this.#waiters.values()) for (const waiter of [...waiters]) waiter(undefined);
    this.#waiters.clear();
    this.#watchers.clear();
  }

  // --- the view ---

  async #ready(): Promise<void> {
    if (this.#closed) throw new RuntimeError('UNAVAILABLE', 'the Kubernetes runtime is closed');
    void this.#watchNodes();
    try {
      await this.#view.pods();
    } catch (error) {
      throw kubernetesError(error, 'cannot list pods', this.server);
    }
  }

  #changed(before: Pod | undefined, after: Pod | undefined): void {
    this.#catalog = undefined;
    const pod = after ?? before;
    const workerId = pod && workerIdOf(pod);
    if (workerId === undefined) return;
    const previous = this.#workers.get(workerId);
    let entry: Entry | undefined;
    if (after) {
      const state = podState(after);
      if (!state) return;
      entry = { pod: after, state };
      this.#workers.set(workerId, entry);
    } else {
      // Only the pod that is the worker's now: a stale delete of an older pod of the same name leaves it be.
      if (previous && previous.pod.metadata?.uid !== before?.metadata?.uid) return;
      this.#workers.delete(workerId);
    }
    this.#emitFor(workerId, previous?.state, entry?.state);
    const waiters = this.#waiters.get(workerId);
    if (waiters) for (const waiter of [...waiters]) waiter(entry);
  }

  #emitFor(workerId: string, before: PodState | undefined, after: PodState | undefined): void {
    const events: RuntimeEvent[] = [];
    if (!after) {
      if (before) events.push({ type: 'removed', workerId });
    } else {
      if (after.stage === 'running' && before?.stage !== 'running')
        events.push({ type: 'started', workerId });
      const exitCode = after.worker.exitCode;
      if (exitCode !== undefined && before?.worker.exitCode === undefined) {
        events.push({ type: 'exited', workerId, exitCode });
      }
    }
    for (const event of events) for (const watcher of [...this.#watchers]) watcher(event);
  }

  /** Resolves with true once `done` holds for the worker's entry, false after `ms` or at close. */
  #waitFor(workerId: string, done: (entry: Entry | undefined) => boolean) {
    let settle: (value: boolean) => void = () => undefined;
    let timer: NodeJS.Timeout | undefined;
    const waiters = this.#waiters.get(workerId) ?? new Set<Waiter>();
    this.#waiters.set(workerId, waiters);
    const cancel = () => {
      waiters.delete(waiter);
      if (waiters.size === 0 && this.#waiters.get(workerId) === waiters) this.#waiters.delete(workerId);
      clearTimeout(timer);
    };
    const waiter: Waiter = (entry) => {
      if (this.#closed) {
        cancel();
        settle(false);
      } else if (done(entry)) {
        cancel();
        settle(true);
      }
    };
    const promise = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    waiters.add(waiter);
    if (done(this.#workers.get(workerId))) waiter(this.#workers.get(workerId));
    return {
      promise,
      cancel,
      within: (ms: number) => {
        timer = setTimeout(() => {
          cancel();
          settle(false);
        }, ms);
        return promise;
      },
    };
  }

  /**
   * Waits until the worker's pod runs (its worker, with the address) or cannot (the kubelet cannot pull the image:
   * IMAGE_PULL_FAILED; cannot create the container: RUNTIME_ERROR). A pod deleted meanwhile gives back the worker as
   * exited, without an address: the controller treats it as removed while starting. While it waits
   * for the scheduler or the kubelet, their words are the progress. A pod that failed is deleted.
   */
  #waitUntilStarted(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void) {
    let lastMessage = '';
    let last: Entry | undefined;
    let outcome: Entry | undefined;
    const wait = this.#waitFor(spec.workerId, (entry) => {
      if (!entry) return last !== undefined;
      last = entry;
      const { stage } = entry.state;
      if (stage === 'unscheduled' || stage === 'creating') {
        const { message, phase } = entry.state.worker;
        if (`${phase} ${message}` !== lastMessage) {
          lastMessage = `${phase} ${message}`;
          onProgress?.({ message, ...(isWaitingPhase(phase) ? { phase } : {}) });
        }
        return false;
      }
      outcome = entry;
      return true;
    });
    const promise = wait.promise.then(async (settled): Promise<RuntimeWorker> => {
      if (!settled)
        throw new RuntimeError('UNAVAILABLE', 'the Kubernetes runtime was closed during a create');
      if (!outcome) {
        // Deleted while it waited (removed by Corral, say a scale-down of a worker the scheduler could not place):
        // no failure of the endpoint's, the worker is gone; the controller removes what it has not removed itself.
        this.#logger.info({ workerId: spec.workerId }, 'the pod was deleted while starting');
        return {
          ...(last?.state.worker as RuntimeWorker),
          phase: 'exited',
          message: 'the pod was deleted while starting',
        };
      }
      const { stage, worker } = outcome.state;
      if (stage === 'image-pull-failed' || stage === 'create-failed') {
        await this.#discard(outcome.pod);
        const code = stage === 'image-pull-failed' ? 'IMAGE_PULL_FAILED' : 'RUNTIME_ERROR';
        throw new RuntimeError(
          code,
          `cannot start worker ${spec.workerId} (image ${spec.image}): ${worker.message}`,
        );
      }
      this.#logger.info({ workerId: spec.workerId, address: worker.address }, 'worker started');
      return { ...worker };
    });
    return { promise, cancel: wait.cancel };
  }

  /** Deletes a pod that could not start, at once, and waits until it is gone (nothing is left behind). */
  async #discard(pod: Pod): Promise<void> {
    const workerId = workerIdOf(pod) ?? '';
    const gone = this.#waitFor(workerId, (e) => e === undefined);
    try {
      await this.#o.api.deletePod(this.#o.namespace, pod.metadata?.name ?? '', 0);
      await gone.within(this.#o.removeMarginMs ?? 15_000);
    } catch (error) {
      gone.cancel();
      if (!isApiNotFound(error))
        this.#logger.warn({ workerId, err: error }, 'cannot delete a pod that failed');
    }
    await this.#pruneSecrets().catch(() => undefined);
  }

  /** Network volumes need their claims: a missing one fails the create before a pod waits for it forever. */
  async #checkClaims(spec: WorkerSpec): Promise<void> {
    for (const volume of spec.volumes) {
      if (volume.type !== 'network') continue;
      const claim = this.#podOptions.networkClaims[volume.hostPath];
      if (claim === undefined) continue; // podSpec says so
      try {
        await this.#o.api.readPersistentVolumeClaim(this.#o.namespace, claim);
      } catch (error) {
        if (isApiNotFound(error)) {
          throw new RuntimeError(
            'RUNTIME_ERROR',
            `PersistentVolumeClaim ${claim} (storage ${volume.hostPath}) does not exist in namespace ${this.#o.namespace}`,
          );
        }
        throw error;
      }
    }
  }

  /** Deletes the pull Secrets no pod of this installation refers to; a failure is logged (tried at the next). */
  async #pruneSecrets(): Promise<void> {
    const inUse = new Set<string>();
    for (const { pod } of this.#workers.values()) {
      for (const ref of pod.spec?.imagePullSecrets ?? []) inUse.add(ref.name);
    }
    await this.#secrets.prune(inUse).catch((error: unknown) => {
      this.#logger.warn({ err: (error as Error).message }, 'cannot prune pull Secrets');
    });
  }
}
