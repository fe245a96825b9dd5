/**
 * Proxies an HTTP Upgrade (WebSocket) as a raw TCP pass-through: connect to the worker with node:net, write the
 * request line and headers (X-Forwarded-* set, hop-by-hop headers other than `Connection: Upgrade` and `Upgrade`
 * dropped), forward the bytes the client already sent (`head`), then copy bytes both ways with backpressure
 * (`pipe`) until either side closes, when the other is closed after its pending writes flush.
 *
 * The worker's response head is read up to its blank line so that the gateway's response headers can be added to
 * it (whatever its status: a worker that refuses the upgrade answers through the same path); everything after it
 * passes untouched.
 *
 * The target may be another replica's gateway instead of a worker (forwarding, docs/operations.md; peer-upgrade.ts):
 * then the request keeps its Host and its whole path (an endpoint's path form included) and says which replica
 * forwarded it (`X-Corral-Forwarded-By`), as proxy.ts does for a request.
 *
 * One `Tunnel` per upgrade, like proxy.ts's `Exchange` per request, goes through four phases:
 * - `connecting`: until the worker's socket connects. A failure here (refused, connect timeout) is `not-sent`:
 *   nothing was written to the client's socket or read from it, and its listeners are taken off again, so that
 *   the caller may try another worker or answer itself. A client that closes now ends it as `client-gone`.
 * - `handshake`: the request head is sent and the client's bytes flow to the worker; the worker's response head is
 *   awaited (at most `handshakeTimeoutMs`, then 504). A worker that fails now gets the client a 502.
 * - `open`: the response head has been passed on and bytes flow both ways. A failure now just closes the client.
 * - `done`: the outcome is resolved, once both sides are closed (or at once for `not-sent`/`client-gone` while
 *   connecting). Events that arrive later change nothing.
 */
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../errors/gateway-catalogue.js';
import { answerUpgrade } from './answer.js';
import {
  type AuthorizationPolicy,
  authorizationPolicy,
  FORWARDED_BY,
  forwardRequestHeaders,
  type RequestHeadInfo,
} from './headers.js';
import { forwardedPrefix } from './request-target.js';

export type UpgradeOutcome =
  /** The worker answered and the connection ran until one side closed it. */
  | 'ok'
  /** The worker could not be reached (refused, connect timeout): nothing was written to `socket`, nothing read
   * from it; the caller may try another worker or answer itself. */
  | 'not-sent'
  /** The worker failed after the request reached it: a 502 was written if it had not answered yet. */
  | 'worker-error'
  /** The worker did not answer the handshake within `handshakeTimeoutMs`: a 504 was written. */
  | 'timeout'
  /** The client closed before the worker answered. */
  | 'client-gone';

export interface UpgradeTarget {
  host: string;
  port: number;
}

export interface ProxyUpgradeOptions {
  /** Default 5000. */
  connectTimeoutMs?: number;
  /** From connected to the worker's whole response head. Default 30 000. */
  handshakeTimeoutMs?: number;
  /** Worker id for error metadata. */
  workerId?: string;
  /** Called once with the worker's status code when its response head is passed on (101, or a refusal). */
  onResponse?: (statusCode: number) => void;
  /**
   * The target is another replica's gateway, not a worker: the request keeps its Host and its whole path, and
   * carries `X-Corral-Forwarded-By: {forwardedBy}`.
   */
  toGateway?: { forwardedBy: string };
  /** Which Authorization headers go on (headers.ts); default: none to a worker, all to another replica's gateway. */
  authorization?: AuthorizationPolicy;
}

/** How long a worker may take to answer the upgrade, by default. */
export const HANDSHAKE_TIMEOUT_MS = 30_000;

/** A worker's response head larger than this is refused. */
const MAX_HEAD_BYTES = 64 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const STATUS_LINE = /^HTTP\/\d(?:\.\d)? (\d{3})/;
/** How long a side may take to flush its last writes once the other side has closed. */
const CLOSE_GRACE_MS = 10_000;

