/**
 * The hub's HTTP protocol as `huggingface_hub` speaks it (file_download.py, hf_api.py): a revision resolved to its
 * commit through the model info, the files of a commit through the recursive tree (followed through `Link:
 * rel="next"`), a file's metadata through a HEAD of its resolve URL (commit, ETag or `X-Linked-Etag`, size or
 * `X-Linked-Size`, and the `Location` of a large file on another host), its bytes through a GET that sends the token
 * only to the hub's own host. The hub's refusals become the port's codes.
 */
import { type Dispatcher, request } from 'undici';
import type { ModelRefusal } from '../ports/model-cache.js';
import { ModelRefusedError } from '../ports/model-cache.js';
import { apiUrl, fileUrl, isSafeRepoPath, normalizeEtag } from './hub-layout.js';

/** A file of a commit, as the tree lists it. */
export interface HubTreeFile {
  path: string;
  size: number;
  /** The git blob sha1 (of the LFS pointer, for LFS files). */
  blobId: string;
  /** The sha256 of an LFS file's content; null for a file stored in git. */
  sha256: string | null;
}

/** What a HEAD of a file's resolve URL says. */
export interface HubFileMetadata {
  commit: string;
  etag: string;
  size: number;
  /** Where its bytes are: the resolve URL itself, or a large file's signed URL. */
  location: string;
}

export interface HubClientOptions {
  hubUrl: string;
  dispatcher?: Dispatcher;
  /** Milliseconds a metadata request may take (the client's `HF_HUB_ETAG_TIMEOUT` is 10 s). */
  metadataTimeoutMs?: number;
}

type Headers = Record<string, string | string[] | undefined>;

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The hub's answer as the port's refusal, read as the client's `hf_raise_for_status` reads it. */
export function refusalOf(status: number, headers: Headers, what: string): ModelRefusal {
  const code = header(headers, 'x-error-code');
  const message = header(headers, 'x-error-message');
  if (code === 'GatedRepo') {
    return { code: 'MODEL_GATED', message: `${what} is gated: the token given has not been granted access` };
  }
  if (message === 'Invalid credentials in Authorization header') {
    return { code: 'MODEL_UNAUTHORIZED', message: `the hub does not accept the token given for ${what}` };
  }
  if (code === 'RevisionNotFound') return { code: 'MODEL_NOT_FOUND', message: `${what}: no such revision` };
  if (code === 'EntryNotFound') return { code: 'MODEL_NOT_FOUND', message: `${what}: no such file` };
  if (code === 'RepoNotFound' || status === 401 || status === 404) {
    return {
      code: 'MODEL_NOT_FOUND',
      message: `${what}: no such repository, or a private one the token given cannot read`,
    };
  }
  if (status === 403)
    return { code: 'MODEL_UNAUTHORIZED', message: `the hub refuses ${what} to the token given` };
  return { code: 'MODEL_HUB_UNREACHABLE', message: `the hub answered ${status} for ${what}` };
}

export class HubClient {
  readonly #options: HubClientOptions;

  constructor(options: HubClientOptions) {
    this.#options = options;
  }

  get hubUrl(): string {
    return this.#options.hubUrl;
  }

