/**
 * Image pre-pull on Kubernetes nodes (KubernetesRuntime.prepareImage): one short-lived pod per node that could run
 * the endpoint's workers, bound to it, pulling as the workers' pods pull (their pull policy, their pull Secret), its
 * verdict read from its container's status through one watch of this installation's pre-pull pods; every pod
 * deleted afterwards whatever the outcome, and those a stopped Corral left behind swept at the next pre-pull. What
 * the pods are and what their statuses mean: prepull-pods.ts (pure).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { systemTimers, type Timers } from '../../ports/clock.js';
import { type ImageRequest, LABELS, type PullProgress, RuntimeError } from '../types.js';
import { type KubernetesApi, labelSelector } from './api.js';
import { isApiNotFound, kubernetesError } from './api-errors.js';
import type { Pod } from './objects.js';
import { imagePullPolicy, type PodOptions, podLabels } from './pod-spec.js';
import { PodView } from './pod-view.js';
import {
  PREPULL_LABEL,
  type PrepullOutcome,
  type PrepullVerdict,
  prepullOutcome,
  prepullPod,
  prepullVerdict,
  stalePrepullPods,
} from './prepull-pods.js';
import type { PullSecrets } from './pull-secrets.js';

/** How long a pre-pull waits for its nodes by default: a large image on a slow registry takes minutes. */
export const DEFAULT_PREPULL_DEADLINE_MS = 15 * 60_000;

export interface ImagePrepullOptions {
  api: KubernetesApi;
  podOptions: Pick<
    PodOptions,
    'namespace' | 'namePrefix' | 'installationLabels' | 'gpuResource' | 'imagePullPolicy'
  >;
  /** The pod adapter's pull Secrets: held while the pods pull, pruned after. */
  secrets: PullSecrets;
  /** The installation's worker pods now (the pull Secrets' prune keeps those they name). */
  workerPods: () => Pod[];
  /** A node's uid as the catalogue last saw it (the pre-pull pod's controller), if it knows the node. */
  nodeUid?: (node: string) => string | undefined;
  /** Past it the nodes still pulling count as not reached; default DEFAULT_PREPULL_DEADLINE_MS. */
  deadlineMs?: number;
  logger: Logger;
  timers?: Timers;
  clock?: () => number;
  watchBackoff?: { initialMs: number; maxMs: number };
}

/** One pre-pull under way: told each change of its pods; `stop` ends it (at close). */
interface Run {
  changed(name: string, pod: Pod | undefined): void;
  stop(error: RuntimeError): void;
}

export class ImagePrepull {
  readonly #o: ImagePrepullOptions;
  readonly #timers: Timers;
  /** This installation's pre-pull pods, watched from the first pre-pull on. */
  #view: PodView | undefined;
  /** Pre-pull id -> the run waiting for its pods. */
  readonly #runs = new Map<string, Run>();
  #closed = false;

  constructor(options: ImagePrepullOptions) {
    this.#o = options;
    this.#timers = options.timers ?? systemTimers;
  }

