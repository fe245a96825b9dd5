/**
 * The API's error catalogue: each stable UPPER_SNAKE reason has one status and one description (the OpenAPI
 * document quotes it), and `ApiError`, the error the API answers with. docs/api.md documents every reason (a test
 * checks it). Never rename a reason: clients match on it.
 */
import { CorralError } from './corral-error.js';
import { SHARED_ERROR_STATUS } from './shared-codes.js';

export const API_ERROR_CATALOGUE = {
  INVALID_JSON: {
    status: 400,
    description: 'The body is not valid JSON, or holds a forbidden key such as __proto__.',
  },
  INVALID_FIELD: {
    status: 400,
    description: 'A field has the wrong type or an invalid value; metadata.field names it.',
  },
  INVALID_QUERY: {
    status: 400,
    description: 'A query parameter is missing or invalid; metadata.field names it.',
  },
  OUT_OF_RANGE: {
    status: 400,
    description: 'A number is outside the range that GET endpoint/limit reports.',
  },
  MIN_ABOVE_MAX: { status: 400, description: 'workerConfig.minNum is greater than workerConfig.maxNum.' },
  RESERVED_PORT: { status: 400, description: 'The port is one of the internal ports 2222, 2223, 2224.' },
  UNKNOWN_PRODUCT: {
    status: 400,
    description: 'products[].id is not a product of this server (see GET products).',
  },
  UNKNOWN_CREDENTIALS: { status: 400, description: 'image.authId names no registry credentials of yours.' },
  UNKNOWN_STORAGE: {
    status: 400,
    description: 'A network volume names a storage this server does not have.',
  },
  QUEUE_UNREACHABLE: {
    status: 400,
    description:
      'A queue endpoint on a server whose workers could not reach its worker-facing listener (a loopback address on Kubernetes); the message says the setting to change.',
  },
  CLUSTER_MISMATCH: { status: 400, description: "clusterID differs from the network storage's cluster." },
  UNAUTHENTICATED: {
    status: SHARED_ERROR_STATUS.UNAUTHENTICATED,
    description: 'The Authorization header is missing, malformed, or the key is unknown or revoked.',
  },
  ENDPOINT_NOT_FOUND: {
    status: SHARED_ERROR_STATUS.ENDPOINT_NOT_FOUND,
    description: 'No endpoint with that id belongs to you.',
  },
  CREDENTIALS_NOT_FOUND: { status: 404, description: 'No registry credentials with that id belong to you.' },
  ROUTE_NOT_FOUND: { status: 404, description: 'No operation at that method and path.' },
  WORKER_NOT_FOUND: {
    status: 404,
    description: 'The endpoint has no worker with that id (or this server runs no controller).',
  },
  APP_NAME_TAKEN: { status: 409, description: 'Another endpoint already uses that appName.' },
  OPENAI_MODEL_TAKEN: {
    status: 409,
    description:
      'Another of your endpoints already has that openaiModel (each model name picks one endpoint).',
  },
  CREDENTIALS_IN_USE: {
    status: 409,
    description: 'Endpoints still pull with these credentials; change them first.',
  },
  CONCURRENT_UPDATE: { status: 409, description: 'The endpoint kept changing while being updated; retry.' },
  BODY_TOO_LARGE: {
    status: SHARED_ERROR_STATUS.BODY_TOO_LARGE,
    description: 'The body is larger than the server accepts (1 MiB by default).',
  },
  RATE_LIMITED: { status: 429, description: 'Too many requests for this key; wait Retry-After seconds.' },
  DATABASE_UNAVAILABLE: {
    status: 503,
    description:
      'This replica cannot reach its database (PostgreSQL down, restarting or cut off); nothing was changed. Retry, or another replica; /readyz says when it is back.',
  },
  INTERNAL: {
    status: 500,
    description: 'A fault in Corral; the log has the details. Never caused by bad input.',
  },
  IMAGE_ACCESS_DENIED: {
    status: 400,
    description:
      'The image is private and the registry refused your credentials (or you gave none), the registry has no such image, or it exists only on this server and only admins may run it.',
  },
  INVOKE_KEY_NOT_FOUND: {
    status: 404,
    description: 'The endpoint has no active invoke key with that id.',
  },
  STORAGE_NOT_ALLOWED: {
    status: 400,
    description: "A network volume names a storage the server's configuration does not share with you.",
  },
  RUNTIME_SINGLE_TENANT: {
    status: 403,
    description:
      'This server runs workers as host processes (the local runtime): only admin keys may create or change endpoints.',
  },
  SECRET_NOT_FOUND: { status: 404, description: 'You have no secret with that name.' },
  SECRET_IN_USE: {
    status: 409,
    description:
      'Endpoints still reference the secret in their envs; change them first (metadata.endpoints).',
  },
  UNKNOWN_SECRET: {
    status: 400,
    description:
      "An env value references {{ CORRAL_SECRET_name }}, or a model's tokenSecret names a secret, and you have no secret of that name.",
  },
  // 403 as Kubernetes answers an exceeded ResourceQuota: the request is valid but not allowed to this owner, and
  // retrying cannot help (429 would invite one) until the owner frees some use or the operator raises the quota.
  QUOTA_EXCEEDED: {
    status: 403,
    description:
      'The change would take you past one of your quotas; metadata has quota, limit, used and usedAfter (GET quota).',
  },
  // 403, not 401: the key is valid (a client keeps it), it only lacks the right (GET cluster and /metrics, older,
  // answer 401 UNAUTHENTICATED instead).
  ADMIN_REQUIRED: {
    status: 403,
    description: 'The operation needs an admin API key; this key is valid but not an admin key.',
  },
  API_KEY_NOT_FOUND: {
    status: 404,
    description: 'No active API key has that id (it may be revoked already).',
  },
  JOB_NOT_FOUND: {
    status: 404,
    description: 'The endpoint has no job with that id (it never existed, or its retention ended).',
  },
  JOB_FINISHED: {
    status: 409,
    description:
      'The job has finished (COMPLETED, FAILED or TIMED_OUT): only a queued or running job can be cancelled.',
  },
  JOB_NOT_RETRYABLE: {
    status: 409,
    description: 'Only a FAILED or TIMED_OUT job can be retried.',
  },
  MODEL_NOT_FOUND: {
    status: 400,
    description:
      'The hub has no such model, revision or file (a private repository the token cannot see reads the same); metadata.field names the model.',
  },
  MODEL_GATED: {
    status: 400,
    description:
      "The model is gated and the token (or its absence) has no access: name a tokenSecret holding a token of an account the model's authors accepted.",
  },
  MODEL_UNAUTHORIZED: {
    status: 400,
    description: "The hub refused the model's token (invalid or expired); metadata.field names the model.",
  },
  // 503, not 400: the request may be right, the hub did not answer; retrying later can help.
  MODEL_HUB_UNREACHABLE: {
    status: 503,
    description: "The model hub (the server's models.hubUrl) did not answer the model's check; retry.",
  },
  MODEL_NOT_CACHED: {
    status: 404,
    description: "This machine's model cache holds no such model (or no such revision of it).",
  },
  MODEL_IN_USE: {
    status: 409,
    description:
      'Endpoints name the model: it cannot be removed from the cache while they do (metadata.endpoints); change them first.',
  },
  // Refused rather than cancelled: the download may be shared with workers and other callers waiting on it.
  MODEL_DOWNLOADING: {
    status: 409,
    description: 'The model is being downloaded into the cache; remove it once its download ends.',
  },
  MODEL_NODE_UNREACHABLE: {
    status: 503,
    description:
      "A GPU node's agent did not answer a model's removal (metadata.nodes); it was removed from the machines that answered; retry.",
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ApiErrorReason = keyof typeof API_ERROR_CATALOGUE;

/** An error a client of the API can act on; the API answers it as `{code, reason, message, metadata}`. */
export class ApiError extends CorralError<ApiErrorReason> {
  override name = 'ApiError';

  constructor(reason: ApiErrorReason, message: string, metadata: Record<string, unknown> = {}) {
    super(reason, API_ERROR_CATALOGUE[reason], message, { metadata });
  }
}
