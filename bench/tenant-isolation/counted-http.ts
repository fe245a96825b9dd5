/**
 * Tenant A's HTTP client (bench/tenant-isolation/tenant-a.ts): a request to 127.0.0.1 whose body may be a stream of
 * pieces (sent as the socket drains) and whose answer is counted and dropped as it arrives, keeping only its first
 * bytes, so that reading a 419 MB answer or sending a 9.5 MB body costs the bench little memory.
 */
import { request } from 'node:http';
import { Readable } from 'node:stream';

export interface CountedAnswer {
  status: number;
  /** The answer's whole size. */
  bytes: number;
  /** Its first `keepBytes` bytes, as text. */
  head: string;
  ms: number;
}

export interface CountedRequest {
  port: number;
  method: 'GET' | 'POST';
  path: string;
  token: string;
  /** A small body, or the pieces of a large one with its total size. */
  body?: string | { pieces: () => Iterable<Buffer>; bytes: number };
  signal: AbortSignal;
  keepBytes?: number;
}

export function countedRequest(r: CountedRequest): Promise<CountedAnswer> {
  const keep = r.keepBytes ?? 64 * 1024;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { authorization: `Bearer ${r.token}` };
    if (r.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = typeof r.body === 'string' ? Buffer.byteLength(r.body) : r.body.bytes;
    }
    const req = request(
      { host: '127.0.0.1', port: r.port, method: r.method, path: r.path, headers, signal: r.signal },
      (res) => {
        const kept: Buffer[] = [];
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          if (bytes < keep) kept.push(chunk.subarray(0, keep - bytes));
          bytes += chunk.length;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            bytes,
            head: Buffer.concat(kept).toString('utf8'),
            ms: performance.now() - started,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (r.body === undefined || typeof r.body === 'string') req.end(r.body);
    // An answer that comes before the body is all sent (a refusal) ends the request; the pipe's error is its.
    else Readable.from(r.body.pieces()).pipe(req);
  });
}
