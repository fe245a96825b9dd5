/**
 * `endpoint/worker/log` and `endpoint/worker/metrics`: a worker's log lines and resource use (WorkerInsight);
 * `endpoint/worker/drain`: its owner drains or undrains it (WorkerService).
 */
import type { FastifyInstance } from 'fastify';
import { validationError } from '../../contract/errors.js';
import { ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readInteger, readQueryId } from '../../contract/query.js';
import type { WireWorkerMetrics } from '../../contract/wire.js';
import { parseDrainBody } from '../../contract/worker-drain.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { LogOptions, WorkerStats } from '../../runtime/types.js';
import type { AppOptions } from '../app.js';

/** What the API may ask of the runtime about a worker: its output and its resource use, nothing else. */
export interface WorkerInsight {
  logs(workerId: string, options: LogOptions): AsyncIterable<string>;
  stats(workerId: string): Promise<WorkerStats | undefined>;
  /** The gateway's view of the worker's traffic, where this process runs a gateway. */
  load?(endpointId: string, workerId: string): { requests: number; inFlight: number };
}

type Query = Record<string, string | string[] | undefined>;

export function registerWorkerRoutes(api: FastifyInstance, o: AppOptions): void {
  const findWorker = async (principal: Parameters<AppOptions['endpoints']['get']>[0], query: Query) => {
    const endpoint = await o.endpoints.get(principal, readQueryId(query, ENDPOINT_ID_KEYS));
    const workerId = readQueryId(query, ['worker', 'worker_id']);
    const worker = (await o.workers.listByEndpoint(endpoint.id)).find((w) => w.id === workerId);
    if (!worker) {
      throw new ApiError('WORKER_NOT_FOUND', `endpoint ${endpoint.id} has no worker "${workerId}"`, {
        workerId,
      });
    }
    return worker;
  };
  const insight = (): WorkerInsight => {
    if (!o.insight)
      throw new ApiError('WORKER_NOT_FOUND', 'this server runs no controller, so it has no worker logs');
    return o.insight;
  };

  /** Plain text, one line per log line; `follow=1` keeps streaming until the client goes away. */
  api.get('/endpoint/worker/log', async (request, reply) => {
    const query = request.query as Query;
    const worker = await findWorker(request.principal, query);
    const follow = query.follow === '1' || query.follow === 'true';
    const tail = query.tail === undefined ? undefined : readInteger(query, 'tail', 100, 0);
    const abort = new AbortController();
    request.raw.on('close', () => abort.abort());
    const lines = insight().logs(worker.id, {
      follow,
      ...(tail === undefined ? {} : { tail }),
      signal: abort.signal,
    });
    reply.raw.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache' });
    try {
      for await (const line of lines) {
        if (!reply.raw.write(`${line}\n`)) await new Promise((resolve) => reply.raw.once('drain', resolve));
      }
    } catch (error) {
      if (!abort.signal.aborted) reply.raw.write(`[corral] log stream ended: ${(error as Error).message}\n`);
    }
    reply.raw.end();
    return reply;
  });

  api.get('/endpoint/worker/metrics', async (request): Promise<WireWorkerMetrics> => {
    const worker = await findWorker(request.principal, request.query as Query);
    const stats = await insight()
      .stats(worker.id)
      .catch(() => undefined);
    return {
      id: worker.id,
      state: worker.status.state,
      healthy: worker.healthy,
      gpus: worker.gpuUuids,
      requests: o.insight?.load?.(worker.endpointId, worker.id).requests ?? null,
      inFlight: o.insight?.load?.(worker.endpointId, worker.id).inFlight ?? null,
      cpuPercent: stats?.cpuPercent ?? null,
      memoryBytes: stats?.memoryBytes ?? null,
      startedAt: new Date(worker.createdAt).toISOString(),
      readyAt: worker.readyAt === null ? null : new Date(worker.readyAt).toISOString(),
    };
  });
  /** A drained worker takes no new request, finishes those in flight and is replaced; `drain: false` undoes it. */
  api.post('/endpoint/worker/drain', async (request) => {
    const parsed = parseDrainBody(request.body);
    if (!parsed.ok) throw validationError(parsed.issues, (field) => field);
    const { workerId, drain } = parsed.value;
    const worker = await o.workerService.setDrain(request.principal, workerId, drain);
    request.log.info({ workerId, endpointId: worker.endpointId, drain }, 'worker drain changed');
    return {};
  });
}
