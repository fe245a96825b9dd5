/**
 * `ModelCache`: the machine's cache of models in the Hugging Face hub's cache layout (issue 34), as the rest of
 * Corral uses it. Implemented in `models/` (the hub's HTTP protocol, the cache directory, downloads shared between
 * callers); read by the API (checks at create, `GET models`, `POST models` and `DELETE models/{org}/{name}`) and the
 * controller (a worker waits in `downloading` until its models are on its machine, then they are mounted; a model
 * removed from the cache is fetched again for the next worker that needs it). `MachineModelCaches`: the workers'
 * machines' own caches, where the runtime keeps them (the GPU nodes', on Kubernetes with node agents).
 */
import type { ModelRef } from '../domain/models.js';

/** A repository, revision or file the hub refuses with the token given (or without one). */
export interface ModelRefusal {
  code: 'MODEL_NOT_FOUND' | 'MODEL_GATED' | 'MODEL_UNAUTHORIZED' | 'MODEL_HUB_UNREACHABLE';
  message: string;
}

/** What `ensure` throws when the hub refuses the model (or cannot be reached): the refusal `check` would return. */
export class ModelRefusedError extends Error {
  constructor(readonly refusal: ModelRefusal) {
    super(refusal.message);
    this.name = 'ModelRefusedError';
  }
}

export const isModelRefusal = <T extends ResolvedModel>(value: T | ModelRefusal): value is ModelRefusal =>
  'code' in value;

/** What a model's files are, resolved on the hub. */
export interface ResolvedModel {
  name: string;
  revision: string;
  /** The commit the revision pointed to. */
  commit: string;
  files: number;
  bytes: number;
}

/** A model resolved by `check`: with the bytes of its files not on this machine yet (0: every file is here). */
export interface CheckedModel extends ResolvedModel {
  bytesMissing: number;
}

/** What `remove` did: removed, found nothing of that name (and revision), or refused while a download of it runs. */
export type ModelRemoval = 'removed' | 'not_cached' | 'downloading';

/** Several caches' removals as one: refused where any refused (a download), else removed where any removed. */
export function combinedRemoval(removals: readonly ModelRemoval[]): ModelRemoval {
  if (removals.includes('downloading')) return 'downloading';
  return removals.includes('removed') ? 'removed' : 'not_cached';
}

/** A download in flight (or finished), as the API, the CLI and the dashboard show it. */
export interface ModelProgress {
  name: string;
  revision: string;
  bytesDone: number;
  bytesTotal: number;
  /** Measured over the last seconds. */
  bytesPerSecond: number;
}

/** A model present on this machine. */
export interface CachedModel extends ResolvedModel {
  /** The host directory of the repository in the hub layout: `{cache}/hub/models--{org}--{name}`. */
  repoDir: string;
  lastUsedAt: number;
  /** Bytes on disk (blobs shared between revisions counted once). */
  diskBytes: number;
}

export interface ModelCache {
  /** The hub cache directory on this machine (holds `models--*` directories). */
  readonly hubDir: string;
  /** Resolves a model with the token: the refusal the hub gives, said at create rather than at start. */
  check(model: ModelRef, token: string | null): Promise<CheckedModel | ModelRefusal>;
  /**
   * Makes the model's files present (each downloaded once, resumable, verified, written atomically; callers asking
   * for the same model share one download). Checks the token's access even when the files are already here, so a
   * gated model is never handed to a caller without access. A download that starts reports its progress at once
   * (the bytes already here, no rate), then as it goes.
   */
  ensure(
    model: ModelRef,
    token: string | null,
    onProgress?: (progress: ModelProgress) => void,
  ): Promise<CachedModel>;
  /**
   * The download of a model in flight, if any: by its revision, or by its commit when one is given (a listed
   * snapshot whose ref is not written yet is named by its commit).
   */
  progress(model: Pick<ModelRef, 'name' | 'revision'> & { commit?: string }): ModelProgress | null;
  /** The models present on this machine, and those whose download is under way (with the bytes they have so far). */
  list(): Promise<CachedModel[]>;
  /**
   * Removes a model: one revision (a branch, tag or `refs/pr/N` in `refs/`, or a commit), or every revision when
   * none is given. Blobs another revision still links stay. Refused (`downloading`) while the model is fetched.
   */
  remove(name: string, revision?: string): Promise<ModelRemoval>;
  /** Tells `listener` the name of each model removed from here (by `remove` or eviction); returns its unsubscribe. */
  onRemoved(listener: (name: string) => void): () => void;
}

/** A model in the cache of one of the machines workers run on (a GPU node's, on Kubernetes with node agents). */
export interface MachineModel extends CachedModel {
  /** The machine (the node's name). */
  machine: string;
  download: ModelProgress | null;
}

/** A removal from every machine: what it did, and the machines that did not answer (nothing known there). */
export interface MachineRemoval {
  removal: ModelRemoval;
  unreachable: { machine: string; message: string }[];
}

/**
 * The caches of the machines workers run on, where each keeps its own and the runtime fills them (Kubernetes with
 * node agents: each GPU node's): the controller fetches through them, `GET models` lists them per machine, and
 * `DELETE models/{org}/{name}` removes from every one. A model removed from any of them is told to `onRemoved`.
 */
export interface MachineModelCaches extends Pick<ModelCache, 'hubDir' | 'ensure' | 'onRemoved'> {
  /** Every machine's models; a machine that does not answer is left out (and logged). */
  listMachines(): Promise<MachineModel[]>;
  /** Removes a model (one revision, or every one) from every machine. */
  removeEverywhere(name: string, revision?: string): Promise<MachineRemoval>;
  /**
   * Whether a machine workers can run on lacks the model now (a GPU node that joined since it was fetched, or whose
   * fetch failed), as the runtime last saw them: the controller fetches it again for the model's next worker.
   */
  lacking(model: Pick<ModelRef, 'name'>): boolean;
  /** Fetches the model on the machines that lack it only (`lacking`); resolves to the machines asked. */
  fillLacking(model: ModelRef, token: string | null): Promise<string[]>;
}
