/** Where the wire contract lives in URLs, and the keys a request may name an endpoint by. */

/** Every operation of the wire contract lives under this path. */
export const API_PREFIX = '/gpu-instance/openapi/v1';

/**
 * Keys that carry an endpoint's id in a query and in an update's body, in the order they are read (`endpoint_id`
 * is an alias some clients send).
 */
export const ENDPOINT_ID_KEYS = ['id', 'endpoint_id'] as const;

/** Body keys of the lifecycle operations (delete, stop, start) that carry an endpoint's id. */
export const ENDPOINT_ID_BODY_KEYS = ['id', 'name', 'endpoint_id'] as const;

/** A path segment decoded, or kept as sent when it is not valid percent-encoding (it then names nothing). */
export function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
