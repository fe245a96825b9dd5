/**
 * Forwards one HTTP request from a node:http server to a worker through an undici pool, streaming both ways.
 *
 * The hot path is undici's low-level `dispatch` with one handler object per request: the request body is the
 * `IncomingMessage` itself (undici pipes it to the socket with backpressure, nothing is buffered), request headers
 * go as a flat array built from `req.rawHeaders` (see headers.ts), and the response goes to `res` chunk by chunk as
 * undici parses it, with undici's socket paused while `res` is over its high-water mark. No `req.headers` object,
 * no intermediate streams, one timer.
 *
 * Retry safety. The outcome is `not-sent` only when undici never started the request: `onConnect` runs just
 * before the first byte is written to a connected socket, so an error before it (connection refused or reset while
 * connecting, connect timeout, a pool closed by `WorkerPools.drop`) means the worker saw nothing and the body was
 * not read (undici only listens for its `error` event until then). The caller may then call `proxyRequest` again
 * with the same `req`/`res` on another worker, with the remaining time as `requestTimeoutMs`. Any failure after
 * `onConnect` is `worker-error` and must not be retried, even for a GET (a keep-alive socket the worker closed
 * under us is the classic case; `WorkerPools` keeps idle sockets for less time than workers do to make it rare).
 *
 * After a request with a body, `req.socket` may be null: undici destroys the consumed body and detaches the
 * socket first so that the client connection survives (use `res.socket`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import { bodyTooLarge, GatewayError } from '../errors/gateway-catalogue.js';
import { answer } from './answer.js';
import {
  type AuthorizationPolicy,
  authorizationPolicy,
  FORWARDED_BY,
  filterResponseHeaders,
  forwardRequestHeaders,
  type RequestHeadInfo,
} from './headers.js';
import { forwardedPrefix } from './request-target.js';

export type ProxyOutcome =
  /** The worker's response was passed on in full. */
  | 'ok'
  /** The request never reached the worker; nothing was written to `res` or read from `req`: retry elsewhere. */
  | 'not-sent'
  /** Failed after the worker got the request: a 502 WORKER_ERROR was sent, or the started response aborted. */
  | 'worker-error'
  /** `requestTimeoutMs` passed: a 504 REQUEST_TIMEOUT was sent, or the started response aborted. */
  | 'timeout'
  /** The client disconnected first; the upstream request was aborted and nothing more is written. */
  | 'client-gone'
  /** The body is larger than `bodyLimitBytes`: a 413 BODY_TOO_LARGE was sent (or the started response aborted). */
  | 'body-too-large'
  /** undici refused the request as malformed (node:http's parser lets almost nothing through): a 400 was sent. */
  | 'bad-request';

/** The worker a request goes to, as the dispatcher leases it. */
export interface ProxyTarget {
  id: string;
  address?: { host: string; port: number };
}

export interface ProxyRequestOptions {
  req: IncomingMessage;
  res: ServerResponse;
  /** The worker's pool (`WorkerPools.get`); any undici Dispatcher for this one origin. */
  pool: Dispatcher;
  target: ProxyTarget;
  /**
   * The whole exchange must finish within this many ms, streaming included (a response already started is
   * aborted). 0 or less: no limit. undici's own headers/body timeouts are turned off for the request.
   */
  requestTimeoutMs: number;
  /** Headers for the client's response, whatever it is (X-Corral-Worker, X-Corral-Queue-Ms...). A worker's own
   * headers of the same names are dropped. */
  responseHeaders?: Record<string, string>;
  /** Largest request body accepted, in bytes: a larger Content-Length gets a 413 at once, a longer chunked body is
   * cut off when it passes the limit. Undefined: no limit. */
  bodyLimitBytes?: number;
  /**
   * The target is another replica's gateway, not a worker (forwarding, docs/operations.md): the request keeps its
   * Host and its whole path (an endpoint's path form included), and says which replica forwarded it.
   */
  toGateway?: { forwardedBy: string };
  /** Which Authorization headers go on (headers.ts); default: none to a worker, all to another replica's gateway. */
  authorization?: AuthorizationPolicy;
}

/** Node clamps longer timer delays to 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/** Abort reasons, made once: undici hands them back to this file's handler only. */
const CLIENT_GONE = new Error('client disconnected');
const ABORT_REASONS = {
  timeout: new Error('request timeout'),
  'client-gone': CLIENT_GONE,
  'body-too-large': new Error('request body too large'),
  'worker-error': new Error('unusable worker response'),
} as const;

/**
 * Whether a Content-Length is over the limit, for a caller that wants to answer 413 before queueing. (node:http
 * has built `req.headers` already, for its own Host and TE checks.)
 */
