/**
 * `CorralClient`: one typed method per API operation, each checking the shape of the answer it returns. The
 * transport is http.ts (JSON) and stream.ts (log lines); like them, it uses no Node-only API.
 */
import type { WireApiKey, WireNewApiKey } from '../contract/api-keys.js';
import type { WireBillingParams, WireBillingRow } from '../contract/billing.js';
import type { WireCluster } from '../contract/cluster.js';
import type { WireGpus } from '../contract/gpus.js';
import type { WireEndpointJobs, WireJobDetail, WireJobListing } from '../contract/job-views.js';
import type { WireCachedModel, WireModelPull, WireModels } from '../contract/models.js';
import { API_PREFIX } from '../contract/paths.js';
import type { WireQuotaReport } from '../contract/quota.js';
import type { WireWebhookSecret } from '../contract/webhook-secrets.js';
import type {
  WireCredential,
  WireEndedWorker,
  WireEndpoint,
  WireEndpointHistory,
  WireEndpointInput,
  WireEndpointMetrics,
  WireInvokeKey,
  WireLimits,
  WireNewInvokeKey,
  WireProduct,
  WireSecret,
} from '../contract/wire.js';
import { CorralProtocolError } from './errors.js';
import {
  type HttpRequest,
  isRecord,
  makeTransport,
  type Query,
  send,
  type TransportOptions,
} from './http.js';
import type { JobListParams } from './job-types.js';
import { streamLines } from './stream.js';
import type {
  CorralClientOptions,
  CreatedResult,
  EndpointLogPage,
  EndpointLogParams,
  ListEndpointsParams,
  ListEndpointsResult,
  SaveCredentialInput,
  SavedSecret,
  WorkerLogOptions,
  WorkerMetrics,
} from './types.js';

/**
 * Typed client for Corral's endpoint API (wire-compatible with the original service). Every method
 * throws CorralApiError for a non-2xx answer, CorralConnectionError when no answer arrives and
 * CorralProtocolError when a 2xx body is not the expected JSON shape.
 */
export class CorralClient {
  readonly baseUrl: string;
  readonly #transport: TransportOptions;

