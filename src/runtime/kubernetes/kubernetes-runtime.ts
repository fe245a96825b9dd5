/**
 * WorkerRuntime on a Kubernetes cluster, built from its two parts: the pod adapter (pod-adapter.ts: one Pod per
 * worker, created, removed, listed, watched, its log and stats) and the node/GPU catalogue (node-catalog.ts: the
 * cluster's nodes from a watch of their own, and the products they make). The runtime's scheduler places GPUs
 * (`gpuScheduler`): its products are the nodes' GPU models and allocatable GPUs less what Corral's pods hold, read
 * without an API call; a create selects its product's node label from the same catalogue. With the node agent
 * configured (`nodeAgent`), idle workers are frozen in place through the agent on their pod's node
 * (node-agent-tiers.ts), their pods and GPUs kept; after a restart the agents say which adopted pods they hold. An
 * endpoint's image is pulled onto the nodes its workers could run on before any worker needs it (image-prepull.ts).
 * With the agents' model caches configured (`nodeAgent.models`), the agents fill the GPU nodes' caches
 * (node-model-cache.ts, the runtime's `modelCache`) and the pods require a node labelled as holding their models.
 */
import type { Logger } from 'pino';
import type { Timers } from '../../ports/clock.js';
import type { IdleTiers } from '../idle-tiers.js';
import {
  type ImageRequest,
  LABELS,
  type LogOptions,
  type PullProgress,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
} from '../types.js';
import type { KubernetesApi, Node } from './api.js';
import type { ProductCapacity } from './cluster-products.js';
import { ImagePrepull } from './image-prepull.js';
import { type NodeAgentSettings, NodeAgentTiers } from './node-agent-tiers.js';
import { NodeCatalog } from './node-catalog.js';
import { NodeModelCache } from './node-model-cache.js';
import type { ObjectView } from './object-view.js';
import type { Pod } from './objects.js';
import { PodAdapter, type PodAdapterPodOptions } from './pod-adapter.js';
import type { PodView } from './pod-view.js';
import { prepullNodes } from './prepull-pods.js';

export interface KubernetesRuntimeOptions {
  api: KubernetesApi;
  namespace: string;
  /** The installation's id: its pods carry it, and only its pods are watched, adopted and removed. */
  installationId?: string;
  /** Pod and Secret names start with this; default `corral-`. */
  namePrefix?: string;
  /** How pods are made: GPU resource name, products' node labels, memory per GPU, claims, sandbox, grace. */
  pods?: PodAdapterPodOptions;
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
  /** The node agents (`corral node`) that freeze idle pods; without them there are no idle tiers. */
  nodeAgent?: NodeAgentSettings;
  /** The models endpoints name, sent to the node agents (their disk budgets never evict them); default none. */
  namedModels?: () => Promise<ReadonlySet<string>>;
  /** How long an image pre-pull waits for its nodes (image-prepull.ts); default 15 minutes. */
  prepullDeadlineMs?: number;
  /** What time it is (epoch ms), for the age of pre-pull pods left behind; default Date.now. */
  clock?: () => number;
}

export class KubernetesRuntime implements WorkerRuntime {
  readonly name = 'kubernetes' as const;
  /** The kubelet pulls at the pod's start on its node, sharing the pre-pull under way there (prepareImage). */
  readonly createPullsWhereItRuns = true;
  readonly #pods: PodAdapter;
  readonly #nodes: NodeCatalog;
  readonly #tiers: NodeAgentTiers | undefined;
  readonly #prepull: ImagePrepull;
  readonly #gpuResource: string | undefined;
  /** The GPU nodes' model caches, filled by their agents; absent without `nodeAgent.models`. */
  readonly #models: NodeModelCache | undefined;
  /** The adopted pods' tiers, asked of the node agents once after the first listing (adoptTiers). */
  #tiersAdopted: Promise<void> | undefined;
  #closed = false;

