/**
 * Dockerode / docker-modem errors -> RuntimeError. An HTTP error carries `statusCode` and `json.message`; a
 * transport error carries a Node `code` (ECONNREFUSED, ENOENT for a missing socket, EACCES, ...).
 */
import { RuntimeError, type RuntimeErrorCode } from '../types.js';
import { isRefusedRedirect, REFUSED_REDIRECT_REASON } from './engine-redirects.js';

interface EngineError {
  statusCode?: number;
  code?: string;
  json?: { message?: string } | string | null;
  message?: string;
  name?: string;
}

const TRANSPORT_CODES = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'EPERM',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export function statusOf(error: unknown): number | undefined {
  return (error as EngineError | null)?.statusCode;
}

export function isNotFound(error: unknown): boolean {
  return statusOf(error) === 404;
}

/** The engine's own words when it answered, else the transport's. */
export function reasonOf(error: unknown): string {
  if (isRefusedRedirect(error)) return REFUSED_REDIRECT_REASON;
  const engine = error as EngineError | null;
  const json = engine?.json;
  const fromJson = typeof json === 'string' ? json : json?.message;
  const text = (fromJson || engine?.message || String(error)).trim();
  return text.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
}

/** True when the engine could not be reached at all (no HTTP answer). */
export function isUnreachable(error: unknown): boolean {
  const engine = error as EngineError | null;
  if (!engine || engine.statusCode !== undefined) return false;
  return (engine.code !== undefined && TRANSPORT_CODES.has(engine.code)) || engine.name === 'TimeoutError';
}

/**
 * Maps anything thrown by an engine call: unreachable engine -> UNAVAILABLE, a RuntimeError is kept, anything
 * else -> `fallback` (RUNTIME_ERROR unless the caller knows better) with `what` naming the operation.
 */
export function engineError(
  error: unknown,
  what: string,
  engineAddress: string,
  fallback: RuntimeErrorCode = 'RUNTIME_ERROR',
): RuntimeError {
  if (error instanceof RuntimeError) return error;
  if (isUnreachable(error)) {
    return new RuntimeError(
      'UNAVAILABLE',
      `cannot reach the Docker engine at ${engineAddress}: ${reasonOf(error)}`,
      {
        cause: error,
      },
    );
  }
  return new RuntimeError(fallback, `${what}: ${reasonOf(error)}`, { cause: error });
}
