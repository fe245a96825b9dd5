/**
 * Asks a registry whether an image can be pulled, without pulling it: `HEAD /v2/<repository>/manifests/<tag>`
 * (registry v2 API) anonymously or with an owner's credentials, by Basic auth or the Bearer token flow that the
 * registry's `WWW-Authenticate` challenge names. HTTP only; the answer is read by `manifestAnswer`.
 */
import { request } from 'undici';
import { type ImageReference, registryBaseUrl } from './image-reference.js';
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
  | { kind: 'unreachable'; detail: string };

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
  /** Per request (connect, headers, body); default 5000 ms. */
  timeoutMs?: number;
}

/** A `ManifestCheck` over undici. */
export function registryManifestCheck(options: ManifestCheckOptions = {}): ManifestCheck {
  const timeoutMs = options.timeoutMs ?? 5000;
  return async (ref, login) => {
    const url = `${registryBaseUrl(ref.registry)}/v2/${ref.repository}/manifests/${ref.digest ?? ref.tag}`;
    try {
      const first = await head(url, {}, timeoutMs);
      if (first.status !== 401) return manifestAnswer(first.status, first.headers, login !== undefined);
      const challenge = pickChallenge(parseWwwAuthenticate(first.headers['www-authenticate'] ?? ''));
      if (!challenge) return manifestAnswer(401, first.headers, login !== undefined);
      let authorization: string;
      if (challenge.scheme === 'basic') {
        // Anonymous and refused: without credentials that is the answer.
        if (!login) return manifestAnswer(401, first.headers, false);
        authorization = basic(login);
      } else {
        const token = await bearerToken(challenge, ref, login, timeoutMs);
        if (typeof token !== 'string') return token;
        authorization = `Bearer ${token}`;
      }
      const second = await head(url, { authorization }, timeoutMs);
      return manifestAnswer(second.status, second.headers, login !== undefined);
    } catch (error) {
      return { kind: 'unreachable', detail: `${registryBaseUrl(ref.registry)}: ${describe(error)}` };
    }
  };
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
  challenge: Challenge,
  ref: ImageReference,
  login: RegistryLogin | undefined,
  timeoutMs: number,
): Promise<string | ManifestResult> {
  const response = await request(tokenUrl(challenge, ref), {
    method: 'GET',
    headers: login ? { authorization: basic(login) } : {},
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.body.text();
  if (response.statusCode === 401 || response.statusCode === 403) {
    return manifestAnswer(response.statusCode, {}, login !== undefined);
  }
  if (response.statusCode !== 200) {
    return { kind: 'unreachable', detail: `the token endpoint answered HTTP ${response.statusCode}` };
  }
  const body = JSON.parse(text) as { token?: unknown; access_token?: unknown };
  const token = body.token ?? body.access_token;
  if (typeof token !== 'string' || token === '') {
    return { kind: 'unreachable', detail: 'the token endpoint gave no token' };
  }
  return token;
}

async function head(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; headers: Record<string, string | undefined> }> {
  const response = await request(url, {
    method: 'HEAD',
    headers: { accept: MANIFEST_ACCEPT, ...headers },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  await response.body.dump();
  const flat: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(response.headers)) {
    flat[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return { status: response.statusCode, headers: flat };
}

function basic(login: RegistryLogin): string {
  return `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}`;
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' && !message.includes(code) ? `${code} ${message}` : message;
}