  /**
   * Pulls the image onto `nodes` (none: resolves at once), telling `onProgress` the nodes done of the nodes.
   * Resolves once every node said (or at the deadline) with the image on one node at least; throws RuntimeError
   * IMAGE_PULL_FAILED with the kubelet's words when no node could pull it, RUNTIME_ERROR when none ran its pod in
   * time, UNAVAILABLE when the API server cannot be reached or the runtime closes meanwhile.
   */
  async prepare(
    request: ImageRequest,
    nodes: readonly string[],
    onProgress?: (progress: PullProgress) => void,
  ): Promise<void> {
    if (nodes.length === 0) return;
    const { api, podOptions, logger } = this.#o;
    const { image, endpoint } = request;
    const deadlineMs = this.#o.deadlineMs ?? DEFAULT_PREPULL_DEADLINE_MS;
    const deadlineSeconds = Math.max(1, Math.ceil(deadlineMs / 1000));
    const view = this.#started();
    await view.objects().catch((error: unknown) => {
      throw kubernetesError(error, 'cannot list pre-pull pods', api.server);
    });
    await this.#sweep(view, deadlineSeconds);

    const runId = randomBytes(4).toString('hex');
    const clock = this.#o.clock ?? Date.now;
    const started = clock();
    const authId = endpoint?.authId ?? '';
    const secret =
      authId === ''
        ? undefined
        : await this.#o.secrets
            .acquire(authId, endpoint?.ownerId ?? '', request.registryAuth)
            .catch((error) => {
              throw kubernetesError(
                error,
                `cannot make the pull Secret to pre-pull image ${image}`,
                api.server,
              );
            });
    const pullPolicy = imagePullPolicy(
      {
        ...(endpoint?.pullPolicy === undefined ? {} : { pullPolicy: endpoint.pullPolicy }),
        ...(endpoint?.latestTag === undefined ? {} : { latestTag: endpoint.latestTag }),
      },
      podOptions,
    );
    const pods = nodes.map((node) => {
      const nodeUid = this.#o.nodeUid?.(node);
      return prepullPod(
        {
          image,
          node,
          runId,
          pullPolicy,
          deadlineSeconds,
          ...(secret === undefined ? {} : { pullSecret: secret }),
          ...(nodeUid === undefined ? {} : { nodeUid }),
        },
        podOptions,
      );
    });
    const nodeOf = new Map(pods.map((pod) => [pod.metadata.name, pod.spec.nodeName ?? '']));
    const verdicts = new Map<string, PrepullVerdict>(nodes.map((node) => [node, { kind: 'pending' }]));
    let creating: Promise<unknown> = Promise.resolve();
    let timer: unknown;
    let lastDone = -1;
    const progress = (done: number) => {
      if (done === lastDone) return;
      lastDone = done;
      const percent = Math.round((done / nodes.length) * 100);
      onProgress?.({
        percent,
        message: `pulling ${image} onto ${nodes.length} node(s): ${done} of ${nodes.length} done`,
      });
    };
    logger.info({ image, nodes: nodes.length, runId }, 'pre-pulling the image onto the nodes');
    try {
      const outcome = await new Promise<PrepullOutcome & { done: true }>((resolve, reject) => {
        const settle = (final: boolean) => {
          const outcome = prepullOutcome(image, verdicts, final, deadlineSeconds);
          if (outcome.done) resolve(outcome);
          else progress(outcome.nodesDone);
        };
        this.#runs.set(runId, {
          changed: (name, pod) => {
            const node = nodeOf.get(name);
            if (node === undefined) return;
            verdicts.set(node, prepullVerdict(pod));
            settle(false);
          },
          stop: reject,
        });
        timer = this.#timers.setTimeout(() => settle(true), deadlineMs);
        progress(0);
        const creates = pods.map((pod) => api.createPod(podOptions.namespace, pod));
        creating = Promise.allSettled(creates);
        Promise.all(creates).then(
          () => {
            // Changes the watch showed before a create returned were told already; those it has not shown come.
            for (const [name, pod] of view.current())
              if (nodeOf.has(name)) this.#runs.get(runId)?.changed(name, pod);
          },
          (error: unknown) =>
            reject(kubernetesError(error, `cannot create a pod to pre-pull image ${image}`, api.server)),
        );
      });
      if (!outcome.ok) throw new RuntimeError(outcome.code, outcome.message);
      if (outcome.failedNodes.length > 0) {
        logger.warn(
          { image, nodes: outcome.failedNodes, verdicts: outcome.failedNodes.map((n) => verdicts.get(n)) },
          'the image did not reach every node: a worker placed there pulls it at its start',
        );
      }
      logger.info({ image, nodes: nodes.length, ms: clock() - started }, 'image pre-pulled onto the nodes');
    } finally {
      this.#runs.delete(runId);
      if (timer !== undefined) this.#timers.clearTimeout(timer);
      // Every pod this pre-pull made goes, whatever the outcome: once no create is in flight, so that none is missed.
      await creating;
      await Promise.all(pods.map((pod) => this.#delete(pod.metadata.name)));
      if (secret !== undefined) {
        this.#o.secrets.release(secret);
        await this.#o.secrets.prune(this.#o.workerPods());
      }
    }
  }

  /** Ends every pre-pull under way (UNAVAILABLE; their pods are still deleted) and the watch. */
  close(): void {
    this.#closed = true;
    this.#view?.close();
    for (const run of [...this.#runs.values()]) {
      run.stop(new RuntimeError('UNAVAILABLE', 'the Kubernetes runtime was closed during an image pre-pull'));
    }
  }

  #started(): PodView {
    if (this.#closed) throw new RuntimeError('UNAVAILABLE', 'the Kubernetes runtime is closed');
    const { api, podOptions } = this.#o;
    this.#view ??= new PodView({
      api,
      namespace: podOptions.namespace,
      labelSelector: `${labelSelector({ [LABELS.managed]: 'true', ...podLabels(podOptions.installationLabels) })},${PREPULL_LABEL}`,
      logger: this.#o.logger,
      ...(this.#o.timers ? { timers: this.#o.timers } : {}),
      ...(this.#o.watchBackoff ? { backoff: this.#o.watchBackoff } : {}),
      onChange: (before, after) => {
        const pod = after ?? before;
        const runId = pod?.metadata?.labels?.[PREPULL_LABEL];
        if (runId !== undefined) this.#runs.get(runId)?.changed(pod?.metadata?.name ?? '', after);
      },
    });
    return this.#view;
  }

  /** Deletes the pre-pull pods a stopped Corral (or a failed delete) left behind. */
  async #sweep(view: PodView, deadlineSeconds: number): Promise<void> {
    const now = (this.#o.clock ?? Date.now)();
    const stale = stalePrepullPods(view.current().values(), new Set(this.#runs.keys()), now, deadlineSeconds);
    await Promise.all(stale.map((name) => this.#delete(name)));
  }

  async #delete(name: string): Promise<void> {
    try {
      await this.#o.api.deletePod(this.#o.podOptions.namespace, name, 0);
    } catch (error) {
      if (!isApiNotFound(error))
        this.#o.logger.warn({ pod: name, err: (error as Error).message }, 'cannot delete a pre-pull pod');
    }
  }
}
