/**
 * Header rewriting for the gateway's hot path. Pure functions over Node's flat raw header arrays
 * (`[name, value, name, value, ...]`, as in `IncomingMessage.rawHeaders`), which is also what undici's `dispatch`
 * takes for a request and what `ServerResponse.writeHead` takes for a response: no header object is built, names
 * keep their original case, repeated headers (Set-Cookie) stay separate, and a name is compared without allocating
 * (by length first, then case-insensitively against the few names that matter).
 *
 * Both directions drop the hop-by-hop headers of RFC 9110 section 7.6.1 (Connection, Keep-Alive,
 * Proxy-Authenticate, Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade, plus the non-standard
 * Proxy-Connection) and every header the Connection header names. Message framing is left to the next hop: undici
 * frames the request to the worker, node:http the response to the client.
 */

import { holdsCorralKey } from './corral-keys.js';

/**
 * Set by a replica's gateway on a request it forwards to another replica's gateway (its replica id), so that the
 * receiving one never forwards it again; dropped before a worker sees the request.
 */
export const FORWARDED_BY = 'x-corral-forwarded-by';

/** A header to pass on unchanged. */
const PASS = 0;
/** A hop-by-hop header, or one the gateway replaces: dropped. */
const DROP = 1;
/** Connection: dropped, and the headers it names are dropped too. */
const CONNECTION = 2;
/** Host: dropped (undici sends the worker's), its value becomes X-Forwarded-Host. */
const HOST = 3;
/** X-Forwarded-For: merged, and the client's address appended. */
const FORWARDED_FOR = 4;
/** Authorization: passed or dropped as the request's `AuthorizationPolicy` says. */
const AUTHORIZATION = 5;

type Kind =
  | typeof PASS
  | typeof DROP
  | typeof CONNECTION
  | typeof HOST
  | typeof FORWARDED_FOR
  | typeof AUTHORIZATION;

/**
 * Which Authorization headers go on: none (`drop`: the key was the gateway's to check), those that hold no Corral key
 * (`drop-corral-keys`: a public endpoint's app may do its own authentication), or all (`pass`: to another replica's
 * gateway, which checks the key again). The request itself is never changed: its check's result travels as this.
 */
export type AuthorizationPolicy = 'drop' | 'drop-corral-keys' | 'pass';

/** The policy of a forward that names none: all to another replica's gateway (`toGateway`), none to a worker. */
export function authorizationPolicy(
  named: AuthorizationPolicy | undefined,
  toGateway: object | undefined,
): AuthorizationPolicy {
  return named ?? (toGateway ? 'pass' : 'drop');
}

/** Whether `name` equals `lower` (an all-lowercase ASCII name of the same length) ignoring ASCII case. */
function sameName(name: string, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const c = name.charCodeAt(i);
    const l = lower.charCodeAt(i);
    if (c !== l && !(l >= 97 && l <= 122 && c === l - 32)) return false;
  }
  return true;
}

/**
 * Whether a header is hop-by-hop by definition, whichever the direction (not counting the ones a Connection header
 * names). `name.length` picks the candidates.
 */
export function isHopByHop(name: string): boolean {
  switch (name.length) {
    case 2:
      return sameName(name, 'te');
    case 7:
      return sameName(name, 'upgrade') || sameName(name, 'trailer');
    case 10:
      return sameName(name, 'keep-alive') || sameName(name, 'connection');
    case 16:
      return sameName(name, 'proxy-connection');
    case 17:
      return sameName(name, 'transfer-encoding');
    case 18:
      return sameName(name, 'proxy-authenticate');
    case 19:
      return sameName(name, 'proxy-authorization');
    default:
      return false;
  }
}

