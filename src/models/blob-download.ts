/**
 * One file of a model into the cache's `blobs/`, as the hub's client does it but resumable across restarts: the bytes
 * go to `blobs/{etag}.incomplete` (appended after whatever a killed process left there, through a Range request), are
 * hashed as they are written (sha256 for a large file, whose ETag is its sha256; git's blob sha1 for a small one),
 * flushed to disk, and only then renamed to `blobs/{etag}`, so a blob that exists is whole and verified. A connection
 * cut mid-file is resumed where it stopped, as the client's `http_get` does, up to a few times without progress.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, rename, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ModelRefusedError } from '../ports/model-cache.js';
import type { HubClient, HubFileMetadata } from './hub-client.js';

/** Bytes gathered before one write: fewer, larger writes than undici's chunks. */
const WRITE_BATCH = 4 << 20;
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

class HashingFile {
  written = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(
    private readonly handle: FileHandle,
    readonly hash: Hash,
    private readonly onBytes: (bytes: number) => void,
  ) {}

  async add(chunk: Buffer): Promise<void> {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= WRITE_BATCH) await this.flush();
  }

  /** Writes what is pending, then hashes it: the hash always covers exactly the bytes on disk. */
  async flush(): Promise<void> {
    if (this.pendingBytes === 0) return;
    const chunks = this.pending;
    const bytes = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    await this.handle.writev(chunks);
    for (const chunk of chunks) this.hash.update(chunk);
    this.written += bytes;
    this.onBytes(bytes);
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
          await file.flush();
          present += file.written;
        }
      } catch (error) {
        if (error instanceof ModelRefusedError) throw error;
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
