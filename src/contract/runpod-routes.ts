/**
 * RunPod's client routes on the wire (issue 22; moved here by issue 31): the path `/v2/{endpoint}/{route}[/{job}]`
 * with each route's methods and whether it names a job, RunPod's OpenAI route `/v2/{endpoint}/openai/...`, and the
 * query of the `jobs` listing. What they mean is jobs/client-routes.ts's; this file only reads them.
 */
import { isJobStatus, type JobStatus } from '../domain/job.js';
import type { Parsed } from './jobs.js';
import { safeDecode } from './paths.js';

/** Each route: the methods it takes and whether it names a job (the OpenAPI document describes each: its test checks). */
export const CLIENT_ROUTES = {
  run: { methods: ['POST'], job: false },
  runsync: { methods: ['POST'], job: false },
  status: { methods: ['GET', 'POST'], job: true },
  'status-sync': { methods: ['GET', 'POST'], job: true },
  stream: { methods: ['GET', 'POST'], job: true },
  cancel: { methods: ['POST'], job: true },
  retry: { methods: ['POST'], job: true },
  'purge-queue': { methods: ['POST'], job: false },
  health: { methods: ['GET'], job: false },
  jobs: { methods: ['GET'], job: false },
} as const satisfies Readonly<Record<string, { methods: readonly string[]; job: boolean }>>;

export type ClientVerb = keyof typeof CLIENT_ROUTES;

/** A call of a client route: the endpoint as named (id or appName), the route, and its job ('' when it names none). */
export interface ClientCall {
  kind: 'route';
  ref: string;
  verb: ClientVerb;
  jobId: string;
}

/** A call of RunPod's OpenAI route: the endpoint as named, and the OpenAI path after `/v2/{endpoint}/openai`. */
export interface OpenAICall {
  kind: 'openai';
  ref: string;
  route: string;
}

const isVerb = (verb: string): verb is ClientVerb => Object.hasOwn(CLIENT_ROUTES, verb);

/** Which call a method and path under `/v2/` make, or why they make none. */
export function parseClientPath(method: string, pathname: string): Parsed<ClientCall | OpenAICall> {
  const [, , ref, verb = '', jobId, extra] = pathname.split('/').map((part) => safeDecode(part));
  // After /v2/{ref}/openai: an endpoint may itself be called `openai`.
  if (verb === 'openai' && ref !== undefined && ref !== '')
    return { ok: true, value: { kind: 'openai', ref, route: `/${pathname.split('/').slice(4).join('/')}` } };
  if (ref === undefined || ref === '' || extra !== undefined)
    return { ok: false, problem: 'the path must be /v2/{endpoint}/{route}[/{job id}]' };
  const namesJob = jobId !== undefined && jobId !== '';
  const route = isVerb(verb) ? CLIENT_ROUTES[verb] : undefined;
  if (
    !isVerb(verb) ||
    !route ||
    route.job !== namesJob ||
    !(route.methods as readonly string[]).includes(method)
  )
    return {
      ok: false,
      problem: `no route ${method} /v2/{endpoint}/${verb}${jobId === undefined ? '' : '/{job}'}: see docs/jobs.md`,
    };
  return { ok: true, value: { kind: 'route', ref, verb, jobId: jobId ?? '' } };
}

/** The `jobs` listing's page: at most this many jobs, by default this many. */
export const JOB_LIST_LIMIT = { default: 50, max: 1_000 };

/** The `jobs` listing's query: `status` (one job status) and `limit` (1 to JOB_LIST_LIMIT.max). */
export function parseJobListQuery(query: URLSearchParams): Parsed<{ limit: number; status?: JobStatus }> {
  const status = query.get('status') ?? '';
  if (status !== '' && !isJobStatus(status))
    return { ok: false, problem: `status must be one of the job statuses, got ${status}` };
  const limitText = query.get('limit') ?? '';
  const limit = limitText === '' ? JOB_LIST_LIMIT.default : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > JOB_LIST_LIMIT.max)
    return { ok: false, problem: `limit must be an integer from 1 to ${JOB_LIST_LIMIT.max}` };
  return { ok: true, value: { limit, ...(status === '' ? {} : { status }) } };
}
