/**
 * `ModelFetcher`: makes an endpoint's models present on this machine before its workers are placed on GPUs
 * (issue 34). One fetch per owner and model (the cache shares the download between owners and checks each owner's
 * token itself), begun by the first worker that needs it; the workers wait in `downloading` with its progress as
 * their message. The owner's token is asked for at the start of each fetch and handed only to the cache. A model
 * removed from the cache (evicted, or `DELETE models`) is forgotten as ready, so the next worker fetches it again.
 * A ready model that a machine workers can run on lacks (a GPU node that joined later, or whose fetch failed) is
 * fetched again when a worker needs it, at most once a minute, without the workers waiting: they go to the machines
 * that hold it meanwhile.
 */
import { modelLabel } from '../../domain/model-refs.js';
import type { ModelRef } from '../../domain/models.js';
import { progressMessage } from '../../domain/transfer-text.js';
import type { MachineModelCaches, ModelCache, ModelProgress } from '../../ports/model-cache.js';
import type { ControllerLogger } from '../controller-options.js';

export interface ModelFetcherOptions {
  cache: Pick<ModelCache, 'ensure' | 'onRemoved'> &
    Partial<Pick<MachineModelCaches, 'lacking' | 'fillLacking'>>;
  /** The owner's hub token for the model (its tokenSecret's value), null for none. */
  token: (ownerId: string, model: ModelRef) => Promise<string | null>;
  clock: () => number;
  logger: ControllerLogger;
  /** A fetch of the endpoint's owner moved on (progress at most once a second, or its end): reconcile its endpoints. */
  onChange: (ownerId: string) => void;
}

type Fetch = {
  name: string;
} /** `removedMeanwhile`: the model was removed as its fetch ended (after the cache let it go, before it was noted). */ & (
  | { phase: 'fetching'; progress: ModelProgress | null; reportedAt: number; removedMeanwhile?: true }
  /** `refreshedAt`: when it was last fetched again where a machine lacked it. */
  | { phase: 'ready'; refreshedAt?: number }
  | { phase: 'failed'; message: string }
);

/** What the endpoint's workers wait for: nothing, the fetches under way (a message), or a failure. */
export type ModelsVerdict =
  | { ready: true }
  | { ready: false; failed: false; message: string }
  | { ready: false; failed: true; message: string };

const PROGRESS_EVERY_MS = 1_000;
/** How often a ready model is fetched again where a machine lacks it (a node that keeps failing is not hammered). */
const REFRESH_EVERY_MS = 60_000;

export class ModelFetcher {
  readonly #o: ModelFetcherOptions;
  readonly #fetches = new Map<string, Fetch>();

  constructor(options: ModelFetcherOptions) {
    this.#o = options;
    options.cache.onRemoved((name) => {
      for (const [key, fetch] of this.#fetches) {
        if (fetch.name !== name) continue;
        if (fetch.phase === 'ready') this.#fetches.delete(key);
        else if (fetch.phase === 'fetching') fetch.removedMeanwhile = true;
      }
    });
  }

  /**
   * Whether the owner's models are here; begins the fetches of those that are not (a failed one again when `retry`).
   * The message of a wait names the first model not here yet.
   */
  need(ownerId: string, models: readonly ModelRef[], retry = false): ModelsVerdict {
    let waiting: string | undefined;
    for (const model of models) {
      const key = keyOf(ownerId, model);
      let fetch = this.#fetches.get(key);
      if (fetch === undefined || (retry && fetch.phase === 'failed'))
        fetch = this.#begin(key, ownerId, model);
      if (fetch.phase === 'failed') return { ready: false, failed: true, message: fetch.message };
      if (fetch.phase === 'ready') this.#refreshWhereLacking(fetch, ownerId, model);
      if (fetch.phase === 'fetching')
        waiting ??= fetch.progress ? progressMessage(fetch.progress) : `model ${modelLabel(model)}: starting`;
    }
    return waiting === undefined ? { ready: true } : { ready: false, failed: false, message: waiting };
  }

  /** Fetches a ready model, in the background, on the machines that lack it now; the workers do not wait. */
  #refreshWhereLacking(fetch: Fetch & { phase: 'ready' }, ownerId: string, model: ModelRef): void {
    const now = this.#o.clock();
    const { cache } = this.#o;
    if (!cache.fillLacking || !cache.lacking?.(model)) return;
    if (fetch.refreshedAt !== undefined && now - fetch.refreshedAt < REFRESH_EVERY_MS) return;
    fetch.refreshedAt = now;
    void (async () => {
      try {
        const machines = await cache.fillLacking?.(model, await this.#o.token(ownerId, model));
        this.#o.logger.info(
          { model: model.name, revision: model.revision, machines },
          'model fetched again where a machine lacked it',
        );
      } catch (error) {
        this.#o.logger.warn(
          {
            model: model.name,
            revision: model.revision,
            reason: error instanceof Error ? error.message : String(error),
          },
          'model fetch again where a machine lacked it failed',
        );
      }
    })();
  }

  #begin(key: string, ownerId: string, model: ModelRef): Fetch {
    const fetch: Fetch & { phase: 'fetching' } = {
      name: model.name,
      phase: 'fetching',
      progress: null,
      reportedAt: 0,
    };
    this.#fetches.set(key, fetch);
    const started = this.#o.clock();
    const onProgress = (progress: ModelProgress) => {
      fetch.progress = progress;
      const now = this.#o.clock();
      if (now - fetch.reportedAt < PROGRESS_EVERY_MS) return;
      fetch.reportedAt = now;
      this.#o.onChange(ownerId);
    };
    void (async () => {
      try {
        const token = await this.#o.token(ownerId, model);
        const cached = await this.#o.cache.ensure(model, token, onProgress);
        if (fetch.removedMeanwhile) this.#fetches.delete(key);
        else this.#fetches.set(key, { name: model.name, phase: 'ready' });
        this.#o.logger.info(
          {
            model: model.name,
            revision: model.revision,
            commit: cached.commit,
            ms: this.#o.clock() - started,
          },
          'model ready',
        );
      } catch (error) {
        const message = `model ${modelLabel(model)}: ${error instanceof Error ? error.message : String(error)}`;
        this.#fetches.set(key, { name: model.name, phase: 'failed', message });
        this.#o.logger.warn(
          { model: model.name, revision: model.revision, reason: message },
          'model fetch failed',
        );
      }
      this.#o.onChange(ownerId);
    })();
    return fetch;
  }
}

function keyOf(ownerId: string, model: ModelRef): string {
  return JSON.stringify([ownerId, model.name, model.revision, model.allowPatterns]);
}
