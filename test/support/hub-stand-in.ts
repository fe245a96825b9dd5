/**
 * A stand-in of the Hugging Face hub's file API on two real HTTP servers (127.0.0.1, port 0), speaking it as the hub
 * does for `huggingface_hub` (file_download.py, hf_api.py, utils/_http.py): the hub answers
 * `HEAD|GET /{org}/{name}/resolve/{revision}/{path}` (revision URL-quoted, so `refs%2Fpr%2F1`) with `X-Repo-Commit`
 * and an ETag (the git blob sha1); a large (LFS) file answers with a 302 to a signed URL on the second server (the
 * "CDN", another host:port, so clients drop their token) with `X-Linked-Etag` (its sha256) and `X-Linked-Size`; the CDN
 * refuses a request that carries an Authorization header as S3 does, honours `Range`, and can be slowed, paused or made
 * to cut a connection mid-file. `GET /api/models/{repo}[/revision/{rev}]` (model info: `sha`, `siblings`, `gated`) and
 * `GET /api/models/{repo}/tree/{rev}?recursive=true` (paged through `Link: rel="next"`). Refusals carry the hub's
 * `X-Error-Code`: `RepoNotFound` (401 without a token, 404 with one), `RevisionNotFound`, `EntryNotFound` (with
 * `X-Repo-Commit`), `GatedRepo` (401 without a token, 403 with one that has no access; model info and tree stay open);
 * an unknown token is 401 `Invalid credentials in Authorization header`. The models are generated (hub-content.ts).
 */
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  generatedModel,
  type HubCommit,
  type HubFile,
  type HubModel,
  type HubModelOptions,
  settleBlobIds,
} from './hub-content.js';

export type { HubModelOptions } from './hub-content.js';

/** One request either server answered, for tests that check what was asked and with which credentials. */
export interface HubRequest {
  server: 'hub' | 'cdn';
  method: string;
  path: string;
  authorization: string | null;
  range: string | null;
  /** 0 while the answer is under way. */
  status: number;
}

export interface HubStandInOptions {
  models: HubModelOptions[];
  /** Entries per page of a tree listing before a `Link: rel="next"`. */
  treePageSize?: number;
  /** Tokens the hub knows besides those the models grant (a known token without access meets 403, not 401). */
  tokens?: string[];
  /** Bytes per second the CDN sends each body at; unlimited when absent. */
  bytesPerSecond?: number;
  /** The address both servers listen on; 127.0.0.1 when absent (a cluster's pods need one of its bridges). */
  host?: string;
}

export interface HubStandIn {
  /** The hub's address (what `HF_ENDPOINT` names). */
  url: string;
  /** The CDN's address: large files' bytes come from here. */
  cdnUrl: string;
  requests: HubRequest[];
  /** Bytes of LFS file content the CDN has sent, over all requests. */
  cdnBytesSent(): number;
  /** What a model's revision is on the hub: its commit and files (LFS files' sha256 computed). */
  describe(name: string, revision?: string): Promise<{ commit: string; files: HubFileFacts[] }>;
  setBytesPerSecond(rate: number | null): void;
  /** Cuts the next CDN body (of the file with this sha256, or any) after `afterBytes` bytes, closing its socket. */
  cutNextDownload(afterBytes: number, sha256?: string): void;
  /** Holds every CDN body where it is until `resume` (the request stays open). */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export interface HubFileFacts {
  path: string;
  size: number;
  blobId: string;
  sha256: string | null;
}

const INVALID_TOKEN = 'Invalid credentials in Authorization header';
const SIGNING_KEY = 'hub-stand-in';

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
  ) {
    super(`${status}`);
  }
}

function tokenOf(request: IncomingMessage): string | null {
  const header = request.headers.authorization;
  return header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : null;
}

