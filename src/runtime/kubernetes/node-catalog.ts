/**
 * The Kubernetes runtime's node/GPU catalogue: the cluster's nodes, from a watch of their own (object-view.ts), and
 * the products they make (cluster-products.ts, pure): each product's nodes' GPU model and allocatable GPUs less what
 * Corral's pods request. The pods are the pod adapter's (pod-adapter.ts), read without an API call; the catalogue is
 * recomputed when asked after a node or a pod changed. It is the GpuScheduler side of KubernetesRuntime; the node
 * label each product's pods select comes from it too.
 */
import type { Logger } from 'pino';
import type { Timers } from '../../ports/clock.js';
import type { KubernetesApi, Node } from './api.js';
import { kubernetesError } from './api-errors.js';
import { type ClusterCatalog, clusterCatalog, type ProductCapacity } from './cluster-products.js';
import { type ModelNode, modelNodes } from './node-models.js';
import { ObjectView } from './object-view.js';
import type { Pod } from './objects.js';
import type { ProductNodeLabel } from './pod-spec.js';

export interface NodeCatalogOptions {
  api: Pick<KubernetesApi, 'listNodes' | 'watchNodes' | 'server'>;
  logger: Logger;
  /** The configured products' ids, in order; default none. */
  configured?: readonly string[];
  /** The configured products' node labels (absent: `nvidia.com/gpu.product={id}`). */
  products?: Readonly<Record<string, ProductNodeLabel>>;
  /** The GPU resource nodes offer and pods request; default `nvidia.com/gpu`. */
  gpuResource?: string;
  /** Corral's pods as the pod adapter's watch sees them now: what they request counts against their nodes. */
  pods: () => Pod[];
  timers?: Timers;
  /** Watch reconnect backoff; default 200 ms doubling up to 5 s. */
  watchBackoff?: { initialMs: number; maxMs: number };
}

export class NodeCatalog {
  readonly #o: NodeCatalogOptions;
  readonly #nodes: ObjectView<Node>;
  /** The products as of the last change of a node or a pod; recomputed when asked after one. */
  #catalog: ClusterCatalog | undefined;
  /** The products' node labels, configured and found on the nodes: they change with the nodes only. */
  #selectors: ClusterCatalog['selectors'] | undefined;
  #started: Promise<void> | undefined;
  #closed = false;

  constructor(options: NodeCatalogOptions) {
    this.#o = options;
    const { api } = options;
    this.#nodes = new ObjectView<Node>({
      kind: 'node',
      logger: options.logger,
      ...(options.timers ? { timers: options.timers } : {}),
      ...(options.watchBackoff ? { backoff: options.watchBackoff } : {}),
      source: {
        list: () => api.listNodes(),
        watch: (o, onEvent, onEnd) => api.watchNodes(o, onEvent, onEnd),
      },
      onChange: () => {
        this.#catalog = undefined;
        this.#selectors = undefined;
      },
    });
  }

  /**
   * The node view's first list and watch, once (the view retries by itself after a failure). Nodes that cannot be
   * listed (no permission, say) are said in the log, not thrown: the products are empty meanwhile. None after close.
   */
  start(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#started ??= this.#nodes.sync().catch((error: unknown) => {
      this.#o.logger.warn(
        { err: kubernetesError(error, 'cannot list nodes', this.#o.api.server).message },
        'cannot read the cluster nodes: no GPU products until they can be listed',
      );
    });
    return this.#started;
  }

  /** The products and their capacity, from the nodes and Corral's pods as the watches last saw them. */
  products(): ProductCapacity[] {
    this.#catalog ??= clusterCatalog([...this.#nodes.current().values()], this.#o.pods(), this.#options());
    return this.#catalog.products;
  }

  /** Every product's node label: configured ones, and those of the GPU models the nodes show (recomputed after a node changed). */
  selectors(): ClusterCatalog['selectors'] {
    this.#selectors ??= {
      ...clusterCatalog([...this.#nodes.current().values()], [], this.#options()).selectors,
      ...this.#o.products,
    };
    return this.#selectors;
  }

  /** The cluster's nodes as the watch last saw them (image-prepull.ts picks the nodes to pull onto). */
  nodes(): Node[] {
    return [...this.#nodes.current().values()];
  }

  /** The GPU nodes with their addresses, as the watch last saw them: where the node agents fill the model caches. */
  modelNodes(): ModelNode[] {
    return modelNodes([...this.#nodes.current().values()], this.#o.gpuResource);
  }

  /** A pod of Corral's appeared, changed or went: the capacity is recomputed at the next ask. */
  podsChanged(): void {
    this.#catalog = undefined;
  }

  /** The node view's counters (lists, watches opened, relists after 410 Gone, reconnects). */
  get stats(): ObjectView<Node>['stats'] {
    return this.#nodes.stats;
  }

  close(): void {
    this.#closed = true;
    this.#nodes.close();
  }

  #options(): Parameters<typeof clusterCatalog>[2] {
    return {
      configured: this.#o.configured ?? [],
      ...(this.#o.products ? { products: this.#o.products } : {}),
      ...(this.#o.gpuResource === undefined ? {} : { gpuResource: this.#o.gpuResource }),
    };
  }
}
