/**
 * Asks a registry whether an image can be pulled, without pulling it: `HEAD /v2/<repository>/manifests/<tag>`
 * (registry v2 API) anonymously or with an owner's credentials, by Basic auth or the Bearer token flow that the
 * registry's `WWW-Authenticate` challenge names. HTTP only; the answer is read by `manifestAnswer`. Every
 * connection (the registry, the token endpoint its challenge names) goes only where the registry guard allows, to
 * the address it checked, and follows no redirect; nothing of an answer's body reaches a result.
 */
import { Agent, request } from 'undici';
import { pinnedLookup } from '../net/resolve.js';
import { type ImageReference, registryBaseUrl } from './image-reference.js';
import type { RegistryGuard } from './registry-guard.js';
import { type Challenge, parseWwwAuthenticate } from './www-authenticate.js';

export interface RegistryLogin {
  username: string;
  password: string;
}

/** What the registry said of the manifest. */
export type ManifestResult =
  | { kind: 'found'; digest?: string }
  /** 401/403: the registry wants (other) credentials. */
  | { kind: 'denied'; status: number; withLogin: boolean }
  /** 404: no such repository, tag or digest. */
  | { kind: 'not-found'; detail: string }
  /** No answer, or one that says nothing about access (5xx, 429, a token endpoint that failed). */
  | { kind: 'unreachable'; detail: string }
  /** The registry guard refused the registry or its token endpoint: no connection was made. */
  | { kind: 'refused'; reason: string };

/** The narrow interface the access guard uses (tests may give their own). */
export type ManifestCheck = (ref: ImageReference, login?: RegistryLogin) => Promise<ManifestResult>;

/** Docker's and OCI's manifest and index types: a registry answers 404 to a HEAD that accepts none it has. */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.v1+prettyjws',
].join(', ');

export interface ManifestCheckOptions {
  /** Which hosts may be connected to, and at which address. */
  guard: RegistryGuard;
  /** Per request (connect, headers, body); default 5000 ms. */
  timeoutMs?: number;
}

/** The most of a token endpoint's answer read. */
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;

/** Thrown inside a check when the guard refuses a host; becomes the `refused` result. */
class Refused extends Error {}

/** A `ManifestCheck` over undici. */
export function registryManifestCheck(options: ManifestCheckOptions): ManifestCheck {
  const timeoutMs = options.timeoutMs ?? 5000;
  const send: Send = (url, init) => guardedRequest(options.guard, url, init, timeoutMs);
  return async (ref, login) => {
    const base = registryBaseUrl(ref.registry);
    const url = `${base}/v2/${ref.repository}/manifests/${ref.digest ?? ref.tag}`;
    try {
      const first = await head(send, url, {});
      if (first.status !== 401) return manifestAnswer(first.status, first.headers, login !== undefined);
      const challenge = pickChallenge(parseWwwAuthenticate(first.headers['www-authenticate'] ?? ''));
      if (!challenge) return manifestAnswer(401, first.headers, login !== undefined);
      let authorization: string;
      if (challenge.scheme === 'basic') {
        // Anonymous and refused: without credentials that is the answer.
        if (!login) return manifestAnswer(401, first.headers, false);
        authorization = basic(login);
      } else {
        const token = await bearerToken(send, challenge, ref, login);
        if (typeof token !== 'string') return token;
        authorization = `Bearer ${token}`;
      }
      const second = await head(send, url, { authorization });
      return manifestAnswer(second.status, second.headers, login !== undefined);
    } catch (error) {
      if (error instanceof Refused) return { kind: 'refused', reason: error.message };
      return { kind: 'unreachable', detail: `${base}: ${describe(error)}` };
    }
  };
}

type Send = (
  url: string,
  init: { method: 'GET' | 'HEAD'; headers: Record<string, string> },
) => Promise<{ status: number; headers: Record<string, string | undefined>; body: Buffer }>;

