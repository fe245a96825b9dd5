/**
 * The jobs API over real HTTP for unit tests: a real `JobService` and `JobClientRoutes`, and the worker protocol's
 * routes over a real `WorkerJobs` with real worker tokens, on an in-memory SQLite store, behind one real server on
 * 127.0.0.1 port 0, with a real API key, on a manual clock (no long poll waits: calls pass `wait=0`).
 * `serviceOptions`, `routeOptions` and `workerOptions` add what a test needs (quotas, a rate, stream bounds).
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Endpoint } from '../../src/domain/endpoint.js';
import type { SpecPatch } from '../../src/domain/spec-patch.js';
import { JobClientRoutes, type JobClientRoutesOptions } from '../../src/jobs/client-routes.js';
import { JobEvents } from '../../src/jobs/job-events.js';
import { JobService, type JobServiceOptions } from '../../src/jobs/job-service.js';
import { Wakeups } from '../../src/jobs/wakeups.js';
import { WorkerJobs, type WorkerJobsOptions } from '../../src/jobs/worker-jobs.js';
import { workerRoutes } from '../../src/jobs/worker-routes.js';
import { WorkerTokens } from '../../src/jobs/worker-tokens.js';
import { ApiKeyService } from '../../src/service/api-key-service.js';
import { CallerKeys } from '../../src/service/caller-keys.js';
import { InvokeKeyService } from '../../src/service/invoke-key-service.js';
import { connectSqlite } from '../../src/store/sqlite/connect.js';
import { Store } from '../../src/store/store.js';
import { sampleEndpoint, storeEndpoint } from './fixtures.js';
import { ManualTimers } from './manual-timers.js';

export interface JobRoutesHarness {
  base: string;
  store: Store;
  endpoint: Endpoint;
  key: string;
  timers: ManualTimers;
  service: JobService;
  /** Errors the routes logged. */
  logged: { data: object; message: string }[];
  /** A call with the key (or `key`), the body sent as given (a string as is); status, headers and JSON body. */
  call(
    method: string,
    path: string,
    options?: { body?: unknown; key?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; headers: Headers; body: Record<string, any> }>;
  /**
   * A worker's post to its stream URL for a job (the worker's own token); status, reason phrase, JSON body.
   * `withholdBody`: the chunk's length is declared and its body never sent (an answer then came unread).
   */
  stream(
    workerId: string,
    jobId: string,
    chunk: string,
    options?: { withholdBody?: boolean },
  ): Promise<{ status: number; reason: string; body: Record<string, any> }>;
  close(): Promise<void>;
}

export async function startJobRoutes(
  options: {
    serviceOptions?: (store: Store) => Partial<JobServiceOptions>;
    routeOptions?: Partial<JobClientRoutesOptions>;
    workerOptions?: Partial<WorkerJobsOptions>;
    ownerId?: string;
    /** The endpoint's spec beyond `type: queue` (its appName, say). */
    endpointPatch?: SpecPatch;
  } = {},
): Promise<JobRoutesHarness> {
  const timers = new ManualTimers(1_000_000);
  const clock = () => timers.now;
  const store = new Store({ connection: connectSqlite(':memory:') });
  await store.migrate();
  const ownerId = options.ownerId ?? 'owner-a';
  const endpoint = sampleEndpoint({ ownerId, patch: { type: 'queue', ...options.endpointPatch } });
  await storeEndpoint(store, endpoint);
  const made = await new ApiKeyService({ store, clock }).create({ ownerId, name: ownerId, admin: false });
  const keys = new InvokeKeyService({ store, clock });
  const logged: JobRoutesHarness['logged'] = [];
  const logger = {
    warn: (data: object, message: string) => logged.push({ data, message }),
    error: (data: object, message: string) => logged.push({ data, message }),
  };
  const wakeups = new Wakeups({ timers, recheckMs: 500 });
  const events = new JobEvents();
  const service = new JobService({
    jobs: store.jobs,
    clock,
    wakeups,
    events,
    findEndpoints: (ref, reach, limit) => store.endpoints.matching(ref, reach, limit),
    findModelEndpoints: (reach, limit) => store.endpoints.withOpenAIModel(reach, limit),
    keys: new CallerKeys({ verify: (k) => keys.grant(k), clock, timers }),
    retention: { asyncMs: 60_000, syncMs: 60_000 },
    ...options.serviceOptions?.(store),
  });
  const routes = new JobClientRoutes({
    service,
    clock,
    domain: 'localhost',
    logger,
    ...options.routeOptions,
  });
  const tokens = new WorkerTokens({ secret: 'job-routes-test-secret' });
  const workers = new WorkerJobs({
    jobs: store.jobs,
    clock,
    wakeups,
    events,
    maxAttempts: 3,
    ...options.workerOptions,
  });
  const workerHandler = workerRoutes({
    workers,
    tokens,
    findEndpoint: async (id) => (await store.endpoints.getMany([id]))[0]?.endpoint,
    logger,
    takeHoldMs: 0,
    stopHoldMs: 0,
  });
  const server: Server = createServer((req, res) => {
    if (routes.claims(req) && !req.url?.includes('/job-')) routes.handleRequest(req, res);
    else if (!workerHandler(req, res)) res.writeHead(418).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    store,
    endpoint,
    key: made.key,
    timers,
    service,
    logged,
    async call(method, path, callOptions = {}) {
      const { body } = callOptions;
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${callOptions.key ?? made.key}`, ...callOptions.headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      const text = await response.text();
      return {
        status: response.status,
        headers: response.headers,
        body: text === '' ? {} : (JSON.parse(text) as Record<string, any>),
      };
    },
    async stream(workerId, jobId, chunk, streamOptions = {}) {
      const path = `/v2/${endpoint.id}/job-stream/${workerId}/${jobId}?worker=${workerId}`;
      // node's fetch does not expose the reason phrase: a raw request does.
      return new Promise((resolve, reject) => {
        const req = request(
          `${base}${path}`,
          {
            method: 'POST',
            headers: {
              authorization: tokens.issue(endpoint.id, workerId),
              'content-length': String(Buffer.byteLength(chunk)),
            },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (part: string) => {
              text += part;
            });
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                reason: res.statusMessage ?? '',
                body: text === '' ? {} : (JSON.parse(text) as Record<string, any>),
              }),
            );
          },
        );
        req.on('error', reject);
        if (streamOptions.withholdBody) req.flushHeaders();
        else req.end(chunk);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await store.close();
    },
  };
}
