/**
 * KubernetesApiError -> RuntimeError, with the same codes as the Docker runtime's: an API server that cannot be
 * reached is UNAVAILABLE, a missing object NOT_FOUND where the caller asks for it, anything else RUNTIME_ERROR (or
 * the caller's fallback). The message keeps the API server's own words (its Status message).
 */
import { RuntimeError, type RuntimeErrorCode } from '../types.js';
import { KubernetesApiError } from './api.js';

export function isApiNotFound(error: unknown): boolean {
  return error instanceof KubernetesApiError && error.status === 404;
}

export function isApiConflict(error: unknown): boolean {
  return error instanceof KubernetesApiError && error.status === 409;
}

export function isApiUnreachable(error: unknown): boolean {
  return error instanceof KubernetesApiError && error.unreachable;
}

export function kubernetesError(
  error: unknown,
  what: string,
  server: string,
  fallback: RuntimeErrorCode = 'RUNTIME_ERROR',
): RuntimeError {
  if (error instanceof RuntimeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (isApiUnreachable(error)) {
    return new RuntimeError(
      'UNAVAILABLE',
      `cannot reach the Kubernetes API server at ${server}: ${message}`,
      {
        cause: error,
      },
    );
  }
  return new RuntimeError(fallback, `${what}: ${message}`, { cause: error });
}
