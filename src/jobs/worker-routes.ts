/**
 * The worker protocol's routes as one request handler (mounted by app/ on the worker-facing listener): take and
 * batch take, result, stream, ping and the stop channel, at the URLs contract/runpod-worker.ts builds. Every request
 * carries the worker's own token (`RUNPOD_AI_API_KEY`, sent raw by the SDK) for the endpoint and worker its path
 * names, from a worker that has not ended (removed or failed); nothing else is answered.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseStreamChunk, parseWorkerResult } from '../contract/jobs.js';
import {
  parseWorkerPath,
  readPingJobIds,
  readTakeQuery,
  type WorkerRoute,
} from '../contract/runpod-worker.js';
import type { Endpoint } from '../domain/endpoint.js';
import { JOB_LIMITS, type Job } from '../domain/job.js';
import { JobError } from '../errors/jobs-catalogue.js';
import type { WorkerStanding } from '../ports/worker-standing.js';
import { abortOnClose, type JobsLogger, readBody, writeEmpty, writeError, writeJson } from './http-io.js';
import type { WorkerCaller, WorkerJobs } from './worker-jobs.js';
import type { WorkerTokens } from './worker-tokens.js';

/**
 * From this declared size a stream chunk's fit is asked before its body is read (worker-jobs.ts checkChunkFits):
 * reading, decoding and parsing a large chunk only to drop it costs milliseconds of the event loop each; below it
 * the extra query would cost more than the read it spares.
 */
const CHECK_CHUNK_FIT_FROM_BYTES = 64 * 1024;

export interface WorkerRoutesOptions {
  workers: WorkerJobs;
  tokens: WorkerTokens;
  /** The live endpoint with this id. */
  findEndpoint: (endpointId: string) => Promise<Endpoint | undefined>;
  /** Where the worker stands (jobs/worker-directory.ts): an ended one's token no longer holds. Absent: serving. */
  standing?: (endpointId: string, workerId: string) => Promise<WorkerStanding>;
  logger: JobsLogger;
  /** How long a take is held open before 204 (under the SDK's 90 s timeout). */
  takeHoldMs: number;
  /** How long a stop poll is held open before 204. */
  stopHoldMs: number;
}

/**
 * The worker protocol's request handler: true when the request is a worker route (answered here), false for any
 * other path (the worker-facing listener answers it).
 */
export function workerRoutes(
  options: WorkerRoutesOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const serve = async (
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    route: WorkerRoute,
  ): Promise<void> => {
    const auth = req.headers.authorization;
    if (!options.tokens.verify(auth, route.endpointId, route.workerId))
      throw new JobError('WORKER_UNAUTHENTICATED');
    if ((await options.standing?.(route.endpointId, route.workerId)) === 'ended')
      throw new JobError(
        'WORKER_UNAUTHENTICATED',
        `worker ${route.workerId} has ended (removed or failed): its token no longer holds`,
      );
    const endpoint = await options.findEndpoint(route.endpointId);
    if (!endpoint) throw new JobError('ENDPOINT_NOT_FOUND', `no endpoint ${route.endpointId}`);
    const caller: WorkerCaller = { endpoint, workerId: route.workerId };
    const workers = options.workers;
    switch (route.kind) {
      case 'take': {
        const { batch, holding } = readTakeQuery(url.searchParams, route.batch);
        const jobs = await workers.take(caller, {
          batch,
          holding,
          holdMs: options.takeHoldMs,
          signal: abortOnClose(res),
        });
        if (jobs.length === 0) writeEmpty(res, 204);
        else writeJson(res, 200, route.batch ? `[${jobs.map(jobBody).join(',')}]` : jobBody(jobs[0] as Job));
        return;
      }
      case 'done': {
        const body = await readBody(req, JOB_LIMITS.resultBytes, 'a result').catch(async (error: unknown) => {
          if (error instanceof JobError && error.code === 'BODY_TOO_LARGE')
            await workers.resultTooLarge(caller, route.jobId, error.message);
          throw error;
        });
        const parsed = parseWorkerResult(body);
        if (!parsed.ok) throw new JobError('INVALID_JOB_REQUEST', parsed.problem);
        await workers.result(caller, route.jobId, parsed.value);
        writeJson(res, 200, '{}');
        return;
      }
      case 'stream': {
        const declared = Number(req.headers['content-length']);
        if (declared >= CHECK_CHUNK_FIT_FROM_BYTES)
          await workers.checkChunkFits(caller, route.jobId, declared);
        const chunk = parseStreamChunk(await readBody(req, JOB_LIMITS.streamChunkBytes, 'a stream chunk'));
        if (!chunk.ok) throw new JobError('INVALID_JOB_REQUEST', chunk.problem);
        await workers.streamChunk(caller, route.jobId, chunk.value);
        writeJson(res, 200, '{}');
        return;
      }
      case 'ping': {
        await workers.ping(caller, readPingJobIds(url.searchParams));
        writeJson(res, 200, '{}');
        return;
      }
      case 'stop': {
        const ids = await workers.stops(caller, options.stopHoldMs, abortOnClose(res));
        if (ids.length === 0) writeEmpty(res, 204);
        else writeJson(res, 200, JSON.stringify({ jobsToStop: ids }));
        return;
      }
    }
  };
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://workers');
    const route = parseWorkerPath(url.pathname);
    if (!route) return false;
    serve(req, res, url, route).catch((error: unknown) => writeError(res, error, options.logger));
    return true;
  };
}

/** A job as a take answers it: `{"id", "input"}`, the input as stored. */
function jobBody(job: Job): string {
  return `{"id":${JSON.stringify(job.id)},"input":${job.input}}`;
}
