/**
 * The RunPod worker protocol's addresses (runpod-python v1.12.0): the URLs Corral gives a queue worker, built by
 * one pure function, and the parse of the paths the SDK derives from them. Traps matched here: every URL carries a
 * `?` query (the SDK appends `&job_in_progress=`, `&batch_size=`, `&isStream=`); the take URL holds the literal
 * `/job-take/` (the SDK makes `/job-take-batch/` and `/job-stop/` from it by string replacement); `$ID` is the job
 * id in the output and stream URLs (the SDK replaces `$ID` in the take URL with the worker id: none is left there).
 * With the queries a take and a ping carry (`batch_size`, `job_in_progress`, `job_id`). In contract/ since issue 31:
 * it is the protocol's wire; what a route does is jobs/worker-routes.ts's.
 */
import type { EnvVar } from '../domain/endpoint.js';

export interface WorkerUrls {
  getJob: string;
  postOutput: string;
  postStream: string;
  ping: string;
}

/** `base`: the worker-facing listener's URL as workers reach it, without a trailing slash. */
export function workerProtocolUrls(base: string, endpointId: string, workerId: string): WorkerUrls {
  const root = `${base.replace(/\/+$/, '')}/v2/${encodeURIComponent(endpointId)}`;
  const worker = encodeURIComponent(workerId);
  const query = `?worker=${worker}`;
  return {
    getJob: `${root}/job-take/${worker}${query}`,
    postOutput: `${root}/job-done/${worker}/$ID${query}`,
    postStream: `${root}/job-stream/${worker}/$ID${query}`,
    ping: `${root}/ping/${worker}${query}`,
  };
}

/**
 * The variables a queue worker gets (the endpoint's own envs override them: the caller puts these first):
 * the protocol's URLs, its token, its ids, and `RUNPOD_SKIP_AUTO_SYSTEM_CHECKS` (the SDK's fitness check dials
 * 8.8.8.8 and kills a worker on a private network).
 */
export function workerProtocolEnv(options: {
  base: string;
  endpointId: string;
  workerId: string;
  token: string;
}): EnvVar[] {
  const urls = workerProtocolUrls(options.base, options.endpointId, options.workerId);
  return [
    { key: 'RUNPOD_WEBHOOK_GET_JOB', value: urls.getJob },
    { key: 'RUNPOD_WEBHOOK_POST_OUTPUT', value: urls.postOutput },
    { key: 'RUNPOD_WEBHOOK_POST_STREAM', value: urls.postStream },
    { key: 'RUNPOD_WEBHOOK_PING', value: urls.ping },
    { key: 'RUNPOD_AI_API_KEY', value: options.token },
    { key: 'RUNPOD_POD_ID', value: options.workerId },
    { key: 'RUNPOD_ENDPOINT_ID', value: options.endpointId },
    { key: 'RUNPOD_SKIP_AUTO_SYSTEM_CHECKS', value: 'true' },
  ];
}

/** A worker route, from its path. */
export type WorkerRoute =
  | { kind: 'take'; endpointId: string; workerId: string; batch: boolean }
  | { kind: 'stop'; endpointId: string; workerId: string }
  | { kind: 'ping'; endpointId: string; workerId: string }
  | { kind: 'done' | 'stream'; endpointId: string; workerId: string; jobId: string };

const WORKER_PATH =
  /^\/v2\/([^/]+)\/(job-take|job-take-batch|job-stop|ping|job-done|job-stream)\/([^/]+)(?:\/([^/]+))?\/?$/;

/** The route a worker's request path names; undefined: none. */
export function parseWorkerPath(pathname: string): WorkerRoute | undefined {
  const match = WORKER_PATH.exec(pathname);
  if (!match) return undefined;
  const [, rawEndpoint = '', verb, rawWorker = '', rawJob] = match;
  let endpointId: string;
  let workerId: string;
  let jobId: string | undefined;
  try {
    endpointId = decodeURIComponent(rawEndpoint);
    workerId = decodeURIComponent(rawWorker);
    jobId = rawJob === undefined ? undefined : decodeURIComponent(rawJob);
  } catch {
    return undefined;
  }
  switch (verb) {
    case 'job-take':
    case 'job-take-batch':
      return jobId === undefined
        ? { kind: 'take', endpointId, workerId, batch: verb === 'job-take-batch' }
        : undefined;
    case 'job-stop':
      return jobId === undefined ? { kind: 'stop', endpointId, workerId } : undefined;
    case 'ping':
      return jobId === undefined ? { kind: 'ping', endpointId, workerId } : undefined;
    default:
      return jobId === undefined
        ? undefined
        : { kind: verb === 'job-done' ? 'done' : 'stream', endpointId, workerId, jobId };
  }
}

/**
 * A take's query: `batch_size` for a batch take (a whole number of at least 1, else 1) and `job_in_progress` (`1`
 * or `0`: whether the SDK still holds a job; undefined when it does not say).
 */
export function readTakeQuery(
  query: URLSearchParams,
  batch: boolean,
): { batch: number; holding: boolean | undefined } {
  const size = batch ? Number(query.get('batch_size') ?? '1') : 1;
  const progress = query.get('job_in_progress');
  return {
    batch: Number.isInteger(size) && size > 0 ? size : 1,
    holding: progress === '0' ? false : progress === '1' ? true : undefined,
  };
}

/** The jobs a ping lists: `job_id` repeated, comma-separated or both, trimmed, none empty. */
export function readPingJobIds(query: URLSearchParams): string[] {
  return query
    .getAll('job_id')
    .flatMap((value) => value.split(','))
    .map((id) => id.trim())
    .filter((id) => id !== '');
}