/**
 * Tunnels the upgrade request `req` (from node:http's `upgrade` event, with its `socket` and `head`) to `target`.
 * `responseHeaders` (X-Corral-Worker...) are added to the worker's response head, replacing any of the same name.
 * Resolves when the tunnel is over (or, for `not-sent`, as soon as the worker cannot be reached); never rejects.
 */
export function proxyUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: UpgradeTarget,
  responseHeaders?: Record<string, string>,
  options: ProxyUpgradeOptions = {},
): Promise<UpgradeOutcome> {
  if (socket.destroyed) return Promise.resolve('client-gone');
  return new Tunnel({ ...options, req, socket, head, target, responseHeaders }).start();
}

interface TunnelOptions extends ProxyUpgradeOptions {
  req: IncomingMessage;
  /** The client's socket, from node:http's `upgrade` event. */
  socket: Duplex;
  /** Bytes the client sent after its request head. */
  head: Buffer;
  target: UpgradeTarget;
  responseHeaders: Record<string, string> | undefined;
}

type Phase = 'connecting' | 'handshake' | 'open' | 'done';

class Tunnel {
  readonly #req: IncomingMessage;
  readonly #client: Duplex;
  readonly #head: Buffer;
  readonly #target: UpgradeTarget;
  readonly #responseHeaders: Record<string, string> | undefined;
  readonly #connectTimeoutMs: number;
  readonly #handshakeTimeoutMs: number;
  readonly #workerId: string | undefined;
  readonly #onResponse: ((statusCode: number) => void) | undefined;
  readonly #forwardedBy: string | undefined;
  readonly #authorization: AuthorizationPolicy;
  /** Read before anything happens to the client's socket: a closed one no longer knows it. */
  readonly #clientAddress: string | undefined;
  readonly #proto: 'http' | 'https';
  readonly #upstream = new net.Socket();

  #phase: Phase = 'connecting';
  /** What the tunnel resolves once both sides are closed: `ok` unless something went wrong first. */
  #outcome: UpgradeOutcome = 'ok';
  #upstreamClosed = false;
  #clientClosed = false;
  /** The client sent FIN (node:http sockets are half-open, so 'close' may come much later). */
  #clientEnded = false;
  /** The worker's response head so far, while its blank line has not arrived. */
  #received: Buffer[] = [];
  #receivedBytes = 0;
  /** The connect timeout, then the handshake timeout; none once the tunnel is open. */
  #timer: NodeJS.Timeout | undefined = undefined;
  #resolve: (outcome: UpgradeOutcome) => void = noop;