  constructor(options: CorralClientOptions) {
    this.#transport = makeTransport(options, {
      what: 'Corral API URL',
      example: 'http://127.0.0.1:8080',
      server: 'the Corral API',
    });
    this.baseUrl = this.#transport.baseUrl;
  }

  /** `GET endpoints`; `pageNum` is zero-based. */
  async listEndpoints(params: ListEndpointsParams = {}): Promise<ListEndpointsResult> {
    const body = await this.#get('endpoints', { pageSize: params.pageSize, pageNum: params.pageNum });
    return {
      endpoints: field<WireEndpoint<string>[]>(body, 'endpoints', 'array'),
      total: numberField(body, 'total'),
    };
  }

  /** `POST endpoint/create` with `{endpoint}`; returns the new id. */
  async createEndpoint(endpoint: WireEndpointInput): Promise<CreatedResult> {
    const body = await this.#post('endpoint/create', { endpoint });
    return { id: field<string>(body, 'id', 'string') };
  }

  /** `GET endpoint?id=`. */
  async getEndpoint(id: string): Promise<WireEndpoint<number>> {
    const body = await this.#get('endpoint', { id });
    return field<WireEndpoint<number>>(body, 'endpoint', 'object');
  }

  /** `POST endpoint/update` with a flat body; fields left out keep their current value. */
  async updateEndpoint(id: string, fields: WireEndpointInput): Promise<WireEndpoint<number>> {
    const body = await this.#post('endpoint/update', { ...fields, id });
    return field<WireEndpoint<number>>(body, 'endpoint', 'object');
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.#post('endpoint/delete', { id });
  }

  /** Drains and removes all workers; the endpoint's URL answers 503 until started again. */
  async stopEndpoint(id: string): Promise<void> {
    await this.#post('endpoint/stop', { id });
  }

  async startEndpoint(id: string): Promise<void> {
    await this.#post('endpoint/start', { id });
  }

  /** `GET endpoint/limit`: allowed parameter ranges. */
  async getLimits(): Promise<WireLimits> {
    const body = await this.#get('endpoint/limit');
    if (!isRecord(body)) throw shapeError('endpoint/limit', 'an object');
    return body as unknown as WireLimits;
  }

  /** `GET quota`: the caller's quotas, its use of each, and which apply and why. */
  async getQuota(): Promise<WireQuotaReport> {
    const body = await this.#get('quota');
    field<WireQuotaReport['quota']>(body, 'quota', 'object');
    field<WireQuotaReport['used']>(body, 'used', 'object');
    return body as WireQuotaReport;
  }

  /** `GET endpoint/log`: one page of an endpoint's events. */
  async getEndpointLog(id: string, params: EndpointLogParams = {}): Promise<EndpointLogPage> {
    const body = await this.#get('endpoint/log', { id, after: params.after, limit: params.limit });
    return { events: field(body, 'events', 'array'), next: numberField(body, 'next') };
  }

  /** `GET endpoint/jobs` (extension): the counts by status and the recent jobs, newest first, without their data. */
  async listEndpointJobs(id: string, params: JobListParams = {}): Promise<WireEndpointJobs> {
    const body = await this.#get('endpoint/jobs', { id, status: params.status, limit: params.limit });
    field<WireEndpointJobs['counts']>(body, 'counts', 'object');
    field<WireEndpointJobs['jobs']>(body, 'jobs', 'array');
    return body as WireEndpointJobs;
  }

  /** `GET endpoint/job` (extension): one job with its input, output and unread stream chunks (each perhaps cut). */
  async getEndpointJob(id: string, jobId: string): Promise<WireJobDetail> {
    return field<WireJobDetail>(await this.#get('endpoint/job', { id, job: jobId }), 'job', 'object');
  }

  /** `POST endpoint/job/cancel` (extension): cancels a queued or running job. */
  async cancelEndpointJob(id: string, jobId: string): Promise<WireJobListing> {
    return field<WireJobListing>(
      await this.#post('endpoint/job/cancel', { id, job: jobId }),
      'job',
      'object',
    );
  }

  /** `POST endpoint/job/retry` (extension): queues a FAILED or TIMED_OUT job again. */
  async retryEndpointJob(id: string, jobId: string): Promise<WireJobListing> {
    return field<WireJobListing>(await this.#post('endpoint/job/retry', { id, job: jobId }), 'job', 'object');
  }

  /** `GET endpoint/metrics?id=`: workers by state and the gateway's traffic figures. */
  async getEndpointMetrics(id: string): Promise<WireEndpointMetrics> {
    const body = await this.#get('endpoint/metrics', { id });
    field<string>(body, 'id', 'string');
    field(body, 'workers', 'object');
    return body as WireEndpointMetrics;
  }

  /** `GET endpoint/metrics/history?id=`: the endpoint's samples over time, oldest first, in columns. */
  async getEndpointHistory(id: string): Promise<WireEndpointHistory> {
    const body = await this.#get('endpoint/metrics/history', { id });
    field<string>(body, 'id', 'string');
    field(body, 'at', 'array');
    field(body, 'requests', 'object');
    field(body, 'workers', 'object');
    return body as WireEndpointHistory;
  }

  /** `GET endpoint/worker/metrics?id=&worker=`: one worker's state, GPUs and resource use. */
  async getWorkerMetrics(endpointId: string, workerId: string): Promise<WorkerMetrics> {
    const body = await this.#get('endpoint/worker/metrics', { id: endpointId, worker: workerId });
    field<string>(body, 'id', 'string');
    field<string>(body, 'state', 'string');
    return body as WorkerMetrics;
  }

  /**
   * `GET endpoint/worker/ended?id=`: the endpoint's workers that ended and whose last output is kept, the most
   * recently ended first; `streamWorkerLog` gives that output.
   */
  async listEndedWorkers(endpointId: string): Promise<WireEndedWorker[]> {
    return field<WireEndedWorker[]>(
      await this.#get('endpoint/worker/ended', { id: endpointId }),
      'workers',
      'array',
    );
  }

  /**
   * `POST endpoint/worker/drain`: drains one of your workers (it takes no new request, finishes those in flight
   * and is replaced), or with `drain: false` puts it back before its removal.
   */
  async drainWorker(workerId: string, drain = true): Promise<void> {
    await this.#post('endpoint/worker/drain', { workerID: workerId, drain });
  }

  /**
   * `GET endpoint/worker/log?id=&worker=`: the worker's log, one string per line, as the lines
   * arrive. The request is sent when iteration starts; a non-2xx answer is thrown from the loop.
   * With `follow` the stream stays open until `signal` aborts (which ends the loop cleanly) or
   * the worker goes away; leaving the loop early closes the connection. The client's timeout
   * only bounds the wait for the answer to begin.
   */
  streamWorkerLog(
    endpointId: string,
    workerId: string,
    options: WorkerLogOptions = {},
  ): AsyncIterable<string> {
    return streamLines(
      this.#transport,
      {
        method: 'GET',
        path: `${API_PREFIX}/endpoint/worker/log`,
        query: {
          id: endpointId,
          worker: workerId,
          follow: options.follow === true ? 1 : undefined,
          tail: options.tail,
        },
      },
      options.signal,
    );
  }

  /** `GET cluster` (admin keys only): the replicas on the server's database and the leader. */
  async getCluster(): Promise<WireCluster> {
    const body = await this.#get('cluster');
    if (!isRecord(body) || !Array.isArray(body.replicas))
      throw shapeError('cluster', 'an object with replicas');
    return body as unknown as WireCluster;
  }

  async listProducts(): Promise<WireProduct[]> {
    return field<WireProduct[]>(await this.#get('products'), 'products', 'array');
  }

  /** `POST repository/auth/save`; the id goes into an endpoint's `image.authId`. */
  async saveCredential(input: SaveCredentialInput): Promise<CreatedResult> {
    const body = await this.#post('repository/auth/save', {
      name: input.name,
      username: input.username,
      password: input.password,
    });
    return { id: field<string>(body, 'id', 'string') };
  }

  async listCredentials(): Promise<WireCredential[]> {
    return field<WireCredential[]>(await this.#get('repository/auths'), 'auths', 'array');
  }

  async deleteCredential(id: string): Promise<void> {
    await this.#post('repository/auth/delete', { id });
  }

  /** `POST endpoint/invoke-key/create` (extension): a key that calls only this endpoint's URL, shown this once. */
  async createInvokeKey(endpointId: string, name = ''): Promise<WireNewInvokeKey> {
    const body = await this.#post('endpoint/invoke-key/create', { id: endpointId, name });
    field<string>(body, 'key', 'string');
    field<string>(body, 'id', 'string');
    return body as WireNewInvokeKey;
  }

  /** `GET endpoint/invoke-keys?id=` (extension): the endpoint's invoke keys, revoked ones included, never a key. */
  async listInvokeKeys(endpointId: string): Promise<WireInvokeKey[]> {
    return field<WireInvokeKey[]>(
      await this.#get('endpoint/invoke-keys', { id: endpointId }),
      'keys',
      'array',
    );
  }

  /** `POST endpoint/invoke-key/delete` (extension): the gateway refuses the key within 10 seconds. */
  async revokeInvokeKey(endpointId: string, keyId: string): Promise<void> {
    await this.#post('endpoint/invoke-key/delete', { id: endpointId, keyId });
  }

  /** `POST secret/save` (extension): creates or replaces a secret for `{{ CORRAL_SECRET_name }}` in env values. */
  async saveSecret(name: string, value: string): Promise<SavedSecret> {
    const body = await this.#post('secret/save', { name, value });
    return {
      name: field<string>(body, 'name', 'string'),
      replaced: isRecord(body) && body.replaced === true,
    };
  }

  /** `GET secrets`: names and times, never values. */
  async listSecrets(): Promise<WireSecret[]> {
    return field<WireSecret[]>(await this.#get('secrets'), 'secrets', 'array');
  }

  async deleteSecret(name: string): Promise<void> {
    await this.#post('secret/delete', { name });
  }

  /** `GET endpoint/webhook-secret` (extension): the secret that signs the endpoint's job webhooks, made on first use. */
  async getWebhookSecret(endpointId: string): Promise<WireWebhookSecret> {
    return webhookSecret(await this.#get('endpoint/webhook-secret', { id: endpointId }));
  }

  /** `POST endpoint/webhook-secret/rotate` (extension): a new secret; every delivery attempt from now on uses it. */
  async rotateWebhookSecret(endpointId: string): Promise<WireWebhookSecret> {
    return webhookSecret(await this.#post('endpoint/webhook-secret/rotate', { id: endpointId }));
  }

  /** `GET gpus` (extension): the inventory, who holds each GPU (others' only for admin keys), waiting workers. */
  async getGpus(): Promise<WireGpus> {
    const body = await this.#get('gpus');
    field<WireGpus['gpus']>(body, 'gpus', 'array');
    field<WireGpus['waiting']>(body, 'waiting', 'array');
    return body as WireGpus;
  }

  /**
   * `GET billing/endpoints` (RunPod's billing route): the usage ledger's rows by bucket and by endpoint, GPU type or
   * (Corral's own) owner or state; times ISO 8601.
   */
  async getBilling(params: WireBillingParams = {}): Promise<WireBillingRow[]> {
    const body = await this.#get('billing/endpoints', { ...params });
    if (!Array.isArray(body)) throw new CorralProtocolError('GET billing/endpoints answered no array');
    return body as WireBillingRow[];
  }

  /** `GET models` (extension): the cached models (an admin key: all; any other: those its endpoints name). */
  async listModels(): Promise<WireModels> {
    const body = await this.#get('models');
    field<WireModels['models']>(body, 'models', 'array');
    return body as WireModels;
  }

  /**
   * `POST models` (extension): pulls a model into the server's cache with your token (the value of your
   * `tokenSecret`). Its `download` is non-null while it is downloaded (the download goes on after the answer: follow
   * it with `listModels`), null when it was already cached.
   */
  async pullModel(model: WireModelPull): Promise<WireCachedModel> {
    const body = await this.#post('models', model);
    field<string>(body, 'commit', 'string');
    return body as WireCachedModel;
  }

  /**
   * `DELETE models/{org}/{name}` (extension, admin keys): removes a cached model, every revision or the one named;
   * refused (MODEL_IN_USE) while an endpoint names it and (MODEL_DOWNLOADING) while it is downloaded.
   */
  async removeModel(name: string, options: { revision?: string } = {}): Promise<void> {
    await this.#send({
      method: 'DELETE',
      path: `${API_PREFIX}/models/${name.split('/').map(encodeURIComponent).join('/')}`,
      query: { revision: options.revision },
    });
  }

  /** `GET apikeys` (extension, admin keys): every owner's API keys, revoked ones included, never a key. */
  async listApiKeys(): Promise<WireApiKey[]> {
    return field<WireApiKey[]>(await this.#get('apikeys'), 'keys', 'array');
  }

  /** `POST apikey/create` (extension, admin keys): the new key is in this answer only. */
  async createApiKey(
    input: { name?: string; ownerId?: string; admin?: boolean } = {},
  ): Promise<WireNewApiKey> {
    const body = await this.#post('apikey/create', input);
    field<string>(body, 'key', 'string');
    field<string>(body, 'id', 'string');
    return body as WireNewApiKey;
  }

  /** `POST apikey/delete` (extension, admin keys): requests with the key are refused at once. */
  async deleteApiKey(id: string): Promise<void> {
    await this.#post('apikey/delete', { id });
  }

  /** `GET /healthz` (unauthenticated). */
  async health(): Promise<{ status: string }> {
    const body = await send(this.#transport, { method: 'GET', path: '/healthz', auth: false });
    return { status: field<string>(body, 'status', 'string') };
  }

  /**
   * Where the gateway serves the jobs API, as the API's own OpenAPI document says (`GET /openapi.json`, no key): the
   * server of its `/v2/` paths (the public URL's origin, else the name the API was reached by on the gateway's
   * port); undefined when the document names none.
   */
  async gatewayUrl(): Promise<string | undefined> {
    const body = await send(this.#transport, { method: 'GET', path: '/openapi.json', auth: false });
    const paths = isRecord(body) && isRecord(body.paths) ? body.paths : {};
    for (const [path, item] of Object.entries(paths)) {
      if (!path.startsWith('/v2/') || !isRecord(item) || !Array.isArray(item.servers)) continue;
      const [server] = item.servers as unknown[];
      if (isRecord(server) && typeof server.url === 'string') return server.url;
    }
    return undefined;
  }

  #get(route: string, query?: Query): Promise<unknown> {
    return this.#send({ method: 'GET', path: `${API_PREFIX}/${route}`, query });
  }

  #post(route: string, body: unknown): Promise<unknown> {
    return this.#send({ method: 'POST', path: `${API_PREFIX}/${route}`, body });
  }

  #send(request: HttpRequest): Promise<unknown> {
    return send(this.#transport, request);
  }
}

type Kind = 'array' | 'object' | 'string';

function webhookSecret(body: unknown): WireWebhookSecret {
  return {
    endpointId: field<string>(body, 'endpointId', 'string'),
    secret: field<string>(body, 'secret', 'string'),
    createdAt: field<string>(body, 'createdAt', 'string'),
  };
}

function field<T>(body: unknown, key: string, kind: Kind): T {
  const value = isRecord(body) ? body[key] : undefined;
  const ok =
    kind === 'array' ? Array.isArray(value) : kind === 'object' ? isRecord(value) : typeof value === 'string';
  if (!ok) throw shapeError(key, kind === 'array' ? 'an array' : `a ${kind}`);
  return value as T;
}

function numberField(body: unknown, key: string): number {
  const value = isRecord(body) ? body[key] : undefined;
  if (typeof value !== 'number') throw shapeError(key, 'a number');
  return value;
}

function shapeError(key: string, expected: string): CorralProtocolError {
  return new CorralProtocolError(`unexpected response from the Corral API: "${key}" is not ${expected}`);
}
