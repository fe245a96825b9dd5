/**
 * The codes that both the API and the gateway answer, each with the one status it has on both. A client that
 * matches on the code alone is never misled by the status; which server answered tells it what was not found or
 * too large. A test keeps this list equal to the codes the two catalogues have in common, so that no overlap
 * appears unnoticed.
 */
export const SHARED_ERROR_STATUS = {
  /**
   * The request body is over the limit of the server that received it: the API's `bodyLimitBytes` (1 MiB by
   * default) or the gateway's `gateway.bodyLimitBytes` (100 MiB by default). One meaning on both.
   */
  BODY_TOO_LARGE: 413,
  /**
   * Two lookups that failed, one code. The API: no endpoint with the id in the request belongs to the caller.
   * The gateway: no endpoint serves the request's Host header (or the endpoint was deleted while the request
   * waited in its queue).
   */
  ENDPOINT_NOT_FOUND: 404,
  /**
   * No key, or not one that may make this request. The API: the key is missing, unknown or revoked. The gateway:
   * the same, or the key is not the endpoint's owner's nor an invoke key made for that endpoint.
   */
  UNAUTHENTICATED: 401,
} as const;

export type SharedErrorCode = keyof typeof SHARED_ERROR_STATUS;
