/** A text/plain answer (a worker's log) streamed line by line; the rules it keeps are on `streamLines`. */
import { CorralConnectionError } from './errors.js';
import {
  apiError,
  buildUrl,
  connectionError,
  describeFailure,
  type HttpRequest,
  type TransportOptions,
} from './http.js';

/**
 * Streams a text/plain answer line by line from the fetch body (no Node-only APIs).
 *
 * - The request goes out on the first `next()`; the transport's timeout covers only the wait for
 *   the response headers (and an error body), never the stream itself, so a followed log can run
 *   for hours.
 * - Aborting `signal` ends the iteration without an error, before or during the stream.
 * - Leaving the loop early (`break`, `return`, a throw in the loop body) closes the connection.
 * - A non-2xx answer throws CorralApiError; no answer, or a stream that breaks off, throws
 *   CorralConnectionError.
 * - Lines are yielded without their `\n` (or `\r\n`); a last line without a newline is yielded too.
 */
export async function* streamLines(
  options: TransportOptions,
  request: HttpRequest,
  signal?: AbortSignal,
): AsyncGenerator<string, void, undefined> {
  if (signal?.aborted === true) return;
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer =
    options.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          controller.abort(new DOMException('no response headers in time', 'TimeoutError'));
        }, options.timeoutMs)
      : undefined;
  const stopped = (): boolean => signal?.aborted === true;
  const failed = (error: unknown): CorralConnectionError =>
    connectionError(options, request, timedOut ? new DOMException('timed out', 'TimeoutError') : error);

  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  try {
    const headers: Record<string, string> = { Accept: 'text/plain' };
    if (request.auth !== false) headers.Authorization = `Bearer ${options.apiKey}`;
    let response: Response;
    try {
      response = await options.fetch(buildUrl(options.baseUrl, request.path, request.query), {
        method: request.method,
        headers,
        signal: controller.signal,
      });
    } catch (error) {
      if (stopped()) return;
      throw failed(error);
    }
    if (!response.ok) {
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        if (stopped()) return;
        throw failed(error);
      }
      throw apiError(response, text);
    }
    clearTimeout(timer);
    if (response.body === null) return;

    reader = response.body.getReader();
    const decoder = new TextDecoder();
    let pending = '';
    for (;;) {
      let chunk: ReadResult;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (stopped()) return;
        throw new CorralConnectionError(
          options.baseUrl,
          `the stream from the Corral API at ${options.baseUrl} broke off (${request.method} ${request.path}): ${describeFailure(error)}`,
          { cause: error },
        );
      }
      if (chunk.done) break;
      pending += decoder.decode(chunk.value, { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        yield withoutCr(line);
        if (stopped()) return;
      }
    }
    pending += decoder.decode();
    if (pending !== '') yield withoutCr(pending);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    // Closes the connection when the consumer stopped early; harmless after a normal end.
    controller.abort();
    reader?.cancel().catch(() => undefined);
  }
}

type ReadResult = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']>>;

function withoutCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
