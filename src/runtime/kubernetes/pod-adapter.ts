/**
 * The Kubernetes runtime's pod adapter: one Pod per worker in Corral's namespace, placed by the scheduler. State
 * comes from one watch over this installation's pods (pod-view.ts), so list and inspect make no API call while it
 * is up; pods are built by pod-spec.ts and read by pod-state.ts. A create waits, through the watch (pod-waits.ts),
 * until the pod runs (its address is the pod IP and the app port) or the kubelet cannot start it; a pod deleted
 * behind Corral's back is a removed worker; pods of another installation are never seen, so never touched. Logs are
 * pod-logs.ts's, pull Secrets pull-secrets.ts's, env Secrets worker-env-secrets.ts's, the network volumes' claims
 * network-claims.ts's. The node/GPU side is node-catalog.ts; kubernetes-runtime.ts joins both into one WorkerRuntime.
 */
import type { Logger } from 'pino';
import type { Timers } from '../../ports/clock.js';
import {
  isWaitingPhase,
  LABELS,
  type LogOptions,
  type PullProgress,
  RuntimeError,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerSpec,
  type WorkerStats,
} from '../types.js';
import { type KubernetesApi, labelSelector } from './api.js';
import { isApiNotFound, kubernetesError } from './api-errors.js';
import { CallLimit } from './call-limit.js';
import { checkNetworkClaims } from './network-claims.js';
import type { Pod } from './objects.js';
import { PodLogs } from './pod-logs.js';
import {
  POD_LABELS,
  type PodOptions,
  type PodPlacement,
  type ProductNodeLabel,
  podSpec,
  workerEnvSecret,
} from './pod-spec.js';
import { type PodState, podState } from './pod-state.js';
import { PodView } from './pod-view.js';
import { PodWaits } from './pod-waits.js';
import { PullSecrets } from './pull-secrets.js';
import { parseQuantity } from './quantity.js';
import { WorkerEnvSecrets } from './worker-env-secrets.js';

/** How pods are made: GPU resource name, products' node labels, memory per GPU, claims, sandbox, grace. */
export type PodAdapterPodOptions = Partial<
  Omit<PodOptions, 'namespace' | 'namePrefix' | 'installationLabels'>
>;

export interface PodAdapterOptions {
  api: KubernetesApi;
  namespace: string;
  /** The installation's id: its pods carry it, and only its pods are watched, adopted and removed. */
  installationId?: string;
  /** Pod and Secret names start with this; default `corral-`. */
  namePrefix?: string;
  pods?: PodAdapterPodOptions;
  /** Every product's node label at a create (node-catalog.ts); default the configured ones (`pods.products`). */
  productSelectors?: () => Readonly<Record<string, ProductNodeLabel>>;
  /** Called at every change of one of this installation's pods (node-catalog.ts recounts the GPUs they hold). */
  onPodsChanged?: () => void;
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

export class PodAdapter {
  readonly #o: PodAdapterOptions;
  readonly #logger: Logger;
  readonly #podOptions: PodOptions;
  readonly #view: PodView;
  readonly #secrets: PullSecrets;
  readonly #envSecrets: WorkerEnvSecrets;
  #envPruned: Promise<void> | undefined;
  readonly #logs: PodLogs;
  /** Pod creates and deletes: a burst of thousands is paced, not thrown at the API server at once. */
  readonly #writes: CallLimit;
  /** workerId -> its pod and what it reads as. */
  readonly #workers = new Map<string, Entry>();
  /** Endpoint id -> its workers' ids, so that one endpoint's listing does not match every pod. */
  readonly #byEndpoint = new Map<string, Set<string>>();
  readonly #waits: PodWaits<Entry>;
  readonly #watchers = new Set<(event: RuntimeEvent) => void>();
  #closed = false;

