/**
 * One `http` job's request to this replica's gateway and its answer, bounded (issue 29): node's http client, which
 * follows no redirect (a 3xx is answered as it is, its body unread and its Location never fetched); a 2xx body read
 * up to the job's output limit while counting, the request closed at once past it; any other body read up to what
 * the job's error keeps, then the request closed. Memory stays within the limit whatever the endpoint sends.
 */

import type { IncomingMessage } from 'node:http';
import { request } from 'node:http';
import { readBody } from './http-io.js';

/** How much of a failed answer's body the job's error keeps. */
export const ERROR_BODY_CHARS = 4_096;
/** The bytes of a failed answer read at most: ERROR_BODY_CHARS characters of UTF-8 at 4 bytes each. */
const ERROR_BODY_BYTES = ERROR_BODY_CHARS * 4;

export interface JobAnswer {
  status: number;
  /** A 2xx answer's body; at most ERROR_BODY_BYTES of any other's; '' for a 3xx. */
  body: string;
}

/**
 * One job's request to the gateway: its answer, or a rejection when `signal` aborts it, the request fails, or a 2xx
 * body is larger than `answerLimitBytes` (a BODY_TOO_LARGE JobError naming the limit).
 */
export type JobSend = (
  url: string,
  init: { headers: Record<string, string>; body: string; signal: AbortSignal; answerLimitBytes: number },
) => Promise<JobAnswer>;

/** Whether a status is a redirect, which the delivery never follows. */
export function isRedirect(status: number): boolean {
  return status >= 300 && status < 400;
}

/** The request as `corral serve` sends it: a POST over node's http (an abort or a refusal closes its connection). */
export const httpSend: JobSend = (url, init) =>
  new Promise((resolve, reject) => {
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      outgoing.destroy();
      reject(error);
    };
    const answer = (status: number, body: string) => {
      if (settled) return;
      settled = true;
      resolve({ status, body });
    };
    const outgoing = request(
      url,
      {
        method: 'POST',
        headers: { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) },
        signal: init.signal,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (isRedirect(status)) {
          response.destroy();
          answer(status, '');
          return;
        }
        const read =
          status >= 200 && status < 300
            ? readBody(response, init.answerLimitBytes, "the endpoint's answer")
            : readPrefix(response, ERROR_BODY_BYTES);
        read.then((body) => answer(status, body), fail);
        response.on('error', fail);
      },
    );
    outgoing.on('error', fail);
    // An abort after the answer began: the response may end without an error of its own.
    init.signal.addEventListener('abort', () => fail(init.signal.reason), { once: true });
    outgoing.end(init.body);
  });

/** The first `maxBytes` of a body as text; the rest is never read (the response is closed). */
function readPrefix(response: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(parts).subarray(0, maxBytes).toString('utf8'));
    response.on('data', (chunk: Buffer) => {
      parts.push(chunk);
      size += chunk.length;
      if (size >= maxBytes) {
        response.destroy();
        done();
      }
    });
    response.on('end', done);
    response.on('error', reject);
  });
}
