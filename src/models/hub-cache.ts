/**
 * `ModelCache` on this machine's disk, in the hub's cache layout (hub-layout.ts), filled through the hub's protocol
 * (hub-client.ts): a model's revision is resolved to a commit with the caller's token, every file it needs that is not
 * already a blob is downloaded once (blob-download.ts), and callers needing the same blob share its download; the
 * snapshot's links and the revision's ref are written atomically after. The hub is asked with the caller's token even
 * when every file is here, so a gated model fetched with one owner's token is never handed to an owner without access.
 * After each model is in place the cache is brought under its disk budget (eviction.ts). Models are removed by name
 * or revision (cache-removal.ts), never while they are fetched, and whoever listens is told (the controller's fetches).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, readlink, rename, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { ModelRef } from '../domain/models.js';
import type { Clock } from '../ports/clock.js';
import {
  type CachedModel,
  type CheckedModel,
  type ModelCache,
  type ModelProgress,
  type ModelRefusal,
  ModelRefusedError,
  type ModelRemoval,
  type ResolvedModel,
} from '../ports/model-cache.js';
import { downloadBlob } from './blob-download.js';
import { listCachedModels } from './cache-listing.js';
import { removeRepository, removeRevision } from './cache-removal.js';
import { modelsToEvict } from './eviction.js';
import type { HubClient, HubFileMetadata, HubTreeFile } from './hub-client.js';
import { allowedBy, blobLinkTarget, isBlobName, isCommitHash, repoPaths } from './hub-layout.js';
import { ProgressMeter } from './progress-meter.js';

export interface HubModelCacheOptions {
  hubDir: string;
  client: HubClient;
  clock: Clock;
  logger: Logger;
  /** Bytes the cache may hold before it evicts models no endpoint names; null: no budget. */
  diskBudgetBytes: number | null;
  /** The models (`org/name`) endpoints name: never evicted. */
  namedModels: () => Promise<ReadonlySet<string>>;
  /** Milliseconds between two progress reports to a caller. */
  progressEveryMs?: number;
  /**
   * Where other processes fetch into the same directory (node agents sharing a hostPath): runs a removal holding the
   * model's lock, or answers undefined when another process holds it (it is fetching: not removed). Default: runs it.
   */
  removing?: <T>(name: string, removal: () => Promise<T>) => Promise<T | undefined>;
}

interface Resolution extends ResolvedModel {
  files: number;
  wanted: HubTreeFile[];
  /** The HEAD of the first file with the caller's token: the access check, and that file's metadata. */
  first: HubFileMetadata;
}

interface BlobFlight {
  done: Promise<void>;
  bytes: number;
  /** Told each step: bytes fetched now, or `resumed` (already on disk, or dropped: negative), which are no speed. */
  listeners: Set<(bytes: number, resumed: boolean) => void>;
}

/** A download under way: its progress, and what it fetches (listed before its snapshot is). */
interface Download {
  meter: ProgressMeter;
  resolved: ResolvedModel;
}

const modelKey = (model: Pick<ModelRef, 'name' | 'revision'>): string => `${model.name}@${model.revision}`;

export class HubModelCache implements ModelCache {
  readonly hubDir: string;
  readonly #blobFlights = new Map<string, BlobFlight>();
  /** Downloads under way by `name@revision`: their progress, and what they fetch (listed before their snapshot is). */
  readonly #downloads = new Map<string, Download>();
  readonly #removalListeners = new Set<(name: string) => void>();
  /** Models with an `ensure` under way, by name: not evicted meanwhile. */
  readonly #inUse = new Map<string, number>();

  readonly #options: HubModelCacheOptions;

  constructor(options: HubModelCacheOptions) {
    this.#options = options;
    this.hubDir = options.hubDir;
  }

  async check(model: ModelRef, token: string | null): Promise<CheckedModel | ModelRefusal> {
    try {
      const { wanted, first: _first, ...resolved } = await this.#resolve(model, token);
      const paths = repoPaths(this.hubDir, model.name);
      let bytesMissing = 0;
      for (const file of wanted) if (!(await exists(paths.blob(blobName(file))))) bytesMissing += file.size;
      return { ...resolved, bytesMissing };
    } catch (error) {
      if (error instanceof ModelRefusedError) return error.refusal;
      throw error;
    }
  }

