/**
 * `ImagePreparer`: makes each endpoint's image present before any worker needs it, so that an image that cannot be
 * had fails the endpoint at once (even at `minNum: 0`) and no request waits for a pull. Pulls run in the background
 * of the reconcile passes, one per image key (owner, credentials, reference) however many endpoints and workers
 * want it; a worker start waits for the pull under way instead of pulling again. The decisions are image-state.ts's.
 */
import type { Endpoint } from '../../domain/endpoint.js';
import { floatsOnLatest, imageNameProblem } from '../../domain/image-name.js';
import {
  type ImageRequest,
  type PullProgress,
  RuntimeError,
  type WorkerRuntime,
} from '../../runtime/types.js';
import type { ControllerLogger, StartImageCheck } from '../controller-options.js';
import type { BackoffPolicy } from '../crashes/backoff.js';
import {
  type ImageState,
  imageKey,
  type PullOutcome,
  pullEnded,
  pullStarted,
  shouldPrepare,
} from './image-state.js';
import { type RevealCredentials, registryAuthFor } from './worker-spec.js';

export interface ImagePreparerOptions {
  runtime: WorkerRuntime;
  /** Whether the owner may run the image (private images), asked before each try as before a worker start. */
  imageAccess?: StartImageCheck | undefined;
  revealCredentials: RevealCredentials;
  clock: () => number;
  /** The retry backoff after a failed try (the controller's crash backoff). */
  policy: BackoffPolicy;
  logger: ControllerLogger;
  /** A try ended: the endpoint's status changed (the controller reconciles it). */
  onSettled: (endpointId: string) => void;
}

/** One pull under way, shared by every endpoint and worker start with its key. */
interface Pull {
  outcome: Promise<PullOutcome>;
  /** The runtime's latest line of progress. */
  progress: string;
  listeners: Set<(progress: PullProgress) => void>;
}

/** What image-state.ts's withImageStatus reads of an endpoint's image. */
export type ImageView = ImageState & { progress: string };

export class ImagePreparer {
  readonly #o: ImagePreparerOptions;
  readonly #states = new Map<string, ImageState>();
  readonly #pulls = new Map<string, Pull>();

  constructor(options: ImagePreparerOptions) {
    this.#o = options;
  }

