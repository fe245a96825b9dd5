/**
 * The jobs routes' HTTP plumbing: a body read up to its route's limit (413 naming the limit, from the declared
 * length at once or while counting), JSON answers written as text, errors in the jobs catalogue's body, and an
 * abort signal for a long poll whose client went away; a request read already, replayed to another route.
 */
import { IncomingMessage, type ServerResponse } from 'node:http';
import { JobError } from '../errors/jobs-catalogue.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';

export interface JobsLogger {
  warn(data: object, message: string): void;
  error(data: object, message: string): void;
}

/** The body as text, at most `limitBytes` (else a BODY_TOO_LARGE error naming `what` and the limit). */
export async function readBody(req: IncomingMessage, limitBytes: number, what: string): Promise<string> {
  return (await readBodyBytes(req, limitBytes, what)).toString('utf8');
}

/** The body's bytes, at most `limitBytes` (else a BODY_TOO_LARGE error naming `what` and the limit). */
export async function readBodyBytes(req: IncomingMessage, limitBytes: number, what: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  await readBodyChunks(req, limitBytes, what, (chunk) => parts.push(chunk));
  return Buffer.concat(parts);
}

/**
 * Hands the body to `onChunk` a chunk at a time as it arrives, at most `limitBytes` in all (else a BODY_TOO_LARGE
 * error naming `what` and the limit, from the declared length at once or while counting); its size once it ended.
 */
export function readBodyChunks(
  req: IncomingMessage,
  limitBytes: number,
  what: string,
  onChunk: (chunk: Buffer) => void,
): Promise<number> {
  const tooLarge = () =>
    new JobError('BODY_TOO_LARGE', `${what} is larger than ${limitBytes} bytes, the limit`, { limitBytes });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    let size = 0;
    let failed = false;
    const fail = (error: unknown) => {
      if (!failed) reject(error);
      failed = true;
    };
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) return fail(tooLarge());
      try {
        onChunk(chunk);
      } catch (error) {
        fail(error);
      }
    });
    req.on('end', () => {
      if (!failed) resolve(size);
    });
    req.on('error', fail);
  });
}

/** Writes `text` (JSON) with `status` (and `headers`, and a reason phrase of its own). */
export function writeJson(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
  reason?: string,
): void {
  if (res.headersSent || res.destroyed) return;
  if (reason !== undefined) res.statusMessage = reason;
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function writeEmpty(res: ServerResponse, status: number): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-length': 0 });
  res.end();
}

/**
 * A JobError as its body. Anything else is logged without the request's data and answered 503 "retry shortly"
 * only when the database cannot be reached (store/unavailable.ts); any other fault is a 500 that no client retries
 * in a loop, since retrying the same request would meet the same fault.
 */
export function writeError(res: ServerResponse, error: unknown, logger: JobsLogger): void {
  const known = asJobError(error, logger);
  writeJson(
    res,
    known.status,
    JSON.stringify(known.toBody()),
    retryAfterHeader(known),
    reasonPhrase(known.message),
  );
}

/** Any error as the JobError the jobs routes answer (what writeError says), logging one that is not a JobError. */
export function asJobError(error: unknown, logger: JobsLogger): JobError {
  const known =
    error instanceof JobError
      ? error
      : isDatabaseUnavailable(error)
        ? new JobError('JOBS_UNAVAILABLE', 'the jobs store did not answer; retry shortly')
        : new JobError('INTERNAL', 'the request failed inside Corral; the server log has the details');
  if (!(error instanceof JobError))
    logger.error(
      {
        err: error instanceof Error ? error.message : String(error),
        ...(known.code === 'INTERNAL' && error instanceof Error ? { stack: error.stack } : {}),
      },
      'jobs request failed',
    );
  return known;
}

/** `Retry-After` for an error that says when to retry (RATE_LIMITED). */
export function retryAfterHeader(error: JobError): Record<string, string> {
  const retryAfter = error.metadata.retryAfterSeconds;
  return typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : {};
}

/**
 * The message as the status line's reason phrase: the RunPod SDK logs a refused post's reason phrase, never its
 * body (aiohttp's ClientResponseError), so a worker's log says why. Printable ASCII only, at most 200 characters.
 */
export function reasonPhrase(message: string): string {
  return message.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}

/** Aborts when the client closes before its answer was written (a long poll then stops waiting). */
export function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * A request already read (`body`: its bytes) as a fresh one at `url`, for a route that serves it by handing it on
 * to another (the model router): the same method, headers and connection, the body readable again, sent with its
 * length (whatever framing it came in).
 */
export function replayRequest(req: IncomingMessage, url: string, body: Buffer): IncomingMessage {
  const replay = new IncomingMessage(req.socket);
  replay.method = req.method;
  replay.url = url;
  replay.httpVersion = req.httpVersion;
  replay.httpVersionMajor = req.httpVersionMajor;
  replay.httpVersionMinor = req.httpVersionMinor;
  const framing = new Set(['content-length', 'transfer-encoding']);
  const raw: string[] = [];
  for (let at = 0; at + 1 < req.rawHeaders.length; at += 2) {
    const name = req.rawHeaders[at] ?? '';
    if (!framing.has(name.toLowerCase())) raw.push(name, req.rawHeaders[at + 1] ?? '');
  }
  raw.push('content-length', String(body.length));
  replay.rawHeaders = raw;
  const headers = { ...req.headers, 'content-length': String(body.length) };
  delete headers['transfer-encoding'];
  replay.headers = headers;
  if (body.length > 0) replay.push(body);
  replay.push(null);
  replay.complete = true;
  return replay;
}

/** Whether the request's Host is an endpoint's own (`{appName}.{domain}`), whose whole path space is the endpoint's. */
export function onEndpointHost(req: IncomingMessage, domain: string): boolean {
  const host = (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
  return host.endsWith(`.${domain.toLowerCase()}`);
}