  async #resolve(model: ModelRef, token: string | null): Promise<Resolution> {
    const { client } = this.#options;
    const commit = isCommitHash(model.revision)
      ? model.revision
      : await client.resolveCommit(model.name, model.revision, token);
    const wanted = (await client.listFiles(model.name, commit, token)).filter((file) =>
      allowedBy(model.allowPatterns)(file.path),
    );
    const firstFile = wanted[0];
    if (!firstFile) {
      throw new ModelRefusedError({
        code: 'MODEL_NOT_FOUND',
        message: `${model.name} at ${model.revision} has no file that allowPatterns ${JSON.stringify(model.allowPatterns)} match`,
      });
    }
    const first = await client.fileMetadata(model.name, commit, firstFile.path, token);
    const bytes = wanted.reduce((sum, file) => sum + file.size, 0);
    return { name: model.name, revision: model.revision, commit, files: wanted.length, bytes, wanted, first };
  }

  async ensure(
    model: ModelRef,
    token: string | null,
    onProgress?: (progress: ModelProgress) => void,
  ): Promise<CachedModel> {
    this.#inUse.set(model.name, (this.#inUse.get(model.name) ?? 0) + 1);
    let resolution: Resolution;
    let download: Download | null = null;
    try {
      resolution = await this.#resolve(model, token);
      download = await this.#fetchMissing(model, token, resolution, onProgress);
      await this.#writeSnapshot(model, resolution);
      // While this model still counts as in use: a budget smaller than it must not evict it on its way in.
      await this.enforceBudget();
    } finally {
      // Listed as downloading (and not removable) until its snapshot is written: then both end in one turn.
      if (download && this.#downloads.get(modelKey(model)) === download)
        this.#downloads.delete(modelKey(model));
      const left = (this.#inUse.get(model.name) ?? 1) - 1;
      if (left === 0) this.#inUse.delete(model.name);
      else this.#inUse.set(model.name, left);
    }
    const { wanted: _wanted, first: _first, ...resolved } = resolution;
    const snapshot = (await listCachedModels(this.hubDir)).find(
      (entry) => entry.name === model.name && entry.commit === resolved.commit,
    );
    if (!snapshot)
      throw new Error(`${model.name} at ${model.revision} is not in the cache after it was fetched`);
    return { ...snapshot, ...resolved };
  }

  async #fetchMissing(
    model: ModelRef,
    token: string | null,
    resolution: Resolution,
    onProgress: ((progress: ModelProgress) => void) | undefined,
  ): Promise<Download | null> {
    const paths = repoPaths(this.hubDir, model.name);
    const missing: HubTreeFile[] = [];
    let present = 0;
    for (const file of resolution.wanted) {
      if (await exists(paths.blob(blobName(file)))) present += file.size;
      else missing.push(file);
    }
    if (missing.length === 0) return null;
    const meter = new ProgressMeter({
      clock: this.#options.clock,
      bytesTotal: resolution.bytes,
      bytesDone: present,
    });
    const key = modelKey(model);
    const { wanted: _wanted, first: _first, ...resolved } = resolution;
    const download = { meter, resolved };
    this.#downloads.set(key, download);
    let reportedAt = Number.NEGATIVE_INFINITY;
    const report = (force: boolean): void => {
      const now = this.#options.clock();
      if (!onProgress || (!force && now - reportedAt < (this.#options.progressEveryMs ?? 500))) return;
      reportedAt = now;
      onProgress(this.#progressOf(model, meter));
    };
    const listener = (bytes: number, resumed: boolean): void => {
      if (resumed) {
        meter.resumed(bytes);
        return;
      }
      meter.add(bytes);
      report(false);
    };
    report(true);
    try {
      // One file at a time: a model's files share one link, and a finished file is safe whatever happens next.
      for (const file of missing) {
        const blobPath = paths.blob(blobName(file));
        if (!this.#blobFlights.has(blobPath) && (await exists(blobPath))) {
          // Another caller's download of this file ended since this one listed what was missing.
          meter.resumed(file.size);
          continue;
        }
        let flight = this.#blobFlights.get(blobPath);
        if (flight) meter.resumed(flight.bytes);
        else flight = this.#startBlob(model, token, resolution, file, blobPath);
        flight.listeners.add(listener);
        try {
          await flight.done;
        } finally {
          flight.listeners.delete(listener);
        }
      }
      report(true);
      return download;
    } catch (error) {
      if (this.#downloads.get(key) === download) this.#downloads.delete(key);
      throw error;
    }
  }

  #startBlob(
    model: ModelRef,
    token: string | null,
    resolution: Resolution,
    file: HubTreeFile,
    blobPath: string,
  ): BlobFlight {
    const flight: BlobFlight = { done: Promise.resolve(), bytes: 0, listeners: new Set() };
    const tell = (bytes: number, resumed: boolean): void => {
      flight.bytes += bytes;
      for (const listener of flight.listeners) listener(bytes, resumed);
    };
    flight.done = (async () => {
      const metadata =
        file.path === resolution.wanted[0]?.path
          ? resolution.first
          : await this.#options.client.fileMetadata(model.name, resolution.commit, file.path, token);
      if (metadata.etag !== blobName(file) || !isBlobName(metadata.etag)) {
        throw new Error(
          `${model.name}/${file.path}: the hub's ETag ${metadata.etag} differs from its tree's`,
        );
      }
      this.#options.logger.info(
        { model: model.name, file: file.path, bytes: metadata.size },
        'downloading a model file into the cache',
      );
      await downloadBlob({
        client: this.#options.client,
        metadata,
        token,
        blobPath,
        onResumed: (bytes) => tell(bytes, true),
        onBytes: (bytes) => tell(bytes, false),
      });
    })().finally(() => this.#blobFlights.delete(blobPath));
    this.#blobFlights.set(blobPath, flight);
    return flight;
  }

  /** Links `snapshots/{commit}/{path}` to each blob and points `refs/{revision}` at the commit (no newline). */
  async #writeSnapshot(model: ModelRef, resolution: Resolution): Promise<void> {
    const paths = repoPaths(this.hubDir, model.name);
    for (const file of resolution.wanted) {
      const link = paths.snapshot(resolution.commit, file.path);
      const target = blobLinkTarget(file.path, blobName(file));
      if ((await readlink(link).catch(() => null)) === target) continue;
      await mkdir(dirname(link), { recursive: true });
      const temporary = `${link}.${randomUUID()}.tmp`;
      await symlink(target, temporary);
      await rename(temporary, link);
    }
    if (model.revision !== resolution.commit) {
      const ref = paths.ref(model.revision);
      if ((await readFile(ref, 'utf8').catch(() => null)) !== resolution.commit) {
        await mkdir(dirname(ref), { recursive: true });
        const temporary = `${ref}.${randomUUID()}.tmp`;
        await writeFile(temporary, resolution.commit);
        await rename(temporary, ref);
      }
    }
    const now = new Date(this.#options.clock());
    await utimes(paths.repoDir, now, now);
  }

  #progressOf(model: Pick<ModelRef, 'name' | 'revision'>, meter: ProgressMeter): ModelProgress {
    return {
      name: model.name,
      revision: model.revision,
      bytesDone: meter.bytesDone,
      bytesTotal: meter.bytesTotal,
      bytesPerSecond: meter.bytesPerSecond(),
    };
  }

  progress(model: Pick<ModelRef, 'name' | 'revision'> & { commit?: string }): ModelProgress | null {
    const download =
      this.#downloads.get(modelKey(model)) ??
      [...this.#downloads.values()].find(
        ({ resolved }) => resolved.name === model.name && resolved.commit === model.commit,
      );
    return download ? this.#progressOf(download.resolved, download.meter) : null;
  }

  async list(): Promise<CachedModel[]> {
    const listed = await listCachedModels(this.hubDir);
    const now = this.#options.clock();
    for (const { meter, resolved } of this.#downloads.values()) {
      if (listed.some((entry) => entry.name === resolved.name && entry.commit === resolved.commit)) continue;
      // A first download of this revision: no snapshot yet, so it is listed from what is being fetched.
      listed.push({
        ...resolved,
        repoDir: repoPaths(this.hubDir, resolved.name).repoDir,
        lastUsedAt: now,
        diskBytes: meter.bytesDone,
      });
    }
    return listed;
  }

  async remove(name: string, revision?: string): Promise<ModelRemoval> {
    if (this.#inUse.has(name)) return 'downloading';
    const removing = this.#options.removing ?? ((_name, removal) => removal());
    const removed = await removing(name, () =>
      revision === undefined
        ? removeRepository(this.hubDir, name)
        : removeRevision(this.hubDir, name, revision),
    );
    if (removed === undefined) return 'downloading';
    if (!removed) return 'not_cached';
    for (const listener of this.#removalListeners) listener(name);
    return 'removed';
  }

  onRemoved(listener: (name: string) => void): () => void {
    this.#removalListeners.add(listener);
    return () => this.#removalListeners.delete(listener);
  }

  /** Evicts the least recently used models no endpoint names until the cache is within its budget. */
  async enforceBudget(): Promise<string[]> {
    const budget = this.#options.diskBudgetBytes;
    if (budget === null) return [];
    const byName = new Map<string, CachedModel>();
    for (const model of await listCachedModels(this.hubDir)) byName.set(model.name, model);
    const named = await this.#options.namedModels();
    const evicted = modelsToEvict(
      [...byName.values()],
      budget,
      (name) => named.has(name) || this.#inUse.has(name),
    );
    const removed: string[] = [];
    for (const model of evicted) {
      // Another agent fetching it into a shared directory keeps it (this time).
      if ((await this.remove(model.name)) !== 'removed') continue;
      removed.push(model.name);
      this.#options.logger.info(
        { model: model.name, bytes: model.diskBytes, budgetBytes: budget },
        'evicted a model no endpoint names to keep the model cache within its disk budget',
      );
    }
    return removed;
  }
}

/** The blob a tree entry becomes: its sha256 when it is an LFS file, else its git blob sha1 (the hub's ETags). */
function blobName(file: HubTreeFile): string {
  return file.sha256 ?? file.blobId;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