  constructor(options: TunnelOptions) {
    this.#req = options.req;
    this.#client = options.socket;
    this.#head = options.head;
    this.#target = options.target;
    this.#responseHeaders = options.responseHeaders;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.#handshakeTimeoutMs = options.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
    this.#workerId = options.workerId;
    this.#onResponse = options.onResponse;
    this.#forwardedBy = options.toGateway?.forwardedBy;
    this.#authorization = authorizationPolicy(options.authorization, options.toGateway);
    this.#clientAddress = (options.socket as net.Socket).remoteAddress ?? options.req.socket?.remoteAddress;
    this.#proto = (options.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  }

  start(): Promise<UpgradeOutcome> {
    const promise = new Promise<UpgradeOutcome>((resolve) => {
      this.#resolve = resolve;
    });
    const upstream = this.#upstream;
    upstream.connect({ host: this.#target.host, port: this.#target.port });
    upstream.setNoDelay(true);
    this.#timer = setTimeout(this.#onConnectTimeout, this.#connectTimeoutMs);
    const client = this.#client;
    client.on('error', this.#onClientError);
    client.on('close', this.#onClientClose);
    client.on('end', this.#onClientEnd);
    upstream.on('error', this.#onUpstreamError);
    upstream.on('close', this.#onUpstreamClose);
    upstream.once('connect', this.#onConnected);
    return promise;
  }

  // --- connecting -------------------------------------------------------------------------------------------

  readonly #onConnectTimeout = (): void => {
    this.#timer = undefined;
    if (this.#phase !== 'connecting') return;
    this.#upstream.destroy();
    this.#notSent();
  };

  /** Connected: send the request head and the client's bytes, and wait for the worker's response head. */
  readonly #onConnected = (): void => {
    if (this.#phase !== 'connecting') return;
    this.#phase = 'handshake';
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(this.#onHandshakeTimeout, this.#handshakeTimeoutMs);
    const client = this.#client;
    const upstream = this.#upstream;
    (client as net.Socket).setNoDelay?.(true);
    const head = requestHead(
      this.#req,
      this.#target,
      this.#clientAddress,
      this.#proto,
      this.#forwardedBy,
      this.#authorization,
    );
    upstream.write(head, 'latin1');
    if (this.#head.length > 0) upstream.write(this.#head);
    client.pipe(upstream);
    upstream.on('data', this.#onHeadData);
  };

  // --- handshake --------------------------------------------------------------------------------------------

  readonly #onHandshakeTimeout = (): void => {
    this.#timer = undefined;
    if (this.#phase !== 'handshake') return;
    answerUpgrade(
      this.#client,
      new GatewayError('REQUEST_TIMEOUT', 'The worker did not answer the upgrade in time.', {
        metadata: { workerId: this.#workerId, timeoutMs: this.#handshakeTimeoutMs },
      }),
      this.#responseHeaders,
    );
    this.#outcome = 'timeout';
    this.#upstream.destroy();
  };

  /** Collects the worker's response head until its blank line, then opens the tunnel. */
  readonly #onHeadData = (chunk: Buffer): void => {
    this.#received.push(chunk);
    this.#receivedBytes += chunk.length;
    const all = this.#received.length === 1 ? chunk : Buffer.concat(this.#received, this.#receivedBytes);
    const at = all.indexOf(HEAD_END);
    if (at === -1) {
      this.#received = [all];
      if (this.#receivedBytes > MAX_HEAD_BYTES) {
        this.#upstream.off('data', this.#onHeadData);
        this.#workerFailed('The worker sent a response head that is too large.');
        this.#upstream.destroy();
      }
      return;
    }
    this.#open(all, at);
  };

  // --- open -------------------------------------------------------------------------------------------------

  /** Passes on the response head (`all` up to `at`, the blank line) with the gateway's headers, then the rest. */
  #open(all: Buffer, at: number): void {
    const client = this.#client;
    const upstream = this.#upstream;
    upstream.pause();
    upstream.off('data', this.#onHeadData);
    this.#received = [];
    this.#phase = 'open';
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const headText = all.toString('latin1', 0, at + 2); // status line and header lines, each ending in CRLF
    this.#onResponse?.(Number(STATUS_LINE.exec(headText)?.[1] ?? 0));
    client.write(rewriteResponseHead(headText, this.#responseHeaders), 'latin1');
    if (at + 4 < all.length) client.write(all.subarray(at + 4));
    upstream.pipe(client);
  }

  // --- either side, in every phase --------------------------------------------------------------------------

  readonly #onUpstreamError = (error: Error): void => {
    if (this.#phase === 'connecting') {
      this.#upstream.destroy();
      if (this.#clientClosed) this.#end('client-gone');
      else this.#notSent();
      return;
    }
    if (this.#phase === 'handshake' || this.#phase === 'open') this.#workerFailed(error.message);
  };

  readonly #onUpstreamClose = (): void => {
    this.#upstreamClosed = true;
    // Connecting: 'error' or the connect timer settled it, and the client's socket is the caller's again.
    if (this.#phase === 'connecting' || this.#phase === 'done') return;
    if (this.#phase === 'handshake' && this.#outcome === 'ok') {
      if (this.#clientClosed || this.#clientEnded) {
        this.#outcome = 'client-gone';
        closeAfterFlush(this.#client);
      } else {
        this.#workerFailed('The worker closed the connection before answering the upgrade.');
      }
    } else {
      closeAfterFlush(this.#client);
    }
    this.#settleWhenBothClosed();
  };

  readonly #onClientError = (): void => {
    this.#client.destroy();
  };

  readonly #onClientClose = (): void => {
    this.#clientClosed = true;
    if (this.#phase === 'done') return;
    if (this.#phase === 'connecting') {
      this.#upstream.destroy();
      this.#end('client-gone');
      return;
    }
    if (this.#phase === 'handshake' && this.#outcome === 'ok') this.#outcome = 'client-gone';
    closeAfterFlush(this.#upstream);
    this.#settleWhenBothClosed();
  };

  readonly #onClientEnd = (): void => {
    this.#clientEnded = true;
  };

  // --- endings ----------------------------------------------------------------------------------------------

  /** The worker failed after it got the request: a 502 while the client still waits for an answer, else a cut. */
  #workerFailed(message: string): void {
    if (this.#phase === 'handshake') {
      answerUpgrade(
        this.#client,
        new GatewayError('WORKER_ERROR', message, { metadata: { workerId: this.#workerId } }),
        this.#responseHeaders,
      );
    } else {
      this.#client.destroy();
    }
    this.#outcome = 'worker-error';
  }

  /** The worker cannot be reached: leave the client's socket as it was found, for a retry or an answer. */
  #notSent(): void {
    this.#client.off('error', this.#onClientError);
    this.#client.off('close', this.#onClientClose);
    this.#client.off('end', this.#onClientEnd);
    this.#end('not-sent');
  }

  #settleWhenBothClosed(): void {
    if (this.#upstreamClosed && this.#clientClosed) this.#end(this.#outcome);
  }

  #end(outcome: UpgradeOutcome): void {
    if (this.#phase === 'done') return;
    this.#phase = 'done';
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#resolve(outcome);
  }
}

/**
 * The request line and headers to send to the worker, ending with the blank line; to another replica's gateway
 * (`forwardedBy` set), with the client's Host, the whole path and X-Corral-Forwarded-By.
 */
function requestHead(
  req: IncomingMessage,
  target: UpgradeTarget,
  clientAddress: string | undefined,
  proto: string,
  forwardedBy: string | undefined,
  authorization: AuthorizationPolicy,
): string {
  const info: RequestHeadInfo = { host: undefined, contentLength: undefined, chunked: false };
  const prefix = forwardedPrefix(req);
  const headers = forwardRequestHeaders(req.rawHeaders, clientAddress, proto, info, prefix, authorization);
  const address = target.host.includes(':') ? `[${target.host}]` : target.host;
  let host = `${address}:${target.port}`;
  let path = req.url ?? '/';
  if (forwardedBy !== undefined) {
    // An absolute-form target without a Host header has its host in req.headers only (request-target.ts).
    host = info.host ?? req.headers.host ?? host;
    path = `${prefix ?? ''}${path}`;
    headers.push(FORWARDED_BY, forwardedBy);
  }
  let text = `${req.method ?? 'GET'} ${path} HTTP/1.1\r\nHost: ${host}\r\n`;
  for (let i = 0; i + 1 < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
  const upgrade = req.headers.upgrade;
  text += `Connection: Upgrade\r\n`;
  if (upgrade !== undefined) text += `Upgrade: ${upgrade}\r\n`;
  return `${text}\r\n`;
}

/** Adds `extra` to a response head (status line + header lines, each CRLF-terminated), replacing same names. */
function rewriteResponseHead(head: string, extra: Record<string, string> | undefined): string {
  if (!extra) return `${head}\r\n`;
  const names = Object.keys(extra).map((name) => name.toLowerCase());
  const lines = head.split('\r\n');
  let out = `${lines[0] ?? ''}\r\n`;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon > 0 && names.includes(line.slice(0, colon).trim().toLowerCase())) continue;
    out += `${line}\r\n`;
  }
  for (const [name, value] of Object.entries(extra)) out += `${name}: ${value}\r\n`;
  return `${out}\r\n`;
}

/** Ends a socket's writable side once its queued writes are out, then destroys it; at once if it is broken. */
function closeAfterFlush(stream: Duplex): void {
  if (stream.destroyed) return;
  if (stream.writableFinished || (!stream.writable && !stream.writableEnded)) {
    stream.destroy();
    return;
  }
  stream.once('finish', () => stream.destroy());
  if (!stream.writableEnded) stream.end();
  // A peer that never reads must not hold the tunnel open.
  const fallback = setTimeout(() => stream.destroy(), CLOSE_GRACE_MS);
  fallback.unref();
  stream.once('close', () => clearTimeout(fallback));
}

function noop(): void {}
