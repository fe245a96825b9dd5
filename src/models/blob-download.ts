/**
 * One file of a model into the cache's `blobs/`, as the hub's client does it but resumable across restarts: the bytes
 * go to `blobs/{etag}.incomplete` (appended after whatever a killed process left there, through a Range request), are
 * hashed as they are written (sha256 for a large file, whose ETag is its sha256; git's blob sha1 for a small one),
 * flushed to disk, and only then renamed to `blobs/{etag}`, so a blob that exists is whole and verified. A connection
 * cut mid-file is resumed where it stopped, as the client's `http_get` does, up to a few times without progress.
 * The bytes keep arriving while a batch is written (one write in flight), and the file's pages are flushed as it grows
 * (one `fdatasync` in flight), so the final `fsync` has only the tail to flush (docs/performance.md, issue 34's rate).
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, rename, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ModelRefusedError } from '../ports/model-cache.js';
import type { HubClient, HubFileMetadata } from './hub-client.js';

/**
 * Bytes gathered before one write: fewer writes than undici's 64 KiB chunks. 1 MiB rather than 4: 4 MiB batches cost
 * 0.8 to 1.6 s of system CPU per 500 MB here, 1 MiB ones 0.36 to 0.56 s (docs/performance.md, issue 34's download
 * rate; why is not shown: a smaller batch is likelier to be in the CPU's caches still when it is copied and hashed).
 */
const WRITE_BATCH = 1 << 20;
/** Bytes written between two background flushes to disk (the kernel would otherwise hold them all until `fsync`). */
const SYNC_EVERY = 64 << 20;
/** Attempts in a row that may end without a byte more before the download gives up. */
const ATTEMPTS_WITHOUT_PROGRESS = 5;

export interface BlobDownload {
  client: HubClient;
  metadata: HubFileMetadata;
  token: string | null;
  /** `blobs/{etag}` in the cache. */
  blobPath: string;
  /** Bytes found in a `.incomplete` left by an earlier process, counted before the first byte is fetched. */
  onResumed: (bytes: number) => void;
  onBytes: (bytes: number) => void;
}

/** The digest the hub names a blob by: sha256 of the content (64 hex digits), or git's blob sha1 (40). */
function blobHash(etag: string, size: number): Hash {
  if (etag.length === 64) return createHash('sha256');
  return createHash('sha1').update(`blob ${size}\0`);
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/** Feeds what is already in `path` through the hash: the prefix a resumed download continues. */
async function hashPrefix(path: string, hash: Hash): Promise<void> {
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
}

/** A flush to disk that failed: the kernel may have dropped the pages, so the bytes written so far are not trusted. */
class DiskFlushError extends Error {
  constructor(readonly failure: Error) {
    super(`flushing a download to disk failed: ${failure.message}`);
  }
}

/**
 * Batches of a file's bytes written in order, one write in flight while the next batch gathers: each batch is hashed
 * and counted once its write has returned, so the hash and `written` always cover exactly the bytes on disk, whatever
 * fails. A background `fdatasync` every `SYNC_EVERY` bytes starts the disk's work while the download goes on.
 */
class HashingFile {
  written = 0;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #writing: Promise<void> = Promise.resolve();
  #syncing: Promise<void> | null = null;
  #unsynced = 0;
  #syncFailure: DiskFlushError | null = null;

  readonly #handle: FileHandle;
  readonly #onBytes: (bytes: number) => void;

  constructor(
    handle: FileHandle,
    readonly hash: Hash,
    onBytes: (bytes: number) => void,
  ) {
    this.#handle = handle;
    this.#onBytes = onBytes;
  }

  /** Resolves as soon as the chunk is taken: it waits only when a batch is ready and the previous write is not done. */
  async add(chunk: Buffer): Promise<void> {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    if (this.#pendingBytes >= WRITE_BATCH) await this.#startWrite();
  }

  /** Writes what is pending and waits for every write and flush started: then `written` is final. */
  async flush(): Promise<void> {
    try {
      await this.#startWrite();
      await this.#writing;
    } finally {
      await this.#syncing;
    }
    if (this.#syncFailure) throw this.#syncFailure;
  }

  async #startWrite(): Promise<void> {
    // A failed write rejects here (or in `flush`), before anything more is written after it.
    await this.#writing;
    if (this.#pendingBytes === 0) return;
    const chunks = this.#pending;
    const bytes = this.#pendingBytes;
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#writing = this.#handle.writev(chunks).then(() => {
      for (const chunk of chunks) this.hash.update(chunk);
      this.written += bytes;
      this.#onBytes(bytes);
      this.#unsynced += bytes;
      if (this.#unsynced >= SYNC_EVERY && this.#syncing === null) this.#startSync();
    });
    // Seen by whoever awaits it next; until then a failure is no unhandled rejection.
    this.#writing.catch(() => {});
  }

  #startSync(): void {
    this.#unsynced = 0;
    this.#syncing = this.#handle.datasync().then(
      () => {
        this.#syncing = null;
      },
      (error: Error) => {
        this.#syncFailure ??= new DiskFlushError(error);
        this.#syncing = null;
      },
    );
  }
}

export async function downloadBlob(download: BlobDownload): Promise<void> {
  const { metadata, blobPath } = download;
  const incomplete = `${blobPath}.incomplete`;
  await mkdir(dirname(blobPath), { recursive: true });
  let present = await sizeOf(incomplete);
  if (present > metadata.size) {
    await truncate(incomplete, 0);
    present = 0;
  }
  let hash = blobHash(metadata.etag, metadata.size);
  if (present > 0) {
    await hashPrefix(incomplete, hash);
    download.onResumed(present);
  }
  const handle = await open(incomplete, 'a');
  try {
    let failures = 0;
    while (present < metadata.size) {
      const before = present;
      try {
        // A write that failed part-way may have left bytes past those counted: the file holds exactly `present`.
        if (failures > 0) await handle.truncate(present);
        const { body, partial } = await download.client.openBytes(metadata, download.token, present);
        if (present > 0 && !partial) {
          // The server ignored the range: start over rather than append the file's beginning to its middle.
          await handle.truncate(0);
          hash = blobHash(metadata.etag, metadata.size);
          download.onResumed(-present);
          present = 0;
        }
        const file = new HashingFile(handle, hash, download.onBytes);
        try {
          for await (const chunk of body) await file.add(chunk as Buffer);
        } finally {
          try {
            await file.flush();
          } finally {
            present += file.written;
          }
        }
      } catch (error) {
        if (error instanceof ModelRefusedError || error instanceof DiskFlushError) throw error;
        failures = present > before ? 1 : failures + 1;
        if (failures >= ATTEMPTS_WITHOUT_PROGRESS) throw error;
      }
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  const digest = hash.digest('hex');
  if (present !== metadata.size || digest !== metadata.etag) {
    await truncate(incomplete, 0);
    throw new Error(
      `${blobPath}: the bytes received (${present}, ${digest}) do not match the hub's (${metadata.size}, ${metadata.etag})`,
    );
  }
  await rename(incomplete, blobPath);
}
