/** Browser-safe JSON-over-HTTP transport for the client (no Node-only APIs). */
import { CorralApiError, CorralConnectionError, CorralProtocolError } from './errors.js';

export type Query = Record<string, string | number | undefined>;

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path from the server root, starting with `/`. */
  path: string;
  query?: Query;
  body?: unknown;
  /** Send the bearer key; false only for unauthenticated routes such as `/healthz`. */
  auth?: boolean;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
  timeoutMs: number;
  /** The server in a connection error's words: `the Corral API`, `the Corral gateway`. */
  server: string;
}

/** The default bound on one call. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * A client's transport: its base URL checked (http or https, no trailing slash; `describe` names the server in the
 * error, e.g. `Corral API URL`, with `example`), fetch called detached (a browser's window.fetch never sees the
 * client as `this`), the timeout defaulted.
 */
export function makeTransport(
  options: { baseUrl: string; apiKey: string; fetch?: typeof fetch; timeoutMs?: number },
  describe: { what: string; example: string; server: string },
): TransportOptions {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  return {
    baseUrl: checkedBaseUrl(options.baseUrl, describe),
    apiKey: options.apiKey,
    fetch: (input, init) => fetchImpl(input, init),
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    server: describe.server,
  };
}

function checkedBaseUrl(raw: string, describe: { what: string; example: string }): string {
  const invalid = () =>
    new TypeError(
      `invalid ${describe.what} "${raw}": expected http(s)://host[:port], e.g. ${describe.example}`,
    );
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw invalid();
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid();
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

export function buildUrl(baseUrl: string, path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) params.set(key, String(value));
  }
  const search = params.toString();
  return `${baseUrl}${path}${search === '' ? '' : `?${search}`}`;
}

/** Sends one request and returns the parsed JSON body of a 2xx answer. */
export async function send(options: TransportOptions, request: HttpRequest): Promise<unknown> {
  const url = buildUrl(options.baseUrl, request.path, request.query);
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (request.auth !== false) headers.Authorization = `Bearer ${options.apiKey}`;
  const init: RequestInit = { method: request.method, headers };
  // Content-Type only with a body: a DELETE that says JSON and sends none is refused (400 FST_ERR_CTP_EMPTY_JSON_BODY).
  if (request.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(request.body);
  }
  if (options.timeoutMs > 0) init.signal = AbortSignal.timeout(options.timeoutMs);

  let response: Response;
  let text: string;
  try {
    response = await options.fetch(url, init);
    text = await response.text();
  } catch (error) {
    throw connectionError(options, request, error);
  }
  if (!response.ok) throw apiError(response, text);
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CorralProtocolError(
      `${request.method} ${request.path} answered ${response.status} with a body that is not JSON`,
    );
  }
}

export function connectionError(
  options: TransportOptions,
  request: HttpRequest,
  error: unknown,
): CorralConnectionError {
  const where = `${request.method} ${request.path}`;
  if (isTimeout(error)) {
    return new CorralConnectionError(
      options.baseUrl,
      `no answer from ${options.server} at ${options.baseUrl} within ${options.timeoutMs} ms (${where})`,
      { cause: error, timedOut: true },
    );
  }
  return new CorralConnectionError(
    options.baseUrl,
    `cannot reach ${options.server} at ${options.baseUrl} (${where}): ${describeFailure(error)}`,
    { cause: error },
  );
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

/** The innermost useful text of a fetch failure (`fetch failed` hides the reason in `cause`). */
export function describeFailure(error: unknown): string {
  let current: unknown = error;
  let text = 'request failed';
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    const message = current.message;
    if (typeof code === 'string' && !message.includes(code)) {
      text = message === '' ? code : `${code} ${message}`;
    } else if (message !== '') {
      text = message;
    }
    current = current.cause;
  }
  return text;
}

export function apiError(response: Response, text: string): CorralApiError {
  const body = parseObject(text);
  if (body !== undefined && typeof body.reason === 'string') {
    const metadata = isRecord(body.metadata) ? body.metadata : {};
    const message = typeof body.message === 'string' ? body.message : body.reason;
    return new CorralApiError(response.status, body.reason, message, metadata);
  }
  const snippet = text.trim().slice(0, 200);
  const statusText = response.statusText === '' ? 'error' : response.statusText;
  return new CorralApiError(
    response.status,
    `HTTP_${response.status}`,
    snippet === '' ? `${response.status} ${statusText}` : `${response.status} ${statusText}: ${snippet}`,
  );
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
