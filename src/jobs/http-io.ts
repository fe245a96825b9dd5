/**
 * The jobs routes' HTTP plumbing: a body read up to its route's limit (413 naming the limit, from the declared
 * length at once or while counting), JSON answers written as text, errors in the jobs catalogue's body, and an
 * abort signal for a long poll whose client went away.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { JobError } from '../errors/jobs-catalogue.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';

export interface JobsLogger {
  warn(data: object, message: string): void;
  error(data: object, message: string): void;
}

/** The body as text, at most `limitBytes` (else a BODY_TOO_LARGE error naming `what` and the limit). */
export function readBody(req: IncomingMessage, limitBytes: number, what: string): Promise<string> {
  const tooLarge = () =>
    new JobError('BODY_TOO_LARGE', `${what} is larger than ${limitBytes} bytes, the limit`, { limitBytes });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) {
        failed = true;
        reject(tooLarge());
        return;
      }
      parts.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(parts).toString('utf8'));
    });
    req.on('error', (error) => {
      if (!failed) reject(error);
      failed = true;
    });
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
