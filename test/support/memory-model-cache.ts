/**
 * A `ModelCache` in memory, for unit tests of the code that uses the port (checks at create, the `downloading` wait,
 * the mounts) until and besides the real cache of src/models/: a hub of named models, some gated (a token must be
 * one of theirs), whose downloads a test advances by hand. It remembers every token it was handed. A model is
 * present per name and revision; `remove` takes it away (and tells the listeners) as the real cache does.
 */
import { modelRepoDir } from '../../src/domain/model-refs.js';
import type { ModelRef } from '../../src/domain/models.js';
import type {
  CachedModel,
  CheckedModel,
  ModelCache,
  ModelProgress,
  ModelRefusal,
  ModelRemoval,
} from '../../src/ports/model-cache.js';

export interface HubModel {
  name: string;
  bytes: number;
  /** Tokens with access; absent: a public model. */
  tokens?: readonly string[];
}

interface Download {
  progress: ModelProgress;
  done: Promise<void>;
  finish: () => void;
  listeners: ((progress: ModelProgress) => void)[];
}

export class MemoryModelCache implements ModelCache {
  readonly hubDir: string;
  /** Every token handed to check or ensure, in order (null: none). */
  readonly tokensSeen: (string | null)[] = [];
  readonly #hub = new Map<string, HubModel>();
  readonly #present = new Set<string>();
  readonly #downloads = new Map<string, Download>();
  /** What each present or downloading model resolved to, by `name@revision`. */
  readonly #resolved = new Map<string, CheckedModel>();
  readonly #removalListeners = new Set<(name: string) => void>();

  constructor(options: { hubDir: string; models: readonly HubModel[] }) {
    this.hubDir = options.hubDir;
    for (const model of options.models) this.#hub.set(model.name, model);
  }

  async check(model: ModelRef, token: string | null): Promise<CheckedModel | ModelRefusal> {
    this.tokensSeen.push(token);
    const hub = this.#hub.get(model.name);
    if (!hub) return { code: 'MODEL_NOT_FOUND', message: `the hub has no repository ${model.name}` };
    if (hub.tokens && (token === null || !hub.tokens.includes(token)))
      return { code: 'MODEL_GATED', message: `${model.name} is gated and the token has no access` };
    const present = this.#present.has(keyOf(model));
    return {
      name: model.name,
      revision: model.revision,
      commit: 'c0ffee',
      files: 1,
      bytes: hub.bytes,
      bytesMissing: present ? 0 : hub.bytes,
    };
  }

  async ensure(
    model: ModelRef,
    token: string | null,
    onProgress?: (progress: ModelProgress) => void,
  ): Promise<CachedModel> {
    const verdict = await this.check(model, token);
    if ('code' in verdict) throw new Error(verdict.message);
    const key = keyOf(model);
    if (!this.#present.has(key)) {
      let download = this.#downloads.get(key);
      if (!download) {
        let finish = () => {};
        const done = new Promise<void>((resolve) => {
          finish = resolve;
        });
        download = {
          progress: { ...namedRevision(model), bytesDone: 0, bytesTotal: verdict.bytes, bytesPerSecond: 0 },
          done,
          finish,
          listeners: [],
        };
        this.#downloads.set(key, download);
        this.#resolved.set(key, verdict);
      }
      if (onProgress) {
        download.listeners.push(onProgress);
        onProgress(download.progress);
      }
      await download.done;
    }
    return this.#entry(verdict);
  }

  #entry(resolved: CheckedModel): CachedModel {
    const { bytesMissing: _missing, ...model } = resolved;
    return {
      ...model,
      repoDir: `${this.hubDir}/${modelRepoDir(model.name)}`,
      lastUsedAt: 0,
      diskBytes: model.bytes,
    };
  }

  progress(model: Pick<ModelRef, 'name' | 'revision'>): ModelProgress | null {
    return this.#downloads.get(keyOf(model))?.progress ?? null;
  }

  async list(): Promise<CachedModel[]> {
    return [...this.#resolved.values()].map((resolved) => this.#entry(resolved));
  }

  async remove(name: string, revision?: string): Promise<ModelRemoval> {
    const keys = [...this.#resolved.keys()].filter((key) =>
      revision === undefined ? key.startsWith(`${name}@`) : key === `${name}@${revision}`,
    );
    if (keys.some((key) => this.#downloads.has(key))) return 'downloading';
    if (keys.length === 0) return 'not_cached';
    for (const key of keys) {
      this.#present.delete(key);
      this.#resolved.delete(key);
    }
    for (const listener of this.#removalListeners) listener(name);
    return 'removed';
  }

  onRemoved(listener: (name: string) => void): () => void {
    this.#removalListeners.add(listener);
    return () => this.#removalListeners.delete(listener);
  }

  /** Says how far the download of a model has come (tests advance it by hand). */
  advance(model: Pick<ModelRef, 'name' | 'revision'>, bytesDone: number, bytesPerSecond: number): void {
    const download = this.#downloads.get(keyOf(model));
    if (!download) throw new Error(`no download of ${model.name} under way`);
    download.progress = { ...download.progress, bytesDone, bytesPerSecond };
    for (const listener of download.listeners) listener(download.progress);
  }

  /** Ends the download of a model: its files are present. */
  finish(model: Pick<ModelRef, 'name' | 'revision'>): void {
    const key = keyOf(model);
    this.#present.add(key);
    const download = this.#downloads.get(key);
    this.#downloads.delete(key);
    download?.finish();
  }

  /** Whether a download of the model is under way. */
  downloading(model: Pick<ModelRef, 'name' | 'revision'>): boolean {
    return this.#downloads.has(keyOf(model));
  }
}

function keyOf(model: Pick<ModelRef, 'name' | 'revision'>): string {
  return `${model.name}@${model.revision}`;
}

function namedRevision(model: Pick<ModelRef, 'name' | 'revision'>): Pick<ModelRef, 'name' | 'revision'> {
  return { name: model.name, revision: model.revision };
}
