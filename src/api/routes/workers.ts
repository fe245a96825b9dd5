/**
 * `endpoint/worker/log` and `endpoint/worker/metrics`: a worker's log lines and resource use (WorkerInsight), and
 * for a worker that ended, its last output as the controller kept it (`endpoint/worker/ended` lists those);
 * `endpoint/worker/drain`: its owner drains or undrains it (WorkerService).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { validationError } from '../../contract/errors.js';
import { ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readInteger, readQueryId } from '../../contract/query.js';
import type { WireEndedWorker, WireWorkerMetrics } from '../../contract/wire.js';
import { parseDrainBody } from '../../contract/worker-drain.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { LogOptions, WorkerStats } from '../../runtime/types.js';
import type { KeptOutput } from '../../store/workers/worker-outputs.js';
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

  const keptOutput = (endpointId: string, workerId: string) =>
    o.workerOutputs?.get(endpointId, workerId) ?? Promise.resolve(undefined);

  /**
   * Plain text, one line per log line; `follow=1` keeps streaming until the client goes away. A worker that ended
   * (no longer listed, or failed or stopped with its container gone) answers with its kept last output.
   */
  api.get('/endpoint/worker/log', async (request, reply) => {
    const query = request.query as Query;
    const endpoint = await o.endpoints.get(request.principal, readQueryId(query, ENDPOINT_ID_KEYS));
    const workerId = readQueryId(query, ['worker', 'worker_id']);
    const follow = query.follow === '1' || query.follow === 'true';
    const tail = query.tail === undefined ? undefined : readInteger(query, 'tail', 100, 0);
    const worker = (await o.workers.listByEndpoint(endpoint.id)).find((w) => w.id === workerId);
    const kept = await keptOutput(endpoint.id, workerId);
    if (kept && (!worker || worker.status.state === 'failed' || worker.status.state === 'stopped')) {
      writeKept(reply.raw, kept, tail);
      return reply;
    }
    if (!worker) {
      throw new ApiError('WORKER_NOT_FOUND', `endpoint ${endpoint.id} has no worker "${workerId}"`, {
        workerId,
      });
    }
    const abort = new AbortController();
    request.raw.on('close', () => abort.abort());
    const lines = insight()
      .logs(worker.id, {
        follow,
        ...(tail === undefined ? {} : { tail }),
        signal: abort.signal,
      })
      [Symbol.asyncIterator]();
    // The first line is read before answering: a container removed meanwhile answers with what was kept of it.
    let first: IteratorResult<string> | Error;
    try {
      first = await lines.next();
    } catch (error) {
      first = error instanceof Error ? error : new Error(String(error));
      const keptSince =
        (error as { code?: unknown }).code === 'NOT_FOUND' && (await keptOutput(endpoint.id, workerId));
      if (keptSince) {
        writeKept(reply.raw, keptSince, tail);
        return reply;
      }
    }
    reply.raw.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache' });
    try {
      if (first instanceof Error) throw first;
      for (let next = first; !next.done; next = await lines.next()) {
        if (!reply.raw.write(`${next.value}\n`))
          await new Promise((resolve) => reply.raw.once('drain', resolve));
      }
    } catch (error) {
      if (!abort.signal.aborted) reply.raw.write(`[corral] log stream ended: ${(error as Error).message}\n`);
    }
    reply.raw.end();
    return reply;
  });

  /** The endpoint's ended workers whose last output is kept, the most recently ended first. */
  api.get('/endpoint/worker/ended', async (request): Promise<{ workers: WireEndedWorker[] }> => {
    const endpoint = await o.endpoints.get(
      request.principal,
      readQueryId(request.query as Query, ENDPOINT_ID_KEYS),
    );
    const ended = (await o.workerOutputs?.listByEndpoint(endpoint.id)) ?? [];
    return {
      workers: ended.map((w) => ({
        id: w.workerId,
        endedAt: new Date(w.endedAt).toISOString(),
        failed: w.failed,
        reason: w.reason,
        truncated: w.truncated,
        log: o.links.workerLog(endpoint.id, w.workerId),
      })),
    };
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

/**
 * A worker's kept output: a first line saying it ended (and that older lines are gone, where they are), then its
 * last lines (the last `tail` of them). A followed log ends here: the worker is gone.
 */
function writeKept(raw: ServerResponse, kept: KeptOutput, tail: number | undefined): void {
  const endedAt = new Date(kept.endedAt).toISOString();
  raw.writeHead(200, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-cache',
    'x-corral-worker-ended': endedAt,
  });
  const what = kept.truncated ? 'its last output (older lines were not kept)' : 'its output';
  const reason = kept.reason === '' ? '' : ` (${kept.reason})`;
  const lines = tail === undefined ? kept.lines : kept.lines.slice(Math.max(0, kept.lines.length - tail));
  raw.end(
    [`[corral] worker ${kept.workerId} ended at ${endedAt}${reason}; ${what}:`, ...lines]
      .map((l) => `${l}\n`)
      .join(''),
  );
}
