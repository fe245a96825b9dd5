/**
 * A stand-in for the gateway's jobs API, for the CLI's and the client's tests: a real HTTP server on 127.0.0.1, port
 * 0, that answers the documented wire format (docs/jobs.md: RunPod's `/v2/{endpoint}/run`, `runsync`, `status`,
 * `cancel`, `purge-queue`, and Corral's `jobs` listing) from jobs it keeps in memory. It stands for the format only,
 * not for the real gateway: a job moves on as the test says (`progress`), one step per status read.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInJob {
  id: string;
  status: string;
  input: unknown;
  output?: unknown;
  error?: unknown;
  delayTime?: number;
  executionTime?: number;
  workerId?: string;
  /** The statuses the job takes on its next status reads, one per read. */
  progress: { status: string; output?: unknown; error?: unknown }[];
}

export interface SeenRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  body: unknown;
}

export interface JobsGatewayStandIn {
  /** http://127.0.0.1:{port} */
  base: string;
  requests: SeenRequest[];
  jobs: Map<string, StandInJob>;
  /** The key it accepts; any other answers 401. */
  key: string;
  /** What the next `run` job will do on its status reads. */
  nextProgress: StandInJob['progress'];
  close(): Promise<void>;
}

const ENDPOINT = 'sdxl';

async function readBody(request: IncomingMessage): Promise<unknown> {
  let text = '';
  for await (const chunk of request) text += chunk;
  return text === '' ? undefined : JSON.parse(text);
}

function statusBody(job: StandInJob): Record<string, unknown> {
  const { progress: _progress, input: _input, ...body } = job;
  return body;
}

export async function startJobsGatewayStandIn(): Promise<JobsGatewayStandIn> {
  const state: Omit<JobsGatewayStandIn, 'base' | 'close'> = {
    requests: [],
    jobs: new Map(),
    key: 'sk_test_key',
    nextProgress: [],
  };
  let counter = 0;
  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const body = await readBody(request);
    state.requests.push({
      method: request.method ?? '',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: request.headers.authorization,
      body,
    });
    const answer = (status: number, value: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(value));
    };
    if (request.headers.authorization !== `Bearer ${state.key}`)
      return answer(401, { error: 'unauthenticated' });
    const [, v2, endpoint, route, jobId] = url.pathname.split('/');
    if (v2 !== 'v2' || endpoint !== ENDPOINT) return answer(404, { error: `no endpoint ${endpoint}` });
    const job = jobId === undefined ? undefined : state.jobs.get(jobId);
    if (jobId !== undefined && job === undefined) return answer(404, { error: `no job ${jobId}` });
    switch (`${request.method} ${route}`) {
      case 'POST run':
      case 'POST runsync': {
        if (typeof body !== 'object' || body === null || !('input' in body)) {
          return answer(400, { error: 'the body needs "input"' });
        }
        counter += 1;
        const created: StandInJob = {
          id: `job-${counter}`,
          status: 'IN_QUEUE',
          input: (body as { input: unknown }).input,
          progress: state.nextProgress.splice(0),
        };
        state.jobs.set(created.id, created);
        return answer(200, { id: created.id, status: created.status });
      }
      case 'GET status':
      case 'POST status': {
        const found = job as StandInJob;
        const step = found.progress.shift();
        if (step) {
          Object.assign(found, step);
          if (step.status !== 'IN_QUEUE') Object.assign(found, { delayTime: 120, workerId: 'w-1' });
          if (step.status === 'COMPLETED' || step.status === 'FAILED') found.executionTime = 1530;
        }
        return answer(200, statusBody(found));
      }
      case 'GET stream': {
        // A job of the stand-in yields no chunks: its stream is empty at every read.
        return answer(200, { status: (job as StandInJob).status, stream: [] });
      }
      case 'POST cancel': {
        const found = job as StandInJob;
        found.status = 'CANCELLED';
        found.progress = [];
        return answer(200, { id: found.id, status: found.status });
      }
      case 'POST purge-queue': {
        let removed = 0;
        for (const queued of state.jobs.values()) {
          if (queued.status === 'IN_QUEUE') {
            state.jobs.delete(queued.id);
            removed += 1;
          }
        }
        return answer(200, { removed, status: 'completed' });
      }
      case 'GET jobs': {
        const wanted = url.searchParams.get('status');
        const limit = Number(url.searchParams.get('limit') ?? 100);
        const all = [...state.jobs.values()].reverse();
        const counts: Record<string, number> = {};
        for (const j of all) counts[j.status] = (counts[j.status] ?? 0) + 1;
        const jobs = all.filter((j) => wanted === null || j.status === wanted).slice(0, limit);
        return answer(200, {
          jobs: jobs.map((j) => ({ ...statusBody(j), createdAt: '2026-11-26T17:00:00.000Z' })),
          counts,
        });
      }
      default:
        return answer(404, { error: `no route ${request.method} ${url.pathname}` });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
