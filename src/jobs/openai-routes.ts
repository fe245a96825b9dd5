/**
 * RunPod's OpenAI-compatible route on queue endpoints (issue 35): `/v2/{endpoint}/openai/v1/...`, claimed by the
 * client routes (client-routes.ts, which checks the key first, as for every job route). Each request is a job with
 * input `{"openai_route", "openai_input"}` (contract/openai.ts); the answer is the handler's one object, or, when
 * the body asks for `stream`, its yields passed through as server-sent events chunk by chunk as they arrive. A
 * failed, timed-out or cancelled job answers in OpenAI's error shape, and a client that goes away cancels its job.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  openAIAnswer,
  openAIErrorBody,
  openAIErrorType,
  openAIStreamText,
  parseOpenAIRequest,
  recoverFailure,
} from '../contract/openai.js';
import type { Endpoint } from '../domain/endpoint.js';
import { DEFAULT_JOB_POLICY, isTerminal, JOB_LIMITS, type Job } from '../domain/job.js';
import { JobError } from '../errors/jobs-catalogue.js';
import type { RateDecision, RequestRate } from '../ports/rate-limit.js';
import {
  abortOnClose,
  asJobError,
  type JobsLogger,
  readBody,
  reasonPhrase,
  retryAfterHeader,
  writeJson,
} from './http-io.js';
import type { JobService } from './job-service.js';

export interface OpenAIJobRoutesOptions {
  service: JobService;
  logger: JobsLogger;
  /** How long a request waits for its job to finish, or for its first streamed chunk; then the job is cancelled. */
  maxWaitMs: number;
  /** One wait for the next chunk once a stream has begun (the job's execution timeout bounds the whole). */
  chunkWaitMs: number;
}

/** One OpenAI request that the client routes authorised. */
export interface OpenAICall {
  /** The endpoint the key may call (the job routes' own check; its refusal answers in OpenAI's shape too). */
  authorize: () => Promise<Endpoint>;
  /** The route under `/openai`, as RunPod passes it: `/v1/chat/completions`. */
  route: string;
  /** Charges a submission to the owner's rate (the client routes' own check). */
  admit: (endpoint: Endpoint, take: (rate: RequestRate, key: string) => RateDecision) => void;
}

export class OpenAIJobRoutes {
  readonly #o: OpenAIJobRoutesOptions;

  constructor(options: OpenAIJobRoutesOptions) {
    this.#o = options;
  }

