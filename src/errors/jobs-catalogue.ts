/**
 * The jobs API's error catalogue (issue 22): each stable UPPER_SNAKE code has one HTTP status and one description,
 * and `JobError`, the error the jobs routes answer with, in the format `{code, reason, message, metadata}` plus
 * `error` (the message, where RunPod's clients read it). docs/jobs-internals.md documents every code (a test checks
 * it). Never rename a code: clients match on it.
 */
import { CorralError, type ErrorBody } from './corral-error.js';
import { SHARED_ERROR_STATUS } from './shared-codes.js';

export const JOBS_ERROR_CATALOGUE = {
  INVALID_JOB_REQUEST: {
    status: 400,
    description:
      'The request is not one the jobs API takes: malformed JSON, JSON nested over 128 levels, no `input`, a policy out of range, a bad `wait`.',
  },
  UNAUTHENTICATED: {
    status: SHARED_ERROR_STATUS.UNAUTHENTICATED,
    description:
      "No key, or not one of the endpoint's owner's API keys (or an admin's) nor an invoke key made for the endpoint.",
  },
  ENDPOINT_NOT_FOUND: {
    status: SHARED_ERROR_STATUS.ENDPOINT_NOT_FOUND,
    description: 'No endpoint with that id, appName or name is one the key may call.',
  },
  AMBIGUOUS_ENDPOINT_NAME: {
    status: 409,
    description:
      'More than one endpoint the key may call has that name (and none has it as id or appName); metadata.ids lists them: call one by its id or appName.',
  },
  MODEL_NOT_FOUND: {
    status: 404,
    description:
      "The model router's request names no model, or one that none of the key's endpoints has as its openaiModel: the message names the models there are.",
  },
  JOB_NOT_FOUND: {
    status: 404,
    description: 'No job with that id belongs to the endpoint (it never existed, or its retention ended).',
  },
  JOB_NOT_RETRYABLE: {
    status: 409,
    description: 'Only a FAILED or TIMED_OUT job can be retried.',
  },
  BODY_TOO_LARGE: {
    status: SHARED_ERROR_STATUS.BODY_TOO_LARGE,
    description:
      'The body is over the limit of its route: 10 MB for run, 20 MB for runsync, 1 MB a stream chunk.',
  },
  QUOTA_EXCEEDED: {
    status: 403,
    description:
      'The job would take its owner past a job quota (jobs not finished, bytes of kept jobs); metadata has quota, limit, used and usedAfter. 403, not 429: waiting alone may not help, and no SDK retries it.',
  },
  RATE_LIMITED: {
    status: 429,
    description:
      "The owner's job submissions (run, runsync, retry) are over their rate; wait Retry-After seconds (also metadata.retryAfterSeconds). Nothing was queued.",
  },
  JOB_FAILED: {
    status: 500,
    description:
      "The OpenAI route's job failed (its handler raised or yielded an error): the message is the handler's, recovered from what the SDK stored.",
  },
  JOB_REFUSED_BY_MODEL: {
    status: 400,
    description:
      "The OpenAI route's job failed because the model server behind the handler refused the request (worker-vllm's `vLLM returned HTTP 4xx`): the route answers that server's own status (400, 404, 422, ...), message and type, so that OpenAI's clients raise its error and do not try the request again.",
  },
  JOB_TIMED_OUT: {
    status: 504,
    description:
      "The OpenAI route's job timed out (its execution timeout), or was not finished within the route's wait (then it is cancelled).",
  },
  JOB_CANCELLED: {
    status: 409,
    description: "The OpenAI route's job was cancelled (by a cancel call, or a purge) before it finished.",
  },
  WORKER_UNAUTHENTICATED: {
    status: 401,
    description:
      "A worker route without the worker's own token (RUNPOD_AI_API_KEY) for its endpoint and worker id.",
  },
  RESULT_REFUSED: {
    status: 409,
    description: 'A result, progress update or stream chunk for a job the worker does not hold (any more).',
  },
  STREAM_LIMIT_REACHED: {
    status: 413,
    description:
      "A worker's stream chunk would take its job past the stream's bound (jobs.stream: bytes and chunks per job, 20 MB and 100,000 by default); metadata has maxBytes and maxChunks. The chunk is dropped; the job goes on.",
  },
  WORKER_SLOW_DOWN: {
    status: 429,
    description: 'The worker polls faster than Corral serves it; it retries after a pause.',
  },
  JOBS_UNAVAILABLE: {
    status: 503,
    description: 'The database cannot be reached now; retry shortly. Nothing was accepted.',
  },
  INTERNAL: {
    status: 500,
    description:
      'A fault in Corral; the log has the details. Not answered for bad input, and not one to retry.',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type JobErrorCode = keyof typeof JOBS_ERROR_CATALOGUE;

export class JobError extends CorralError<JobErrorCode> {
  override name = 'JobError';

  constructor(
    code: JobErrorCode,
    message: string = JOBS_ERROR_CATALOGUE[code].description,
    metadata?: Record<string, unknown>,
  ) {
    super(code, JOBS_ERROR_CATALOGUE[code], message, metadata === undefined ? {} : { metadata });
  }

  /** The house body, with `error` (the message) for RunPod's clients. */
  override toBody(): ErrorBody & { error: string } {
    return { ...super.toBody(), error: this.message };
  }
}
