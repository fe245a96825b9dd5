/**
 * One webhook POST to an address checked beforehand: the connection goes to that address whatever the host name
 * resolves to now (the URL's host still names the Host header and the TLS server name), so a DNS answer changed
 * after the check (rebinding) cannot lead it to a private address. Redirects are not followed; the answer's body is
 * read up to a small bound and dropped.
 */
import http from 'node:http';
import https from 'node:https';
import { pinnedLookup, type ResolvedAddress } from '../net/resolve.js';

export interface PostOutcome {
  /** The HTTP status, or undefined when no answer came (connection refused, reset, timed out). */
  status?: number;
  /** Why it failed, in a few words, when it did. */
  error?: string;
}

const MAX_ANSWER_BYTES = 64 * 1024;

export function pinnedPost(options: {
  url: URL;
  address: ResolvedAddress;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}): Promise<PostOutcome> {
  const { url, address, headers, body, timeoutMs } = options;
  const lookup = pinnedLookup(address);
  const send = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome: PostOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const request = send(
      url,
      {
        method: 'POST',
        lookup,
        agent: false,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        timeout: timeoutMs,
      },
      (response) => {
        let seen = 0;
        response.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_ANSWER_BYTES) response.destroy();
        });
        response.on('close', () => done({ status: response.statusCode }));
        response.on('error', () => done({ status: response.statusCode }));
      },
    );
    request.on('timeout', () => {
      request.destroy();
      done({ error: `no answer within ${timeoutMs} ms` });
    });
    request.on('error', (error: NodeJS.ErrnoException) => done({ error: error.code ?? error.message }));
    request.end(body);
  });
}