  /** Serves the call; every failure is answered in OpenAI's shape. */
  async serve(req: IncomingMessage, res: ServerResponse, call: OpenAICall): Promise<void> {
    try {
      await this.#serve(req, res, call);
    } catch (error) {
      writeOpenAIError(res, asJobError(error, this.#o.logger));
    }
  }

  async #serve(req: IncomingMessage, res: ServerResponse, call: OpenAICall): Promise<void> {
    const method = req.method ?? 'GET';
    if (!call.route.startsWith('/v1/') || (method !== 'GET' && method !== 'POST'))
      throw new JobError(
        'INVALID_JOB_REQUEST',
        `no route ${method} /v2/{endpoint}/openai${call.route}: GET or POST /v2/{endpoint}/openai/v1/...`,
      );
    const endpoint = await call.authorize();
    if (endpoint.spec.type === 'http')
      // The gateway passes these to the workers (gateway/openai-passthrough.ts) when it routes the endpoint by the
      // id or appName in the path; a name, or an endpoint created since the gateway's last look, reaches here.
      throw new JobError(
        'INVALID_JOB_REQUEST',
        `endpoint ${endpoint.id} is an http endpoint: its OpenAI route passes requests to its workers at /v2/${endpoint.spec.appName}/openai/v1/... (its id or appName, not its name; a new endpoint once the gateway routes it)`,
      );
    let body: string | undefined;
    if (method === 'POST') {
      const limit = JOB_LIMITS.runsyncBodyBytes;
      const declared = req.headers['content-length'];
      call.admit(endpoint, (rate, key) => rate.takeRequest(key, declared, limit));
      body = await readBody(req, limit, 'an OpenAI request body');
      const size = Buffer.byteLength(body);
      if (declared === undefined) call.admit(endpoint, (rate, key) => rate.takeUndeclaredBody(key, size));
    } else call.admit(endpoint, (rate, key) => rate.takeRequest(key, undefined, 0));
    const parsed = parseOpenAIRequest(call.route, body);
    if (!parsed.ok) throw new JobError('INVALID_JOB_REQUEST', parsed.problem);
    const { service } = this.#o;
    const job = await service.submit(
      endpoint,
      {
        input: parsed.value.input,
        inputBytes: Buffer.byteLength(parsed.value.input),
        webhook: null,
        policy: DEFAULT_JOB_POLICY,
      },
      true,
    );
    const gone = abortOnClose(res);
    gone.addEventListener('abort', () => {
      service
        .cancel(endpoint, job.id)
        .catch((error: unknown) =>
          this.#o.logger.warn(
            { job: job.id, err: error instanceof Error ? error.message : String(error) },
            'the OpenAI client went away and its job could not be cancelled',
          ),
        );
    });
    if (parsed.value.stream) await this.#stream(res, endpoint, job.id, gone);
    else {
      const done = await service.awaitFinished(endpoint, job.id, this.#o.maxWaitMs, gone);
      if (gone.aborted) return;
      if (done.status === 'COMPLETED') writeJson(res, 200, openAIAnswer(done.output));
      else throw await this.#unfinished(endpoint, done);
    }
  }

  /**
   * The job's chunks as they arrive: headers with the first, then each as it was yielded; a failure before the
   * first is an error answer, after it an `error` event (what OpenAI's clients raise mid-stream).
   */
  async #stream(res: ServerResponse, endpoint: Endpoint, jobId: string, gone: AbortSignal): Promise<void> {
    const { service } = this.#o;
    let began = false;
    let atEventEnd = true;
    for (;;) {
      const waitMs = began ? this.#o.chunkWaitMs : this.#o.maxWaitMs;
      const next = await service.nextChunks(endpoint, jobId, waitMs, gone);
      if (gone.aborted) return;
      if ('chunks' in next) {
        if (!began)
          res.writeHead(200, {
            'content-type': 'text/event-stream',
            'cache-control': 'no-cache',
            'x-accel-buffering': 'no',
          });
        began = true;
        const text = next.chunks.map(openAIStreamText).join('');
        if (text !== '') atEventEnd = text.endsWith('\n\n');
        res.write(text);
        continue;
      }
      const { job } = next;
      if (!isTerminal(job.status) && began) continue;
      if (job.status === 'COMPLETED') {
        // A handler that returned its answer instead of yielding server-sent events: the answer as JSON.
        if (began) res.end();
        else writeJson(res, 200, openAIAnswer(job.output));
        return;
      }
      const failure = await this.#unfinished(endpoint, job);
      if (!began) throw failure;
      // A handler cut off inside an event: a blank line ends it, so that the error is an event of its own.
      const separator = atEventEnd ? '' : '\n\n';
      res.end(`${separator}data: ${openAIErrorBody(failure.message, errorType(failure), failure.code)}\n\n`);
      return;
    }
  }

  /** The error for a job that did not complete; one still running past the wait is cancelled first. */
  async #unfinished(endpoint: Endpoint, job: Job): Promise<JobError> {
    if (!isTerminal(job.status)) {
      await this.#o.service.cancel(endpoint, job.id);
      return new JobError(
        'JOB_TIMED_OUT',
        `the job was not finished within ${this.#o.maxWaitMs} ms (${job.status}); it was cancelled`,
      );
    }
    if (job.status === 'TIMED_OUT')
      return new JobError('JOB_TIMED_OUT', 'the job ran past its execution timeout');
    if (job.status === 'CANCELLED') return new JobError('JOB_CANCELLED', 'the job was cancelled');
    const failure = recoverFailure(job.error);
    const type = failure.type === undefined ? {} : { type: failure.type };
    if (failure.status !== undefined)
      return new JobError('JOB_REFUSED_BY_MODEL', failure.message, { ...type, status: failure.status });
    return new JobError('JOB_FAILED', failure.message, type);
  }
}

/** OpenAI's error type for a JobError: the handler's own for a failed job, else the one of its status. */
function errorType(error: JobError): string {
  const type = error.metadata.type;
  return typeof type === 'string' ? type : openAIErrorType(error.status);
}

/** The status a refusal is answered with: the model server's own for one it refused, else the code's. */
function answerStatus(error: JobError): number {
  const status = error.metadata.status;
  return typeof status === 'number' ? status : error.status;
}

/** Answers `error` in OpenAI's shape with its status (the model router's refusals too). */
export function writeOpenAIError(res: ServerResponse, error: JobError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  writeJson(
    res,
    answerStatus(error),
    openAIErrorBody(error.message, errorType(error), error.code),
    retryAfterHeader(error),
    reasonPhrase(error.message),
  );
}
