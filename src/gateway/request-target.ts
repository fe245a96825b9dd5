/**
 * Which endpoint a request names, before routing: exactly one Host header, and a request target that is a path
 * (origin-form) or an http(s) URL naming that same host (absolute-form, RFC 9112 section 3.2.2), which is then
 * forwarded as its path. Anything else is refused with 400 rather than routed by one header and forwarded by another.
 * And the path form of an endpoint's URL, `/e/{appName}/...`, for clients that cannot resolve `*.localhost`.
 */
import { APP_NAME } from '../domain/validate.js';

const PATH_FORM = '/e/';
/** Requests routed by the path form -> the prefix stripped from their path (for X-Forwarded-Prefix). */
const strippedPrefixes = new WeakMap<object, string>();

/** What routing needs of a request: its Host header(s) and its target. */
export interface TargetedRequest {
  url?: string | undefined;
  rawHeaders: readonly string[];
  headers: { host?: string | undefined };
}

/**
 * Why the request cannot be routed as it stands, or undefined. An absolute-form target naming the Host (or with no
 * Host header, which it then supplies) is rewritten in place to its path, so that the worker never sees a URL as a
 * path and routing sees the host the URL names.
 */
export function targetProblem(req: TargetedRequest): string | undefined {
  if (hostHeaders(req.rawHeaders) > 1) return 'the request has more than one Host header';
  const url = req.url ?? '/';
  if (url.charCodeAt(0) === 47 /* '/' */) return undefined;
  const absolute = splitAbsoluteUrl(url);
  if (!absolute) return `the request target ${JSON.stringify(url)} is neither a path nor an http(s) URL`;
  const host = req.headers.host;
  if (host !== undefined && host.toLowerCase() !== absolute.authority.toLowerCase()) {
    return `the request target names ${absolute.authority} but the Host header names ${host}`;
  }
  if (host === undefined) req.headers.host = absolute.authority;
  req.url = absolute.path;
  return undefined;
}

/** How many Host headers a raw header list holds. */
function hostHeaders(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') count += 1;
  }
  return count;
}

/** `http://authority/path?query` -> its authority and origin-form path ('/' when empty); undefined otherwise. */
export function splitAbsoluteUrl(url: string): { authority: string; path: string } | undefined {
  const scheme = /^https?:\/\//i.exec(url);
  if (!scheme) return undefined;
  const rest = url.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  if (authority === '' || authority.includes('@')) return undefined;
  const tail = end === -1 ? '' : rest.slice(end).replace(/#.*$/, '');
  return { authority, path: tail.startsWith('/') ? tail : `/${tail}` };
}

/**
 * The appName of a request to an endpoint's path form, `/e/{appName}` followed by `/`, `?` or nothing; undefined for
 * any other path. The prefix is stripped from `req.url` (the worker sees `/...`) and kept for `forwardedPrefix`.
 */
export function takePathForm(req: { url?: string | undefined }): string | undefined {
  const url = req.url;
  if (url === undefined || !url.startsWith(PATH_FORM)) return undefined;
  const rest = url.slice(PATH_FORM.length);
  const end = rest.search(/[/?]/);
  const appName = (end === -1 ? rest : rest.slice(0, end)).toLowerCase();
  if (!APP_NAME.test(appName)) return undefined;
  const tail = end === -1 ? '' : rest.slice(end);
  req.url = tail.startsWith('/') ? tail : `/${tail}`;
  strippedPrefixes.set(req, `${PATH_FORM}${appName}`);
  return appName;
}

/** The prefix `takePathForm` stripped from this request's path, if it did. */
export function forwardedPrefix(req: object): string | undefined {
  return strippedPrefixes.get(req);
}
