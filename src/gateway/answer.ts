/**
 * The gateway's own answers (its errors), written one way wherever they are sent: one builder makes the headers
 * and body from the error, with the status the error carries, and two thin sinks write them, to a `ServerResponse`
 * or to the raw socket of an upgrade request. A CLIENT_GONE error is never written: nobody is left to read it.
 */
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GatewayError } from '../errors/gateway-catalogue.js';

/** The one spelling, the API's too (Fastify's). */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export interface AnswerOptions {
  /** Headers the answer carries beside its own (X-Corral-Worker, X-Corral-Queue-Ms...), after them. */
  headers?: Record<string, string>;
  /** Asks the client to close the connection (an unread request body is left on it; an upgrade's socket). */
  close?: boolean;
}

export interface ErrorAnswer {
  /**
   * Flat name, value list in the order written: Content-Type, Content-Length, Connection, `headers`, X-Corral-Cause,
   * Retry-After, WWW-Authenticate.
   */
  headers: string[];
  body: string;
}

/** The headers and body of `error`'s answer; `Retry-After` when the error asks the client to wait. */
export function errorAnswer(error: GatewayError, options: AnswerOptions = {}): ErrorAnswer {
  const body = JSON.stringify(error.toBody());
  const headers = ['content-type', JSON_CONTENT_TYPE, 'content-length', String(Buffer.byteLength(body))];
  if (options.close) headers.push('connection', 'close');
  const extra = options.headers;
  if (extra) for (const name of Object.keys(extra)) headers.push(name, extra[name] as string);
  const cause = causeOf(error);
  if (cause !== undefined) headers.push('x-corral-cause', cause);
  if (error.retryAfterSeconds !== undefined) headers.push('retry-after', String(error.retryAfterSeconds));
  // RFC 9110 section 11.6.1: a 401 names the scheme it wants.
  if (error.status === 401) headers.push('www-authenticate', 'Bearer');
  return { headers, body };
}

/**
 * Answers `res` with `error`. Returns false, writing nothing, for CLIENT_GONE and when `res` cannot take an answer
 * any more (a response has started, or the client is gone): the caller decides whether to cut it off.
 */
export function answer(res: ServerResponse, error: GatewayError, options?: AnswerOptions): boolean {
  if (error.code === 'CLIENT_GONE' || res.headersSent || res.destroyed) return false;
  const { headers, body } = errorAnswer(error, options);
  res.writeHead(error.status, headers);
  res.end(body);
  return true;
}

/**
 * Answers an upgrade request with `error` on its raw socket, as `answer` does over HTTP (status line, then the same
 * headers and body), and closes the connection. Nothing is written to a socket that is already closed.
 */
export function answerUpgrade(socket: Duplex, error: GatewayError, headers?: Record<string, string>): void {
  if (error.code === 'CLIENT_GONE' || socket.destroyed || !socket.writable) return;
  const built = errorAnswer(error, { headers, close: true });
  let head = `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n`;
  for (let i = 0; i + 1 < built.headers.length; i += 2)
    head += `${built.headers[i]}: ${built.headers[i + 1]}\r\n`;
  socket.end(`${head}\r\n${built.body}`);
}

/** At most this many characters of a cause go in its header (the body has it whole). */
export const CAUSE_HEADER_CHARS = 512;

/**
 * What the endpoint's trouble is, for `X-Corral-Cause`: a refusal's endpoint message (`GET /ready answered 404 on
 * every probe for 10 s: ...`), or what a timed-out request waited for (`no worker is routable: waiting for ...`), so
 * that a client that shows only headers and status (curl -I, a load balancer's log) sees it too. Printable ASCII:
 * anything else in it becomes `?`, since a header cannot carry it.
 */
export function causeOf(error: GatewayError): string | undefined {
  const { endpointMessage, waitingFor } = error.metadata;
  const cause = typeof endpointMessage === 'string' && endpointMessage !== '' ? endpointMessage : waitingFor;
  if (typeof cause !== 'string' || cause === '') return undefined;
  return cause.slice(0, CAUSE_HEADER_CHARS).replace(/[^\x20-\x7e]/g, '?');
}

/** `X-Corral-Queue-Ms` for the answer to a request of a known endpoint (0: never queued); none otherwise. */
export function queuedHeader(queuedMs: number | undefined): Record<string, string> | undefined {
  return queuedMs === undefined ? undefined : { 'x-corral-queue-ms': String(queuedMs) };
}