  constructor(options: KubernetesRuntimeOptions) {
    const logger = options.logger.child({ runtime: 'kubernetes' });
    const shared = {
      logger,
      ...(options.timers ? { timers: options.timers } : {}),
      ...(options.watchBackoff ? { watchBackoff: options.watchBackoff } : {}),
    };
    const { products } = options;
    const agentModels = options.nodeAgent?.models;
    // The pods mount the nodes' cache, and only on nodes whose agent has filled it with their models.
    const pods = agentModels
      ? { ...options.pods, nodeModelCacheDir: agentModels.hubDir, modelNodesRequired: true }
      : options.pods;
    this.#nodes = new NodeCatalog({
      ...shared,
      api: options.api,
      configured: products ?? [],
      ...(pods?.products ? { products: pods.products } : {}),
      ...(pods?.gpuResource === undefined ? {} : { gpuResource: pods.gpuResource }),
      pods: () => this.#pods.currentPods(),
    });
    this.#pods = new PodAdapter({
      ...shared,
      api: options.api,
      namespace: options.namespace,
      ...(options.installationId === undefined ? {} : { installationId: options.installationId }),
      ...(options.namePrefix === undefined ? {} : { namePrefix: options.namePrefix }),
      ...(pods ? { pods } : {}),
      ...(options.removeMarginMs === undefined ? {} : { removeMarginMs: options.removeMarginMs }),
      ...(options.maxWritesInFlight === undefined ? {} : { maxWritesInFlight: options.maxWritesInFlight }),
      productSelectors: () => this.#nodes.selectors(),
      onPodsChanged: () => this.#nodes.podsChanged(),
    });
    this.#gpuResource = pods?.gpuResource;
    this.#prepull = new ImagePrepull({
      ...shared,
      api: options.api,
      podOptions: {
        namespace: options.namespace,
        namePrefix: options.namePrefix ?? 'corral-',
        installationLabels:
          options.installationId === undefined ? {} : { [LABELS.installation]: options.installationId },
        ...(pods?.gpuResource === undefined ? {} : { gpuResource: pods.gpuResource }),
        ...(pods?.imagePullPolicy === undefined ? {} : { imagePullPolicy: pods.imagePullPolicy }),
      },
      secrets: this.#pods.pullSecrets,
      workerPods: () => this.#pods.currentPods(),
      nodeUid: (name) => this.#nodes.nodes().find((node) => node.metadata?.name === name)?.metadata?.uid,
      ...(options.prepullDeadlineMs === undefined ? {} : { deadlineMs: options.prepullDeadlineMs }),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    this.#tiers = options.nodeAgent
      ? new NodeAgentTiers({ ...options.nodeAgent, podOf: (id) => this.#pods.pod(id), logger })
      : undefined;
    const agent = options.nodeAgent;
    this.#models =
      agent && agentModels
        ? new NodeModelCache({
            ...agentModels,
            port: agent.port,
            token: agent.token,
            nodes: async () => {
              await this.#nodes.start();
              return this.#nodes.modelNodes();
            },
            nodesNow: () => this.#nodes.modelNodes(),
            labelNode: (name, labels) => options.api.patchNodeLabels(name, labels),
            namedModels: options.namedModels ?? (async () => new Set()),
            logger,
          })
        : undefined;
  }

  /** The GPU nodes' model caches, filled by their node agents; absent where none is configured. */
  get modelCache(): NodeModelCache | undefined {
    return this.#models;
  }

  /** Freezing (and, where turned on, suspending) through the node agents; absent where none is configured. */
  get idleTiers(): IdleTiers | undefined {
    return this.#tiers;
  }

  /** Where the API server is, for messages. */
  get server(): string {
    return this.#pods.server;
  }

  /** The pod watch's counters (lists, watches opened, relists after 410 Gone, reconnects). */
  get watchStats(): PodView['stats'] {
    return this.#pods.watchStats;
  }

  /** The node watch's counters (lists, watches opened, relists after 410 Gone, reconnects). */
  get nodeWatchStats(): ObjectView<Node>['stats'] {
    return this.#nodes.stats;
  }

  /** The scheduler places workers on the cluster's GPUs; the products are its nodes' (node-catalog.ts). */
  readonly gpuScheduler: { products(): ProductCapacity[] } = {
    products: () => this.#nodes.products(),
  };

  /**
   * Lists and starts the watches; throws (RuntimeError) when the API server cannot be used for pods. Nodes that
   * cannot be listed (no permission, say) are said in the log and tried again: the products are empty meanwhile.
   */
  async start(): Promise<void> {
    await this.#ready();
    await this.#nodes.start();
  }

  /**
   * Pulls the image onto every node a worker of the endpoint could run on (its products' nodes; none named: every
   * GPU node), with one short-lived pod per node (image-prepull.ts); a cluster without such a node: at once. An API
   * server that cannot be reached fails as every call does.
   */
  async prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void> {
    await this.#ready();
    await this.#nodes.start();
    const nodes = prepullNodes(this.#nodes.nodes(), request.endpoint?.productIds ?? [], {
      selectors: this.#nodes.selectors(),
      ...(this.#gpuResource === undefined ? {} : { gpuResource: this.#gpuResource }),
    });
    await this.#prepull.prepare(request, nodes, onProgress);
  }

  async create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    this.#startNodes();
    // The pod requires a node labelled as holding its models: first, that those labels are still true.
    await this.#models?.confirmHeld(spec.volumes.flatMap((v) => (v.type === 'model' ? [v.name] : [])));
    return this.#pods.create(spec, onProgress);
  }

  async remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    this.#startNodes();
    await this.#pods.remove(workerId, options);
    this.#tiers?.forget(workerId);
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    this.#startNodes();
    await this.#adoptTiers();
    return (await this.#pods.list(selector)).map((worker) => this.#withTier(worker));
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    this.#startNodes();
    await this.#adoptTiers();
    const worker = await this.#pods.inspect(workerId);
    return worker && this.#withTier(worker);
  }

  /** The pod a worker runs in, as the watch last saw it (for tests and the products report). */
  pod(workerId: string): Pod | undefined {
    return this.#pods.pod(workerId);
  }

  /** Every pod of this installation, as the watch sees it. */
  pods(): Promise<Pod[]> {
    this.#startNodes();
    return this.#pods.pods();
  }

  logs(workerId: string, options: LogOptions): AsyncGenerator<string> {
    this.#startNodes();
    return this.#pods.logs(workerId, options);
  }

  stats(workerId: string): Promise<WorkerStats | undefined> {
    this.#startNodes();
    return this.#pods.stats(workerId);
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    this.#startNodes();
    return this.#pods.watch(onEvent);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#prepull.close();
    this.#pods.close();
    this.#nodes.close();
  }

  /** The tier the node agent moved the worker's pod to, if any. */
  #withTier(worker: RuntimeWorker): RuntimeWorker {
    const tier = this.#tiers?.tierOf(worker.workerId);
    return tier === undefined ? worker : { ...worker, tier };
  }

  async #ready(): Promise<void> {
    this.#startNodes();
    await this.#pods.ready();
    await this.#adoptTiers();
  }

  /**
   * Once, after the first listing: the node agents are asked which of the running pods they hold frozen or
   * suspended (a Corral killed while they were), so that the first list shows them in their tier. A listing that
   * fails is tried again at the next use.
   */
  #adoptTiers(): Promise<void> {
    const tiers = this.#tiers;
    if (!tiers) return Promise.resolve();
    this.#tiersAdopted ??= this.#pods
      .ready()
      .then(async () => {
        const running = (await this.#pods.list({})).filter((w) => w.phase === 'running');
        const workers = running.flatMap((w) => {
          const pod = this.#pods.pod(w.workerId);
          return pod ? [{ workerId: w.workerId, pod }] : [];
        });
        await tiers.adopt(workers);
      })
      .catch((error: unknown) => {
        this.#tiersAdopted = undefined;
        throw error;
      });
    return this.#tiersAdopted;
  }

  /** Every use starts the node watch, once, until the runtime is closed (a failure is logged, not thrown). */
  #startNodes(): void {
    if (!this.#closed) void this.#nodes.start();
  }
}