  /**
   * Each pass: begins the tries the pass's endpoints need now (all of them, or the one it reconciles), and forgets
   * the endpoints no longer `live`.
   */
  sync(endpoints: readonly Endpoint[], live: ReadonlySet<string>, now: number): void {
    for (const id of this.#states.keys()) if (!live.has(id)) this.#states.delete(id);
    for (const endpoint of endpoints)
      if (shouldPrepare(endpoint, this.#states.get(endpoint.id), now)) this.#begin(endpoint);
  }

  /** The endpoint's image as last known, with the progress of its pull. */
  of(endpointId: string): ImageView | undefined {
    const state = this.#states.get(endpointId);
    if (!state) return undefined;
    const progress = this.#pulls.get(state.key)?.progress || `preparing image ${state.image}`;
    return { ...state, progress };
  }

  /**
   * Resolves once the endpoint's image is present, for a worker start: at once when it is, else when the pull under
   * way (or one begun now) ends, telling `onProgress` its progress. A failure whose retry is not due yet is thrown
   * again as it was, without a new pull.
   */
  async ready(endpoint: Endpoint, onProgress: (progress: PullProgress) => void): Promise<void> {
    const key = imageKey(endpoint);
    const state = this.#states.get(endpoint.id);
    let pull = this.#pulls.get(key);
    if (!pull && state?.key === key) {
      if (state.phase === 'ready') return;
      if (state.phase !== 'pulling' && this.#o.clock() < state.retryAt) {
        throw new RuntimeError(state.code === '' ? 'RUNTIME_ERROR' : state.code, state.message);
      }
    }
    pull ??= this.#begin(endpoint);
    // The runtime's create pulls where the worker runs (sharing this pull there): the start need not wait for it.
    if (this.#o.runtime.createPullsWhereItRuns) return;
    if (pull.progress !== '') onProgress({ message: pull.progress });
    pull.listeners.add(onProgress);
    try {
      const outcome = await pull.outcome;
      if (!outcome.ok) throw new RuntimeError(outcome.code, outcome.message);
    } finally {
      pull.listeners.delete(onProgress);
    }
  }

  /** A try for the endpoint: its state is `pulling`, joined to the pull under way for its key or a new one. */
  #begin(endpoint: Endpoint): Pull {
    const state = pullStarted(endpoint, this.#states.get(endpoint.id));
    this.#states.set(endpoint.id, state);
    const pull = this.#pulls.get(state.key) ?? this.#launch(endpoint, state.key);
    void pull.outcome.then((outcome) => this.#ended(endpoint.id, state, outcome));
    return pull;
  }

  #launch(endpoint: Endpoint, key: string): Pull {
    const pull: Pull = { outcome: Promise.resolve({ ok: true }), progress: '', listeners: new Set() };
    pull.outcome = this.#prepare(endpoint, pull).finally(() => {
      if (this.#pulls.get(key) === pull) this.#pulls.delete(key);
    });
    this.#pulls.set(key, pull);
    return pull;
  }

  async #prepare(endpoint: Endpoint, pull: Pull): Promise<PullOutcome> {
    const { ref: image, authId } = endpoint.spec.image;
    const started = this.#o.clock();
    // A row stored before references were checked (or written around the API) never reaches the runtime: its name
    // would go into an engine's API path as written.
    const problem = imageNameProblem(image);
    if (problem !== undefined)
      return { ok: false, code: 'IMAGE_PULL_FAILED', message: unreadable(image, problem) };
    try {
      const verdict = await this.#o.imageAccess?.({ ownerId: endpoint.ownerId, authId, image });
      if (verdict && !verdict.allowed)
        return { ok: false, code: 'IMAGE_PULL_FAILED', message: verdict.message };
      const registryAuth = registryAuthFor(endpoint, this.#o.revealCredentials);
      const { pullPolicy } = endpoint.spec.image;
      const request: ImageRequest = {
        image,
        ...(registryAuth ? { registryAuth } : {}),
        // Where a scheduler places workers (Kubernetes): the nodes of its products, pulled as its workers pull.
        endpoint: {
          ownerId: endpoint.ownerId,
          authId,
          productIds: endpoint.spec.productIds,
          ...(pullPolicy === undefined ? {} : { pullPolicy }),
          latestTag: floatsOnLatest(image),
        },
      };
      await this.#o.runtime.prepareImage(request, (progress) => {
        pull.progress = progress.message;
        for (const listener of pull.listeners) listener(progress);
      });
      this.#o.logger.info({ image, ms: this.#o.clock() - started }, 'image ready');
      return { ok: true };
    } catch (error) {
      const code = error instanceof RuntimeError ? error.code : 'RUNTIME_ERROR';
      const message = error instanceof Error ? error.message : String(error);
      return { ok: false, code: code === 'NOT_FOUND' ? 'RUNTIME_ERROR' : code, message };
    }
  }

  /** The try's result, for an endpoint that still wants that image from that try. */
  #ended(endpointId: string, tried: ImageState, outcome: PullOutcome): void {
    if (this.#states.get(endpointId) !== tried) return;
    const next = pullEnded(tried, outcome, this.#o.clock(), this.#o.policy);
    this.#states.set(endpointId, next);
    if (!outcome.ok && next.failures === 1) {
      this.#o.logger.warn(
        { endpointId, image: tried.image, code: outcome.code, reason: outcome.message },
        'cannot prepare the image; retried with backoff',
      );
    }
    this.#o.onSettled(endpointId);
  }
}

/** The failure of a stored image that is not a reference: what is wrong, and that an update fixes it. */
function unreadable(image: string, problem: string): string {
  return `image ${JSON.stringify(image)} is not an image reference (${problem}); update the endpoint's image`;
}