  constructor(options: PodAdapterOptions) {
    this.#o = options;
    this.#writes = new CallLimit(options.maxWritesInFlight ?? 64);
    this.#logger = options.logger;
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
    this.#waits = new PodWaits<Entry>({
      current: (workerId) => this.#workers.get(workerId),
      ...(options.timers ? { timers: options.timers } : {}),
    });
    this.#logs = new PodLogs({ api: options.api, namespace: options.namespace });
    this.#secrets = new PullSecrets({
      api: options.api,
      podOptions: this.#podOptions,
      labelSelector: `${labelSelector(own)},${POD_LABELS.credential}`,
      logger: this.#logger,
    });
    this.#envSecrets = new WorkerEnvSecrets({
      api: options.api,
      namespace: options.namespace,
      labelSelector: `${labelSelector(own)},${POD_LABELS.workerEnv}=true`,
      logger: this.#logger,
    });
  }

  /** Where the API server is, for messages. */
  get server(): string {
    return this.#o.api.server;
  }

  /** The namespace's pull Secrets of this installation: pre-pull pods (image-prepull.ts) pull with them too. */
  get pullSecrets(): PullSecrets {
    return this.#secrets;
  }

  /** The watch's counters (lists, watches opened, relists after 410 Gone, reconnects). */
  get watchStats(): PodView['stats'] {
    return this.#view.stats;
  }

  /** Lists and starts the watch, once; throws (RuntimeError) when the API server cannot be used for pods. */
  async ready(): Promise<void> {
    if (this.#closed) throw new RuntimeError('UNAVAILABLE', 'the Kubernetes runtime is closed');
    try {
      await this.#view.pods();
    } catch (error) {
      throw kubernetesError(error, 'cannot list pods', this.server);
    }
    // Once, before any create makes a Secret: env Secrets whose pod went while Corral was not watching.
    this.#envPruned ??= this.#envSecrets
      .prune(new Set(this.currentPods().map((pod) => pod.metadata?.name ?? '')))
      .catch((error: unknown) => {
        this.#logger.warn({ err: (error as Error).message }, 'cannot prune worker env Secrets');
      });
    await this.#envPruned;
  }

  async create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    await this.ready();
    if (this.#workers.has(spec.workerId)) {
      throw new RuntimeError('RUNTIME_ERROR', `worker ${spec.workerId} already exists`);
    }
    const placement: PodPlacement = {
      product: spec.placement?.product ?? '',
      gpuNum: spec.placement?.gpuNum ?? spec.gpus.length,
      authId: spec.placement?.authId ?? '',
      ...(spec.placement?.pullPolicy === undefined ? {} : { pullPolicy: spec.placement.pullPolicy }),
      ...(spec.placement?.latestTag === undefined ? {} : { latestTag: spec.placement.latestTag }),
    };
    let secret: string | undefined;
    try {
      if (placement.authId) {
        secret = await this.#secrets.acquire(placement.authId, spec.ownerId, spec.registryAuth);
      }
      await checkNetworkClaims(this.#o.api, this.#o.namespace, this.#podOptions.networkClaims, spec.volumes);
      // A product the nodes show without configuration selects the GPU model's label value.
      const podOptions = {
        ...this.#podOptions,
        products: this.#o.productSelectors?.() ?? this.#podOptions.products,
      };
      const podPlacement = secret === undefined ? { ...placement, authId: '' } : placement;
      // The env's values go in a Secret the pod reads at its start, made first: the pod's spec names only its keys,
      // and the Secret as the pod's controller (a node drains it without --force).
      const envSecret = workerEnvSecret(spec, podPlacement, podOptions);
      const envSecretUid = await this.#envSecrets.create(envSecret);
      const pod = podSpec(spec, podPlacement, podOptions, envSecretUid);
      const waiting = this.#waitUntilStarted(spec, onProgress);
      // Awaited once the pod is made; a close meanwhile must not reject it unobserved.
      waiting.promise.catch(() => undefined);
      try {
        await this.#writes.run(() => this.#o.api.createPod(this.#o.namespace, pod));
      } catch (error) {
        waiting.cancel();
        this.#envSecrets.forget(envSecret.metadata.name);
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
    await this.ready().catch((error: unknown) => {
      throw kubernetesError(error, `cannot remove worker ${workerId}`, this.server);
    });
    const entry = this.#workers.get(workerId);
    if (!entry) return;
    const name = entry.pod.metadata?.name ?? '';
    const grace = options?.graceSeconds ?? this.#podOptions.terminationGraceSeconds;
    const gone = this.#waits.waitFor(workerId, (e) => e === undefined);
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
    this.#logger.debug({ workerId, pod: name }, 'pod removed');
    await this.#secrets.prune(this.currentPods());
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    await this.ready();
    const wanted = Object.entries(selector);
    const found: RuntimeWorker[] = [];
    const endpointId = selector[LABELS.endpoint];
    if (endpointId !== undefined) {
      // One endpoint's workers (the controller's reconcile of that endpoint), from the index.
      for (const workerId of this.#byEndpoint.get(endpointId) ?? []) {
        const state = this.#workers.get(workerId)?.state;
        if (state && matches(state.worker.labels, wanted)) found.push({ ...state.worker });
      }
      return found;
    }
    for (const { state } of this.#workers.values()) {
      if (matches(state.worker.labels, wanted)) found.push({ ...state.worker });
    }
    return found;
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    await this.ready();
    const entry = this.#workers.get(workerId);
    return entry ? { ...entry.state.worker } : undefined;
  }

  /** The pod a worker runs in, as the watch last saw it (for tests and the products report). */
  pod(workerId: string): Pod | undefined {
    return this.#workers.get(workerId)?.pod;
  }

  /** Every pod of this installation, as the watch sees it. */
  async pods(): Promise<Pod[]> {
    await this.ready();
    return this.currentPods();
  }

  /** Every pod of this installation as the watch last saw it, without waiting for it (node-catalog.ts counts them). */
  currentPods(): Pod[] {
    return [...this.#workers.values()].map((e) => e.pod);
  }

  async *logs(workerId: string, options: LogOptions): AsyncGenerator<string> {
    await this.ready();
    const entry = this.#workers.get(workerId);
    if (!entry) throw new RuntimeError('NOT_FOUND', `worker ${workerId} does not exist`);
    if (options.signal?.aborted) return;
    if (options.tail === 0) {
      options.onOpen?.();
      return;
    }
    yield* this.#logs.read(
      workerId,
      entry.pod,
      options,
      this.#waits.waitFor(workerId, (e) => e === undefined),
    );
  }

  async stats(workerId: string): Promise<WorkerStats | undefined> {
    await this.ready();
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
    void this.ready().catch(() => undefined);
    return () => {
      this.#watchers.delete(onEvent);
    };
  }

  close(): void {
    this.#closed = true;
    this.#view.close();
    this.#logs.close();
    this.#waits.close();
    this.#watchers.clear();
  }

  // --- the view ---

  #index(workerId: string, before: string | undefined, after: string | undefined): void {
    if (before === after) return;
    if (before !== undefined) {
      const ids = this.#byEndpoint.get(before);
      ids?.delete(workerId);
      if (ids?.size === 0) this.#byEndpoint.delete(before);
    }
    if (after === undefined) return;
    let ids = this.#byEndpoint.get(after);
    if (!ids) {
      ids = new Set();
      this.#byEndpoint.set(after, ids);
    }
    ids.add(workerId);
  }

  #changed(before: Pod | undefined, after: Pod | undefined): void {
    this.#o.onPodsChanged?.();
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
      this.#index(workerId, previous?.state.worker.endpointId, state.worker.endpointId);
    } else {
      // Only the pod that is the worker's now: a stale delete of an older pod of the same name leaves it be.
      if (previous && previous.pod.metadata?.uid !== before?.metadata?.uid) return;
      this.#workers.delete(workerId);
      // Its env Secret goes with it, whoever deleted it (Corral, a drain's eviction, kubectl).
      if (before?.metadata?.name) this.#envSecrets.forget(before.metadata.name);
      this.#index(workerId, previous?.state.worker.endpointId, undefined);
    }
    this.#emitFor(workerId, previous?.state, entry?.state);
    this.#waits.changed(workerId, entry);
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
    const wait = this.#waits.waitFor(spec.workerId, (entry) => {
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
      // The controller says each start with its endpoint's name (worker-log.ts); this is the cluster's detail.
      this.#logger.debug({ workerId: spec.workerId, address: worker.address }, 'pod started');
      return { ...worker };
    });
    return { promise, cancel: wait.cancel };
  }

  /** Deletes a pod that could not start, at once, and waits until it is gone (nothing is left behind). */
  async #discard(pod: Pod): Promise<void> {
    const workerId = workerIdOf(pod) ?? '';
    const gone = this.#waits.waitFor(workerId, (e) => e === undefined);
    try {
      await this.#o.api.deletePod(this.#o.namespace, pod.metadata?.name ?? '', 0);
      await gone.within(this.#o.removeMarginMs ?? 15_000);
    } catch (error) {
      gone.cancel();
      if (!isApiNotFound(error))
        this.#logger.warn({ workerId, err: error }, 'cannot delete a pod that failed');
    }
    await this.#secrets.prune(this.currentPods());
  }
}