function requestKind(name: string): Kind {
  switch (name.length) {
    case 4:
      return sameName(name, 'host') ? HOST : PASS;
    case 6:
      // The client's `Expect: 100-continue` was answered by node:http already; undici refuses to send one.
      return sameName(name, 'expect') ? DROP : PASS;
    case 10:
      if (sameName(name, 'connection')) return CONNECTION;
      return sameName(name, 'keep-alive') ? DROP : PASS;
    case 13:
      return sameName(name, 'authorization') ? AUTHORIZATION : PASS;
    case 15:
      return sameName(name, 'x-forwarded-for') ? FORWARDED_FOR : PASS;
    case 16:
      // X-Forwarded-Host is replaced by the original Host.
      return sameName(name, 'x-forwarded-host') || sameName(name, 'proxy-connection') ? DROP : PASS;
    case 17:
      // X-Forwarded-Proto is replaced by the gateway's own scheme.
      return sameName(name, 'transfer-encoding') || sameName(name, 'x-forwarded-proto') ? DROP : PASS;
    case 21:
      // Which replica's gateway forwarded the request to this one (gateway.ts): never the worker's to see.
      return sameName(name, FORWARDED_BY) ? DROP : PASS;
    case 18:
      // X-Forwarded-Prefix is the gateway's to set (the path form of an endpoint's URL), never the client's.
      return sameName(name, 'x-forwarded-prefix') || isHopByHop(name) ? DROP : PASS;
    default:
      return isHopByHop(name) ? DROP : PASS;
  }
}

/**
 * What the request scan learned on the way, for the proxy (so that it needs no `req.headers` object). The caller
 * passes a mutable object (the proxy passes its per-request state) to avoid an allocation.
 */
export interface RequestHeadInfo {
  /** The first Host header's value, if any. */
  host: string | undefined;
  /** The Content-Length header's value, if any. */
  contentLength: string | undefined;
  /** Whether the request has a Transfer-Encoding header (a body of unknown length). */
  chunked: boolean;
}

/**
 * The headers to send to the worker for a request with raw headers `raw`: hop-by-hop headers, the headers named by
 * Connection, Host, Expect and any X-Forwarded-Host/Proto/Prefix dropped; everything else in order and untouched; then
 * `X-Forwarded-For` (the client's existing values, joined, with `clientAddress` appended), `X-Forwarded-Proto`
 * (`proto`), `X-Forwarded-Host` (the original Host, when there was one) and `X-Forwarded-Prefix` (the path prefix
 * the gateway stripped, for a request to an endpoint's path form). Host itself is not forwarded: undici
 * sends the worker's address, as nginx does by default. Authorization headers go as `authorization` says.
 */
export function forwardRequestHeaders(
  raw: readonly string[],
  clientAddress: string | undefined,
  proto: string,
  info?: RequestHeadInfo,
  forwardedPrefix?: string,
  authorization: AuthorizationPolicy = 'drop',
): string[] {
  const out: string[] = [];
  let connection: string | undefined;
  let host: string | undefined;
  let forwardedFor: string | undefined;
  let contentLength: string | undefined;
  let chunked = false;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    switch (requestKind(name)) {
      case PASS:
        if (name.length === 14 && sameName(name, 'content-length')) contentLength = value;
        out.push(name, value);
        break;
      case DROP:
        if (name.length === 17 && sameName(name, 'transfer-encoding')) chunked = true;
        break;
      case CONNECTION:
        if (!namesNoHeader(value)) connection = connection === undefined ? value : `${connection},${value}`;
        break;
      case HOST:
        if (host === undefined) host = value;
        break;
      case FORWARDED_FOR:
        forwardedFor = forwardedFor === undefined ? value : `${forwardedFor}, ${value}`;
        break;
      case AUTHORIZATION:
        if (authorization === 'pass' || (authorization === 'drop-corral-keys' && !holdsCorralKey(value)))
          out.push(name, value);
        break;
    }
  }
  if (connection !== undefined) dropNamedByConnection(out, connection);
  if (clientAddress) forwardedFor = forwardedFor ? `${forwardedFor}, ${clientAddress}` : clientAddress;
  if (forwardedFor !== undefined) out.push('x-forwarded-for', forwardedFor);
  out.push('x-forwarded-proto', proto);
  if (host !== undefined) out.push('x-forwarded-host', host);
  if (forwardedPrefix !== undefined) out.push('x-forwarded-prefix', forwardedPrefix);
  if (info) {
    info.host = host;
    info.contentLength = contentLength;
    info.chunked = chunked;
  }
  return out;
}