/** One request where the guard allows, connected to the address it checked; the body read up to a bound. */
async function guardedRequest(
  guard: RegistryGuard,
  url: string,
  init: { method: 'GET' | 'HEAD'; headers: Record<string, string> },
  timeoutMs: number,
): ReturnType<Send> {
  const target = new URL(url);
  const connection = await guard.check(target.host);
  if (connection.kind === 'refused') throw new Refused(connection.reason);
  // No address: as unreachable as a connection refused (a create is accepted and checked again at the start).
  if (connection.kind === 'unresolved')
    throw Object.assign(new Error(connection.reason), { code: 'ENOTFOUND' });
  const dispatcher = new Agent({
    connect: connection.address ? { lookup: pinnedLookup(connection.address) } : {},
  });
  try {
    const response = await request(url, {
      ...init,
      dispatcher,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_TOKEN_ANSWER_BYTES) break;
      chunks.push(chunk as Buffer);
    }
    const flat: Record<string, string | undefined> = {};
    for (const [key, value] of Object.entries(response.headers)) {
      flat[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
    return { status: response.statusCode, headers: flat, body: Buffer.concat(chunks) };
  } finally {
    void dispatcher.destroy().catch(() => {});
  }
}

/** Reads a manifest HEAD's status; `withLogin` says whose refusal it was, for the message. */
export function manifestAnswer(
  status: number,
  headers: Record<string, string | undefined>,
  withLogin: boolean,
): ManifestResult {
  if (status >= 200 && status < 300) {
    const digest = headers['docker-content-digest'];
    return { kind: 'found', ...(digest ? { digest } : {}) };
  }
  if (status === 401 || status === 403) {
    return { kind: 'denied', status, withLogin };
  }
  if (status === 404)
    return { kind: 'not-found', detail: 'the registry has no such image or tag (HTTP 404)' };
  return { kind: 'unreachable', detail: `the registry answered HTTP ${status}` };
}

/** Bearer first (it works anonymously for public images), Basic otherwise. */
export function pickChallenge(challenges: Challenge[]): Challenge | undefined {
  return (
    challenges.find((c) => c.scheme === 'bearer' && c.params.realm) ??
    challenges.find((c) => c.scheme === 'basic')
  );
}

/** The token endpoint's URL for pulling this repository. */
export function tokenUrl(challenge: Challenge, ref: ImageReference): string {
  const url = new URL(challenge.params.realm ?? '');
  if (challenge.params.service) url.searchParams.set('service', challenge.params.service);
  url.searchParams.set('scope', `repository:${ref.repository}:pull`);
  return url.toString();
}

async function bearerToken(
  send: Send,
  challenge: Challenge,
  ref: ImageReference,
  login: RegistryLogin | undefined,
): Promise<string | ManifestResult> {
  let url: string;
  try {
    url = tokenUrl(challenge, ref);
  } catch {
    return { kind: 'unreachable', detail: 'the registry named a token endpoint that is not a URL' };
  }
  const response = await send(url, { method: 'GET', headers: login ? { authorization: basic(login) } : {} });
  if (response.status === 401 || response.status === 403) {
    return manifestAnswer(response.status, {}, login !== undefined);
  }
  if (response.status !== 200) {
    return { kind: 'unreachable', detail: `the token endpoint answered HTTP ${response.status}` };
  }
  const token = tokenOf(response.body);
  if (token === undefined) return { kind: 'unreachable', detail: 'the token endpoint gave no token' };
  return token;
}

/** The token of a token endpoint's JSON answer; undefined for anything else (whose text is never repeated). */
function tokenOf(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { token?: unknown; access_token?: unknown } | null;
    const token = parsed?.token ?? parsed?.access_token;
    return typeof token === 'string' && token !== '' ? token : undefined;
  } catch {
    return undefined;
  }
}

async function head(
  send: Send,
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | undefined> }> {
  const response = await send(url, { method: 'HEAD', headers: { accept: MANIFEST_ACCEPT, ...headers } });
  return { status: response.status, headers: response.headers };
}

function basic(login: RegistryLogin): string {
  return `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}`;
}

/** A failed request in a few fixed words: its error code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT), never its text. */
function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]+$/.test(code)) return code;
  return (error as { name?: unknown } | null)?.name === 'TimeoutError' ? 'no answer in time' : 'no answer';
}