  async #call(
    url: string,
    method: 'GET' | 'HEAD',
    token: string | null,
    what: string,
  ): Promise<{ headers: Headers; body: Dispatcher.ResponseData['body'] }> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method,
        headers: { 'accept-encoding': 'identity', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        headersTimeout: this.#options.metadataTimeoutMs ?? 10_000,
        ...(this.#options.dispatcher ? { dispatcher: this.#options.dispatcher } : {}),
      });
    } catch (error) {
      throw new ModelRefusedError({
        code: 'MODEL_HUB_UNREACHABLE',
        message: `the hub at ${this.#options.hubUrl} cannot be reached for ${what}: ${(error as Error).message}`,
      });
    }
    if (response.statusCode >= 300 && !(method === 'HEAD' && response.statusCode < 400)) {
      await response.body.dump();
      throw new ModelRefusedError(refusalOf(response.statusCode, response.headers, what));
    }
    return { headers: response.headers, body: response.body };
  }

  /** The commit a revision points to (a commit hash resolves to itself, as the hub answers). */
  async resolveCommit(name: string, revision: string, token: string | null): Promise<string> {
    const what = `model ${name} at ${revision}`;
    const { body } = await this.#call(
      apiUrl(this.#options.hubUrl, name, 'revision', revision),
      'GET',
      token,
      what,
    );
    const info = (await body.json()) as { sha?: unknown };
    if (typeof info.sha !== 'string') {
      throw new ModelRefusedError({
        code: 'MODEL_HUB_UNREACHABLE',
        message: `the hub gave no commit for ${what}`,
      });
    }
    return info.sha;
  }

  /** Every file of a commit, through all pages of the recursive tree. */
  async listFiles(name: string, commit: string, token: string | null): Promise<HubTreeFile[]> {
    const files: HubTreeFile[] = [];
    let next: string | null = `${apiUrl(this.#options.hubUrl, name, 'tree', commit)}?recursive=true`;
    while (next !== null) {
      const { headers, body } = await this.#call(next, 'GET', token, `the files of ${name}`);
      const entries = (await body.json()) as {
        type?: string;
        path?: string;
        size?: number;
        oid?: string;
        lfs?: { oid?: string } | null;
      }[];
      for (const entry of entries) {
        if (entry.type !== 'file' || typeof entry.path !== 'string' || typeof entry.oid !== 'string')
          continue;
        if (!isSafeRepoPath(entry.path)) {
          throw new ModelRefusedError({
            code: 'MODEL_NOT_FOUND',
            message: `${name} holds a path the cache will not write: ${JSON.stringify(entry.path)}`,
          });
        }
        files.push({
          path: entry.path,
          size: entry.size ?? 0,
          blobId: entry.oid,
          sha256: entry.lfs?.oid ?? null,
        });
      }
      const link = header(headers, 'link') ?? '';
      next = /<([^>]+)>;\s*rel="next"/.exec(link)?.[1] ?? null;
    }
    return files;
  }

  /** The client's `get_hf_file_metadata`: a HEAD that follows no redirect to another host. */
  async fileMetadata(
    name: string,
    commit: string,
    path: string,
    token: string | null,
  ): Promise<HubFileMetadata> {
    const url = fileUrl(this.#options.hubUrl, name, commit, path);
    const what = `${name}/${path}`;
    const { headers, body } = await this.#call(url, 'HEAD', token, what);
    await body.dump();
    const etag = normalizeEtag(header(headers, 'x-linked-etag') ?? header(headers, 'etag'));
    const size = Number(header(headers, 'x-linked-size') ?? header(headers, 'content-length'));
    const repoCommit = header(headers, 'x-repo-commit');
    if (!etag || !repoCommit || !Number.isFinite(size)) {
      throw new ModelRefusedError({
        code: 'MODEL_HUB_UNREACHABLE',
        message: `${what}: the answer lacks the hub's X-Repo-Commit, ETag or size (is the hub URL a hub?)`,
      });
    }
    const location = header(headers, 'location');
    return { commit: repoCommit, etag, size, location: location ? new URL(location, url).toString() : url };
  }

  /**
   * Opens a file's bytes from `start`: the token goes only to the hub's own host (a signed URL elsewhere refuses one).
   * `partial` says whether the answer honours the range (a 200 to a range request starts from the first byte).
   */
  async openBytes(
    metadata: HubFileMetadata,
    token: string | null,
    start: number,
  ): Promise<{ body: Dispatcher.ResponseData['body']; partial: boolean }> {
    const sameHost = new URL(metadata.location).host === new URL(this.#options.hubUrl).host;
    const response = await request(metadata.location, {
      method: 'GET',
      headers: {
        ...(sameHost && token ? { authorization: `Bearer ${token}` } : {}),
        ...(start > 0 ? { range: `bytes=${start}-` } : {}),
      },
      ...(this.#options.dispatcher ? { dispatcher: this.#options.dispatcher } : {}),
    });
    if (response.statusCode !== 200 && response.statusCode !== 206) {
      await response.body.dump();
      throw new ModelRefusedError(refusalOf(response.statusCode, response.headers, metadata.location));
    }
    return { body: response.body, partial: response.statusCode === 206 };
  }
}