export function contentLengthExceeds(req: IncomingMessage, bodyLimitBytes: number | undefined): boolean {
  if (bodyLimitBytes === undefined) return false;
  const value = req.headers['content-length'];
  return value !== undefined && Number(value) > bodyLimitBytes;
}

/** Proxies `req` to the worker behind `pool` and resolves how it ended; never rejects. */
export function proxyRequest(options: ProxyRequestOptions): Promise<ProxyOutcome> {
  return new Exchange(options).start();
}

class Exchange implements Dispatcher.DispatchHandler, RequestHeadInfo {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly pool: Dispatcher;
  readonly target: ProxyTarget;
  readonly requestTimeoutMs: number;
  readonly responseHeaders: Record<string, string> | undefined;
  readonly bodyLimitBytes: number | undefined;
  readonly toGateway: { forwardedBy: string } | undefined;
  readonly authorization: AuthorizationPolicy;
  /** The client connection, kept because undici may null `req.socket`. */
  readonly clientSocket: Socket;

  // RequestHeadInfo, filled in by forwardRequestHeaders.
  host: string | undefined = undefined;
  contentLength: string | undefined = undefined;
  chunked = false;

  /** undici's abort for this request; set when the request starts on a connection (nothing is sent before). */
  abort: ((error: Error) => void) | null = null;
  /** undici's resume for a paused response. */
  resumeResponse: (() => void) | null = null;
  settled = false;
  bodyWritten = false;
  waitingDrain = false;
  bodyBytes = 0;
  timer: NodeJS.Timeout | undefined = undefined;
  resolve: (outcome: ProxyOutcome) => void = noop;

  constructor(options: ProxyRequestOptions) {
    this.req = options.req;
    this.res = options.res;
    this.pool = options.pool;
    this.target = options.target;
    this.requestTimeoutMs = options.requestTimeoutMs;
    this.responseHeaders = options.responseHeaders;
    this.bodyLimitBytes = options.bodyLimitBytes;
    this.toGateway = options.toGateway;
    this.authorization = authorizationPolicy(options.authorization, options.toGateway);
    this.clientSocket = options.req.socket;
  }