/** `bytes=a-b` or `bytes=a-` as [start, end) within `size`; null for none or one the stand-in does not serve. */
function parseRange(header: string | undefined, size: number): [number, number] | null {
  const match = header === undefined ? null : /^bytes=(\d+)-(\d*)$/.exec(header);
  if (!match) return null;
  const start = Number(match[1]);
  const end = match[2] === '' ? size : Math.min(size, Number(match[2]) + 1);
  return start < end ? [start, end] : null;
}

export async function startHubStandIn(options: HubStandInOptions): Promise<HubStandIn> {
  const models = new Map(options.models.map((model) => [model.name, generatedModel(model)]));
  const knownTokens = new Set([
    ...(options.tokens ?? []),
    ...[...models.values()].flatMap((model) => (model.access.kind === 'public' ? [] : model.access.tokens)),
  ]);
  const requests: HubRequest[] = [];
  const lfsBySha = new Map<string, Extract<HubFile, { kind: 'lfs' }>>();
  let bytesPerSecond = options.bytesPerSecond ?? null;
  let cdnBytesSent = 0;
  let cut: { afterBytes: number; sha256: string | undefined } | null = null;
  let paused: { promise: Promise<void>; release: () => void } | null = null;

  /** Listed as it arrives (so a test sees a download in flight); its status is the final one once it closes. */
  function record(server: HubRequest['server'], request: IncomingMessage, response: ServerResponse): void {
    const entry: HubRequest = {
      server,
      method: request.method ?? '',
      path: request.url ?? '',
      authorization: request.headers.authorization ?? null,
      range: request.headers.range ?? null,
      status: 0,
    };
    requests.push(entry);
    response.on('close', () => {
      entry.status = response.statusCode;
    });
  }

  /** The model, refusing as the hub does when the caller may not see it at all. */
  function visibleModel(name: string, token: string | null): HubModel {
    if (token !== null && !knownTokens.has(token))
      throw new Refusal(401, { 'X-Error-Message': INVALID_TOKEN });
    const model = models.get(name);
    const allowed =
      model !== undefined &&
      (model.access.kind !== 'private' || (token !== null && model.access.tokens.includes(token)));
    if (!model || !allowed) throw new Refusal(token === null ? 401 : 404, { 'X-Error-Code': 'RepoNotFound' });
    return model;
  }

  function commitOf(model: HubModel, revision: string): HubCommit {
    const commit =
      model.revisions.get(revision) ??
      [...model.revisions.values()].find((candidate) => candidate.sha === revision);
    if (!commit) throw new Refusal(404, { 'X-Error-Code': 'RevisionNotFound' });
    return commit;
  }

  function signedLocation(sha256: string): string {
    const expires = String(Math.floor(Date.now() / 1000) + 3600);
    const signature = createHmac('sha256', SIGNING_KEY).update(`${sha256}:${expires}`).digest('hex');
    return `${cdnUrl}/lfs/${sha256}?X-Expires=${expires}&X-Signature=${signature}`;
  }

  async function resolveFile(
    request: IncomingMessage,
    response: ServerResponse,
    parts: string[],
  ): Promise<void> {
    // The client quotes the revision; a raw `refs/pr/N` is taken too, as the hub does.
    const rawRevision =
      parts[3] === 'refs' && parts.length > 6 ? parts.slice(3, 6).join('/') : (parts[3] ?? '');
    const fileParts = parts.slice(rawRevision.includes('/') ? 6 : 4);
    const token = tokenOf(request);
    const model = visibleModel(`${parts[0]}/${parts[1]}`, token);
    const commit = commitOf(model, decodeURIComponent(rawRevision));
    const path = fileParts.map(decodeURIComponent).join('/');
    const file = commit.files.find((candidate) => candidate.path === path);
    if (!file) throw new Refusal(404, { 'X-Error-Code': 'EntryNotFound', 'X-Repo-Commit': commit.sha });
    if (model.access.kind === 'gated' && (token === null || !model.access.tokens.includes(token))) {
      throw new Refusal(token === null ? 401 : 403, { 'X-Error-Code': 'GatedRepo' });
    }
    response.setHeader('X-Repo-Commit', commit.sha);
    if (file.kind === 'lfs') {
      await settleBlobIds([file]);
      const sha256 = await file.sha256();
      lfsBySha.set(sha256, file);
      response.writeHead(302, {
        Location: signedLocation(sha256),
        ETag: `"${file.blobId}"`,
        'X-Linked-Etag': `"${sha256}"`,
        'X-Linked-Size': String(file.size),
        'Content-Length': '0',
      });
      response.end();
      return;
    }
    const range = parseRange(request.headers.range, file.size);
    const [start, end] = range ?? [0, file.size];
    response.writeHead(range ? 206 : 200, {
      ETag: `"${file.blobId}"`,
      'Content-Length': String(end - start),
      'Content-Type': 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      ...(range ? { 'Content-Range': `bytes ${start}-${end - 1}/${file.size}` } : {}),
    });
    response.end(request.method === 'HEAD' ? undefined : file.content.subarray(start, end));
  }

  async function modelApi(
    request: IncomingMessage,
    response: ServerResponse,
    parts: string[],
  ): Promise<void> {
    // parts: api, models, org, name, ('revision' | 'tree'), revision...
    const model = visibleModel(`${parts[2]}/${parts[3]}`, tokenOf(request));
    const gated = model.access.kind === 'gated' ? 'manual' : false;
    const action = parts[4];
    const commit = commitOf(model, decodeURIComponent(parts[5] ?? 'main'));
    if (action === undefined || action === 'revision') {
      sendJson(response, {
        _id: commit.sha.slice(0, 24),
        id: model.name,
        modelId: model.name,
        sha: commit.sha,
        private: model.access.kind === 'private',
        gated,
        disabled: false,
        tags: [],
        siblings: commit.files.map((file) => ({ rfilename: file.path })),
      });
      return;
    }
    if (action !== 'tree') throw new Refusal(404, {});
    await settleBlobIds(commit.files);
    const entries = await Promise.all(commit.files.map(treeEntry));
    const url = new URL(request.url ?? '/', 'http://hub');
    const cursor = Number(url.searchParams.get('cursor') ?? '0');
    const pageSize = options.treePageSize ?? 1000;
    const page = entries.slice(cursor, cursor + pageSize);
    if (cursor + pageSize < entries.length) {
      url.searchParams.set('cursor', String(cursor + pageSize));
      response.setHeader('Link', `<${hubUrl}${url.pathname}${url.search}>; rel="next"`);
    }
    sendJson(response, page);
  }

  async function treeEntry(file: HubFile): Promise<Record<string, unknown>> {
    const entry = { type: 'file', oid: file.blobId, size: file.size, path: file.path };
    if (file.kind === 'small') return entry;
    return { ...entry, lfs: { oid: await file.sha256(), size: file.size, pointerSize: file.pointerSize } };
  }

  async function serveLfs(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://cdn');
    const sha256 = url.pathname.split('/')[2] ?? '';
    const expires = url.searchParams.get('X-Expires') ?? '';
    const expected = createHmac('sha256', SIGNING_KEY).update(`${sha256}:${expires}`).digest('hex');
    const file = lfsBySha.get(sha256);
    if (request.headers.authorization !== undefined) {
      // S3 and CloudFront refuse a signed URL that also carries a token; the client must drop it.
      throw new Refusal(400, { 'X-Error-Message': 'Only one auth mechanism allowed' });
    }
    if (!file || url.searchParams.get('X-Signature') !== expected || Number(expires) * 1000 < Date.now()) {
      throw new Refusal(403, { 'X-Error-Message': 'Access denied' });
    }
    const range = parseRange(request.headers.range, file.size);
    const [start, end] = range ?? [0, file.size];
    response.writeHead(range ? 206 : 200, {
      'Content-Length': String(end - start),
      'Content-Type': 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      ETag: `"${sha256}"`,
      ...(range ? { 'Content-Range': `bytes ${start}-${end - 1}/${file.size}` } : {}),
    });
    if (request.method === 'HEAD') {
      response.end();
      return;
    }
    const cutAfter = cut && (cut.sha256 === undefined || cut.sha256 === sha256) ? cut.afterBytes : null;
    if (cutAfter !== null) cut = null;
    const began = Date.now();
    let sent = 0;
    for (const chunk of file.read(start, end)) {
      if (paused) await paused.promise;
      if (response.destroyed) return;
      if (cutAfter !== null && sent + chunk.length >= cutAfter) {
        cdnBytesSent += cutAfter - sent;
        // Destroyed once the bytes are flushed: a destroy right away would drop them (and the headers) unsent.
        await new Promise<void>((resolve) =>
          response.write(chunk.subarray(0, cutAfter - sent), () => resolve()),
        );
        response.socket?.destroy();
        return;
      }
      if (!response.write(chunk)) await drained(response);
      sent += chunk.length;
      cdnBytesSent += chunk.length;
      if (bytesPerSecond !== null) {
        const due = began + (sent / bytesPerSecond) * 1000;
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
      }
    }
    response.end();
  }

  function handler(
    server: HubRequest['server'],
    route: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  ) {
    return (request: IncomingMessage, response: ServerResponse): void => {
      record(server, request, response);
      route(request, response).catch((error: unknown) => {
        if (response.headersSent) {
          response.destroy();
          return;
        }
        const refusal = error instanceof Refusal ? error : new Refusal(500, {});
        const message = refusal.headers['X-Error-Message'] ?? refusal.headers['X-Error-Code'] ?? 'error';
        response.writeHead(refusal.status, { ...refusal.headers, 'Content-Type': 'application/json' });
        response.end(request.method === 'HEAD' ? undefined : JSON.stringify({ error: message }));
      });
    };
  }

  const hub = createServer(
    handler('hub', async (request, response) => {
      const parts = (request.url ?? '/').split('?')[0]?.split('/').slice(1) ?? [];
      if (parts[0] === 'api' && parts[1] === 'models') return modelApi(request, response, parts);
      if (parts[2] === 'resolve') return resolveFile(request, response, parts);
      throw new Refusal(404, {});
    }),
  );
  const cdn = createServer(handler('cdn', serveLfs));
  const hubUrl = await listen(hub, options.host);
  const cdnUrl = await listen(cdn, options.host);

  return {
    url: hubUrl,
    cdnUrl,
    requests,
    cdnBytesSent: () => cdnBytesSent,
    async describe(name, revision = 'main') {
      const model = models.get(name);
      if (!model) throw new Error(`no model ${name} in the stand-in`);
      const commit = commitOf(model, revision);
      await settleBlobIds(commit.files);
      const files = await Promise.all(
        commit.files.map(async (file) => ({
          path: file.path,
          size: file.size,
          blobId: file.blobId,
          sha256: file.kind === 'lfs' ? await file.sha256() : null,
        })),
      );
      return { commit: commit.sha, files };
    },
    setBytesPerSecond(rate) {
      bytesPerSecond = rate;
    },
    cutNextDownload(afterBytes, sha256) {
      cut = { afterBytes, sha256 };
    },
    pause() {
      if (paused) return;
      let release = (): void => {};
      const promise = new Promise<void>((resolve) => {
        release = resolve;
      });
      paused = { promise, release };
    },
    resume() {
      paused?.release();
      paused = null;
    },
    async close() {
      paused?.release();
      for (const server of [hub, cdn]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

/** Until the body may be written again, or the connection is gone (listeners removed: one per chunk adds up). */
function drained(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}

function sendJson(response: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(200, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
  });
  response.end(text);
}

async function listen(server: Server, host = '127.0.0.1'): Promise<string> {
  server.listen(0, host);
  await once(server, 'listening');
  return `http://${host}:${(server.address() as AddressInfo).port}`;
}
