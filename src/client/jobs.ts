/**
 * `CorralJobsClient`: the jobs API on the gateway's address (RunPod's shapes: run, runsync, status, stream, cancel,
 * purge-queue; Corral's jobs listing), one method per route, with the key sent as `Authorization: Bearer`; the
 * endpoint is its id or its appName. Errors are the client's own (errors.ts), as `CorralClient`'s.
 */
import { CorralProtocolError } from './errors.js';
import { isRecord, makeTransport, type Query, send, type TransportOptions } from './http.js';
import {
  JOB_STATUSES,
  type JobListParams,
  type RunJobInput,
  type WireJob,
  type WireJobList,
  type WireJobStream,
  type WirePurge,
} from './job-types.js';

export interface CorralJobsClientOptions {
  /** The gateway's base URL, e.g. http://127.0.0.1:8000 (a trailing /v2, RunPod's form, is accepted). */
  baseUrl: string;
  /** The owner's API key or an invoke key of the endpoint. */
  apiKey: string;
  fetch?: typeof fetch;
  /** The bound on one call but `runsync`, which waits `wait` ms more. Default 30 s. */
  timeoutMs?: number;
}

export class CorralJobsClient {
  readonly baseUrl: string;
  readonly #transport: TransportOptions;

  constructor(options: CorralJobsClientOptions) {
    const transport = makeTransport(options, {
      what: 'Corral gateway URL',
      example: 'http://127.0.0.1:8000',
      server: 'the Corral gateway',
    });
    // RunPod's form of the base URL ends in /v2, which every route adds.
    this.baseUrl = transport.baseUrl.replace(/\/v2$/, '');
    this.#transport = { ...transport, baseUrl: this.baseUrl };
  }

  /** `POST /v2/{endpoint}/run`: queues the job; answers its id and status (IN_QUEUE). */
  async run(endpoint: string, job: RunJobInput): Promise<WireJob> {
    return jobOf(await this.#send('POST', endpoint, 'run', job));
  }

  /** `POST /v2/{endpoint}/runsync?wait=`: runs it and waits up to `waitMs` for the end (else its status so far). */
  async runSync(endpoint: string, job: RunJobInput, waitMs?: number): Promise<WireJob> {
    const timeoutMs = this.#transport.timeoutMs + (waitMs ?? 90_000);
    return jobOf(await this.#send('POST', endpoint, 'runsync', job, { wait: waitMs }, timeoutMs));
  }

  /** `GET /v2/{endpoint}/status/{job}`. */
  async status(endpoint: string, jobId: string): Promise<WireJob> {
    return jobOf(await this.#send('GET', endpoint, `status/${encodeURIComponent(jobId)}`));
  }

  /**
   * `GET /v2/{endpoint}/stream/{job}?wait=`: the chunks a generator handler yielded since the last read (each given
   * once; a long poll of up to `waitMs` while there is none) and the job's status.
   */
  async stream(endpoint: string, jobId: string, waitMs?: number): Promise<WireJobStream> {
    const timeoutMs = this.#transport.timeoutMs + (waitMs ?? 10_000);
    const route = `stream/${encodeURIComponent(jobId)}`;
    const body = await this.#send('GET', endpoint, route, undefined, { wait: waitMs }, timeoutMs);
    if (!isRecord(body) || !JOB_STATUSES.includes(body.status as WireJob['status'])) {
      throw shape('status', 'a job status');
    }
    const stream = Array.isArray(body.stream) ? body.stream : [];
    return {
      status: body.status as WireJob['status'],
      stream: stream.map((item) => (isRecord(item) ? item.output : item)),
    };
  }

  /** `POST /v2/{endpoint}/cancel/{job}`. */
  async cancel(endpoint: string, jobId: string): Promise<WireJob> {
    return jobOf(await this.#send('POST', endpoint, `cancel/${encodeURIComponent(jobId)}`));
  }

  /** `POST /v2/{endpoint}/purge-queue`: removes the jobs still queued. */
  async purgeQueue(endpoint: string): Promise<WirePurge> {
    const body = await this.#send('POST', endpoint, 'purge-queue');
    if (!isRecord(body) || typeof body.removed !== 'number') throw shape('removed', 'a number');
    return body as unknown as WirePurge;
  }

  /** `GET /v2/{endpoint}/jobs?status=&limit=` (Corral extension): recent jobs and the counts by status. */
  async list(endpoint: string, params: JobListParams = {}): Promise<WireJobList> {
    const body = await this.#send('GET', endpoint, 'jobs', undefined, {
      status: params.status,
      limit: params.limit,
    });
    if (!isRecord(body) || !Array.isArray(body.jobs)) throw shape('jobs', 'an array');
    if (!isRecord(body.counts)) throw shape('counts', 'an object');
    return { jobs: body.jobs.map(jobOf), counts: body.counts as WireJobList['counts'] };
  }

  #send(
    method: 'GET' | 'POST',
    endpoint: string,
    route: string,
    body?: unknown,
    query?: Query,
    timeoutMs?: number,
  ): Promise<unknown> {
    const transport = timeoutMs === undefined ? this.#transport : { ...this.#transport, timeoutMs };
    return send(transport, {
      method,
      path: `/v2/${encodeURIComponent(endpoint)}/${route}`,
      ...(query ? { query } : {}),
      ...(body === undefined ? {} : { body }),
    });
  }
}

function jobOf(body: unknown): WireJob {
  if (!isRecord(body) || typeof body.id !== 'string') throw shape('id', 'a string');
  if (!JOB_STATUSES.includes(body.status as WireJob['status'])) throw shape('status', 'a job status');
  return body as WireJob;
}

function shape(key: string, expected: string): CorralProtocolError {
  return new CorralProtocolError(`unexpected answer from the Corral jobs API: "${key}" is not ${expected}`);
}