  start(): Promise<ProxyOutcome> {
    const { req, res } = this;
    const promise = new Promise<ProxyOutcome>((resolve) => {
      this.resolve = resolve;
    });
    const socket = this.clientSocket;
    if (socket.destroyed || res.destroyed) {
      this.settle('client-gone');
      return promise;
    }
    const headers = forwardRequestHeaders(
      req.rawHeaders,
      socket.remoteAddress,
      (socket as { encrypted?: boolean }).encrypted ? 'https' : 'http',
      this,
      forwardedPrefix(req),
      this.authorization,
    );
    const limit = this.bodyLimitBytes;
    if (limit !== undefined && this.contentLength !== undefined && Number(this.contentLength) > limit) {
      this.settle('body-too-large');
      this.respond(bodyTooLarge(limit));
      return promise;
    }
    let path = req.url ?? '/';
    if (this.toGateway) {
      if (this.host !== undefined) headers.push('host', this.host);
      headers.push(FORWARDED_BY, this.toGateway.forwardedBy);
      path = `${forwardedPrefix(req) ?? ''}${path}`;
    }
    const hasBody = this.chunked || (this.contentLength !== undefined && this.contentLength !== '0');
    res.on('close', this.onClientClose);
    if (this.requestTimeoutMs > 0) {
      this.timer = setTimeout(onRequestTimeout, Math.min(this.requestTimeoutMs, MAX_TIMER_MS), this);
    }
    this.pool.dispatch(
      {
        path,
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers,
        body: hasBody ? req : null,
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      this,
    );
    return promise;
  }

  // --- undici handler -----------------------------------------------------------------------------------------
  // undici 7's own request()/stream() implement this interface (onConnect, onHeaders, onData, onComplete, onError)
  // and its client calls it directly; the newer onRequestStart/onResponse* style is adapted to it with a wrapper,
  // a controller and a parsed header object per request, which the hot path does without.

  onConnect(abort: (error?: Error) => void): void {
    if (this.settled) {
      // Timed out or the client left while the request waited for a connection: never send it.
      abort(CLIENT_GONE);
      return;
    }
    this.abort = abort;
    if (this.chunked && this.bodyLimitBytes !== undefined) {
      // Counted alongside undici's own 'data' listener, which it adds right after this call, so no chunk is missed
      // and the stream does not start flowing before undici reads it. A Content-Length body needs no count:
      // node:http never delivers more than the declared length.
      this.countBody = this.makeCountBody();
      this.req.on('data', this.countBody);
    }
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    if (this.settled || statusCode < 200) return true; // 1xx (103 Early Hints) are not passed on
    this.resumeResponse = resume;
    const headers = filterResponseHeaders(rawHeaders, this.responseHeaders);
    try {
      this.res.writeHead(statusCode, statusText || undefined, headers);
    } catch {
      // A header node:http refuses to write (it validates more strictly than llhttp parses).
      this.fail('worker-error');
      return false;
    }
    // A body arriving in the same read is written together with the headers; otherwise (SSE, slow first chunk)
    // the headers go now rather than with the first chunk.
    process.nextTick(flushHeadersIfIdle, this);
    return true;
  }

  /** Returns false to pause undici's socket until `res` drains. */
  onData(chunk: Buffer): boolean {
    if (this.settled) return true;
    this.bodyWritten = true;
    if (this.res.write(chunk)) return true;
    if (!this.waitingDrain) {
      this.waitingDrain = true;
      this.onDrain ??= this.makeOnDrain();
      this.res.once('drain', this.onDrain);
    }
    return false;
  }

  onComplete(): void {
    if (this.settled) return;
    this.res.end();
    this.settle('ok');
  }

  onError(error: Error): void {
    if (this.settled) return; // our own abort, already answered
    if (this.clientSocket.destroyed || this.res.destroyed) {
      this.settle('client-gone');
      return;
    }
    if (this.abort === null) {
      // Never started: nothing reached the worker and the body was not read.
      if ((error as { code?: string }).code === 'UND_ERR_INVALID_ARG') {
        this.settle('bad-request');
        this.respond(
          new GatewayError('INVALID_REQUEST', `The request cannot be forwarded: ${error.message}`),
        );
        return;
      }
      this.settle('not-sent');
      return;
    }
    this.settle('worker-error');
    this.respond(
      new GatewayError('WORKER_ERROR', `The worker failed while handling the request: ${error.message}`, {
        metadata: { workerId: this.target.id },
      }),
    );
  }

  // --- our own decisions ------------------------------------------------------------------------------------

  readonly onClientClose = (): void => {
    if (!this.settled && !this.res.writableFinished) this.fail('client-gone');
  };

  /** Made on the first backpressure only: most responses never need it. */
  onDrain: (() => void) | undefined = undefined;

  /** Made only for a chunked body under a limit. */
  countBody: ((chunk: Buffer) => void) | undefined = undefined;

  makeOnDrain(): () => void {
    return () => {
      this.waitingDrain = false;
      if (!this.settled) this.resumeResponse?.();
    };
  }

  makeCountBody(): (chunk: Buffer) => void {
    const countBody = (chunk: Buffer): void => {
      this.bodyBytes += chunk.length;
      if (this.bodyLimitBytes !== undefined && this.bodyBytes > this.bodyLimitBytes && !this.settled) {
        this.req.off('data', countBody);
        this.fail('body-too-large');
      }
    };
    return countBody;
  }

  /** Ends the exchange on the gateway's decision: aborts the upstream request (freeing its connection at once). */
  fail(outcome: 'timeout' | 'client-gone' | 'body-too-large' | 'worker-error'): void {
    if (this.settled) return;
    this.settle(outcome);
    // Not started yet: onConnect aborts it. Started: undici destroys the connection, so the worker sees the abort.
    this.abort?.(ABORT_REASONS[outcome]);
    switch (outcome) {
      case 'client-gone':
        return;
      case 'timeout':
        this.respond(
          new GatewayError(
            'REQUEST_TIMEOUT',
            `The worker did not answer within the request timeout (${this.requestTimeoutMs} ms).`,
            { metadata: { workerId: this.target.id, timeoutMs: this.requestTimeoutMs } },
          ),
        );
        return;
      case 'body-too-large':
        this.respond(bodyTooLarge(this.bodyLimitBytes ?? 0));
        return;
      case 'worker-error':
        this.respond(
          new GatewayError('WORKER_ERROR', 'The worker sent a response the gateway cannot pass on.', {
            metadata: { workerId: this.target.id },
          }),
        );
        return;
    }
  }

  settle(outcome: ProxyOutcome): void {
    this.settled = true;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.res.off('close', this.onClientClose);
    this.resolve(outcome);
  }

  /** Answers with the gateway's error if no response has started; otherwise aborts the response. */
  respond(error: GatewayError): void {
    // Unread request body left on the connection: close it rather than read the rest.
    const answered = answer(this.res, error, { headers: this.responseHeaders, close: !this.req.complete });
    if (!answered) this.res.destroy();
  }
}

function onRequestTimeout(exchange: Exchange): void {
  exchange.timer = undefined;
  exchange.fail('timeout');
}

function flushHeadersIfIdle(exchange: Exchange): void {
  const res = exchange.res;
  if (!exchange.bodyWritten && !exchange.settled && !res.writableEnded && !res.destroyed) res.flushHeaders();
}

function noop(): void {}