/**
 * The headers to send to the client for a worker's raw response headers (strings, or the Buffers undici's parser
 * gives, read as latin1 so that every byte passes through). Hop-by-hop headers and the headers named by Connection
 * are dropped, as are headers named in `override` (case-insensitively; the gateway's own X-Corral-* headers, which
 * a worker cannot forge); then the `override` headers are appended. node:http adds its own framing and
 * Connection/Keep-Alive headers.
 */
export function filterResponseHeaders(
  raw: readonly (string | Buffer)[],
  override?: Readonly<Record<string, string>>,
): string[] {
  const out: string[] = [];
  let connection: string | undefined;
  const overrideNames = override ? Object.keys(override) : undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const rawName = raw[i] as string | Buffer;
    const name = typeof rawName === 'string' ? rawName : rawName.toString('latin1');
    if (isHopByHop(name)) {
      if (name.length === 10 && sameName(name, 'connection')) {
        const value = raw[i + 1] as string | Buffer;
        const text = typeof value === 'string' ? value : value.toString('latin1');
        if (!namesNoHeader(text)) connection = connection === undefined ? text : `${connection},${text}`;
      }
      continue;
    }
    if (overrideNames !== undefined && namedIn(name, overrideNames)) continue;
    const rawValue = raw[i + 1] as string | Buffer;
    out.push(name, typeof rawValue === 'string' ? rawValue : rawValue.toString('latin1'));
  }
  if (connection !== undefined) dropNamedByConnection(out, connection);
  if (override && overrideNames) {
    for (const name of overrideNames) out.push(name, override[name] as string);
  }
  return out;
}

/** The usual Connection values, which name no header to drop: `keep-alive`, `close`, `upgrade`. */
function namesNoHeader(value: string): boolean {
  switch (value.length) {
    case 5:
      return sameName(value, 'close');
    case 7:
      return sameName(value, 'upgrade');
    case 10:
      return sameName(value, 'keep-alive');
    default:
      return false;
  }
}

function namedIn(name: string, names: readonly string[]): boolean {
  for (const candidate of names) {
    if (candidate.length === name.length && equalIgnoringAsciiCase(candidate, name)) return true;
  }
  return false;
}

/** Whether two names of the same length are equal ignoring ASCII case, without making lowercase copies. */
function equalIgnoringAsciiCase(a: string, b: string): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const lower = x | 32;
    if (lower !== (y | 32) || lower < 97 || lower > 122) return false;
  }
  return true;
}

/**
 * Removes, in place, the headers that a Connection header value names (RFC 9110 section 7.6.1). The common tokens
 * `close`, `keep-alive` and `upgrade` name headers that are dropped already, so the usual request costs one split.
 */
function dropNamedByConnection(headers: string[], connection: string): void {
  let tokens: string[] | undefined;
  for (const part of connection.split(',')) {
    const token = part.trim().toLowerCase();
    if (token === '' || token === 'close' || token === 'keep-alive' || token === 'upgrade') continue;
    if (tokens === undefined) tokens = [];
    tokens.push(token);
  }
  if (tokens === undefined) return;
  let write = 0;
  for (let read = 0; read + 1 < headers.length; read += 2) {
    const name = headers[read] as string;
    if (tokens.includes(name.toLowerCase())) continue;
    headers[write] = name;
    headers[write + 1] = headers[read + 1] as string;
    write += 2;
  }
  headers.length = write;
}
