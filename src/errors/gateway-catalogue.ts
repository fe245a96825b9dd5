/**
 * The gateway's error catalogue: each stable UPPER_SNAKE code has one HTTP status and one description (also the
 * message of an error made without one), and `GatewayError`, the error the gateway answers with, in the API's
 * format `{code: <status>, reason: <CODE>, message, metadata}`. docs/gateway.md documents every code (a test checks
 * it). Never rename a code: clients and dashboards match on it.
 */
import { CorralError } from './corral-error.js';
import { SHARED_ERROR_STATUS } from './shared-codes.js';

export const GATEWAY_ERROR_CATALOGUE = {
  INVALID_REQUEST: {
    status: 400,
    description:
      'The request cannot be routed or forwarded as it is: two Host headers, a target that is neither a path nor an http(s) URL naming the Host, or a header the worker connection refuses.',
  },
  ENDPOINT_NOT_FOUND: {
    status: SHARED_ERROR_STATUS.ENDPOINT_NOT_FOUND,
    description: 'No endpoint serves that Host header.',
  },
  BODY_TOO_LARGE: {
    status: SHARED_ERROR_STATUS.BODY_TOO_LARGE,
    description: 'The request body is larger than the gateway accepts.',
  },
  AFFINITY_TIMEOUT: {
    status: 400,
    description:
      "A request with strict or strict-resume worker affinity (X-Corral-Worker-Id or X-Runpod-Worker-Id: `strict <id>`) waited the queue timeout for a slot on that worker; RunPod's `timed out waiting for worker`.",
  },
  AFFINITY_WORKER_GONE: {
    status: 404,
    description:
      "The worker a request names with strict or strict-resume affinity does not exist (removed, failed, or never one of the endpoint's workers); RunPod's `affinity_worker_gone`.",
  },
  QUEUE_FULL: {
    status: 429,
    description: "The endpoint's request queue is full; retry after Retry-After seconds.",
  },
  CLIENT_GONE: {
    status: 499,
    description: 'The client went away before its response (queued or in flight); for logs and metrics only.',
  },
  WORKER_ERROR: {
    status: 502,
    description: 'The worker failed or closed the connection after the request reached it; not retried.',
  },
  NO_CAPACITY: {
    status: 503,
    description: "The endpoint's workers can never be placed on this server's GPUs.",
  },
  ROUTING_UNAVAILABLE: {
    status: 503,
    description:
      'The gateway could not look up the endpoint for this Host (its store did not answer); retry shortly.',
  },
  ENDPOINT_STOPPED: {
    status: 503,
    description: 'The endpoint is stopped or being deleted (POST endpoint/start restores a stopped one).',
  },
  QUEUE_TIMEOUT: { status: 504, description: 'The request waited the queue timeout for a free worker slot.' },
  REQUEST_TIMEOUT: {
    status: 504,
    description: 'The worker did not answer within workerConfig.requestTimeout.',
  },
  ENDPOINT_FAILED: {
    status: 503,
    description:
      "The endpoint is failed (metadata.endpointError: IMAGE_PULL_FAILED, CRASH_LOOP, HEALTH_TIMEOUT, ...) and no worker of it serves; the message names the reason and the last worker's message. An update or a start tries again.",
  },
  NO_WORKERS: {
    status: 503,
    description: "The endpoint's maxNum is 0: it can have no worker. Raise maxNum to serve.",
  },
  RUNTIME_UNAVAILABLE: {
    status: 503,
    description:
      'The container engine cannot be reached and no worker of the endpoint serves, so none can start; retry shortly (Corral recovers by itself when the engine answers again).',
  },
  BUDGET_EXCEEDED: {
    status: 429,
    description:
      "The endpoint's owner has spent its budget (its monthly one, or the account's spend per hour) and no worker of the endpoint serves, so none can start; the message names the budget and when it resets. Running workers go on serving; GET quota shows the budget.",
  },
  UNAUTHENTICATED: {
    status: SHARED_ERROR_STATUS.UNAUTHENTICATED,
    description:
      "The request has no Authorization: Bearer key of the endpoint's owner (or an admin), nor an invoke key made for the endpoint.",
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type GatewayErrorCode = keyof typeof GATEWAY_ERROR_CATALOGUE;

export interface GatewayErrorOptions {
  /** Seconds the client should wait before retrying (QUEUE_FULL); sent as `Retry-After`. */
  retryAfterSeconds?: number;
  metadata?: Record<string, unknown>;
  cause?: unknown;
}

/**
 * An error the gateway answers with `status` and the body from `toBody()`. A CLIENT_GONE error is named
 * `AbortError`, like the error an aborted fetch or stream throws.
 */
export class GatewayError extends CorralError<GatewayErrorCode> {
  override name: string;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: GatewayErrorCode,
    message: string = GATEWAY_ERROR_CATALOGUE[code].description,
    options: GatewayErrorOptions = {},
  ) {
    super(code, GATEWAY_ERROR_CATALOGUE[code], message, options);
    this.name = code === 'CLIENT_GONE' ? 'AbortError' : 'GatewayError';
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** The body, with `retryAfterSeconds` in its metadata when the answer carries `Retry-After`. */
  override toBody() {
    const body = super.toBody();
    if (this.retryAfterSeconds !== undefined) {
      body.metadata = { ...this.metadata, retryAfterSeconds: this.retryAfterSeconds };
    }
    return body;
  }
}

/** BODY_TOO_LARGE with the limit, the same whether the gateway saw the Content-Length or counted the body. */
export function bodyTooLarge(limitBytes: number): GatewayError {
  return new GatewayError(
    'BODY_TOO_LARGE',
    `The request body is larger than the gateway accepts (${limitBytes} bytes).`,
    { metadata: { limitBytes } },
  );
}
