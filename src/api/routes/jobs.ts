/**
 * An endpoint's jobs for its owner (a Corral extension, the dashboard's Jobs section): `GET endpoint/jobs` (counts by
 * status and the recent jobs, without inputs or outputs), `GET endpoint/job` (one job with its input, output and
 * unread stream chunks, each cut at a bound with its size), `POST endpoint/job/cancel` and `endpoint/job/retry`
 * (through the jobs core, as the gateway's `/v2` routes). Another owner's endpoint answers 404, as everywhere.
 */
import type { FastifyInstance } from 'fastify';
import {
  JOB_ID_KEYS,
  JOB_LIST_LIMIT,
  parseJobRef,
  readJobStatusFilter,
  toWireJobDetail,
  toWireJobListing,
  type WireEndpointJobs,
  type WireJobDetail,
  type WireJobListing,
} from '../../contract/job-views.js';
import { ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readInteger, readQueryId } from '../../contract/query.js';
import { isTerminal, RETRYABLE_STATUSES } from '../../domain/job.js';
import { JOB_DETAIL_BOUNDS } from '../../domain/job-detail.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { Clock } from '../../ports/clock.js';
import type { JobActions } from '../../ports/job-actions.js';
import type { JobReads } from '../../store/jobs/job-roles.js';
import type { AppOptions } from '../app.js';

/** What the jobs routes read and do: the store's reads, and the jobs core's actions (absent: no cancel, no retry). */
export interface OwnerJobs {
  reads: JobReads;
  actions?: JobActions;
  clock: Clock;
}

type Query = Record<string, string | undefined>;

const notFound = (jobId: string) =>
  new ApiError('JOB_NOT_FOUND', `the endpoint has no job ${JSON.stringify(jobId)}`, { job: jobId });

export function registerJobRoutes(api: FastifyInstance, o: AppOptions, jobs: OwnerJobs): void {
  api.get('/endpoint/jobs', async (request): Promise<WireEndpointJobs> => {
    const query = request.query as Query;
    const endpoint = await o.endpoints.get(request.principal, readQueryId(query, ENDPOINT_ID_KEYS));
    const status = readJobStatusFilter(query.status);
    const limit = Math.min(readInteger(query, 'limit', JOB_LIST_LIMIT.default, 1), JOB_LIST_LIMIT.max);
    const [counts, listed] = await Promise.all([
      jobs.reads.counts(endpoint.id),
      jobs.reads.list(endpoint.id, { limit, ...(status === undefined ? {} : { status }) }),
    ]);
    const now = jobs.clock();
    return { id: endpoint.id, counts, jobs: listed.map((job) => toWireJobListing(job, now)) };
  });

  api.get('/endpoint/job', async (request): Promise<{ job: WireJobDetail }> => {
    const query = request.query as Query;
    const endpoint = await o.endpoints.get(request.principal, readQueryId(query, ENDPOINT_ID_KEYS));
    const jobId = readQueryId(query, JOB_ID_KEYS);
    const job = await jobs.reads.detail(endpoint.id, jobId, JOB_DETAIL_BOUNDS);
    if (!job) throw notFound(jobId);
    return { job: toWireJobDetail(job, jobs.clock()) };
  });

  const { actions } = jobs;
  if (!actions) return;

  api.post('/endpoint/job/cancel', async (request): Promise<{ job: WireJobListing }> => {
    const ref = parseJobRef(request.body);
    const endpoint = await o.endpoints.get(request.principal, ref.endpointId);
    const job = await actions.cancel(endpoint, ref.jobId);
    if (!job) throw notFound(ref.jobId);
    if (job.status !== 'CANCELLED' && isTerminal(job.status))
      throw new ApiError('JOB_FINISHED', `job ${ref.jobId} is ${job.status}: it can no longer be cancelled`, {
        status: job.status,
      });
    request.log.info({ endpointId: endpoint.id, jobId: job.id }, 'job cancelled');
    return { job: toWireJobListing(job, jobs.clock()) };
  });

  api.post('/endpoint/job/retry', async (request): Promise<{ job: WireJobListing }> => {
    const ref = parseJobRef(request.body);
    const endpoint = await o.endpoints.get(request.principal, ref.endpointId);
    const result = await actions.retry(endpoint, ref.jobId);
    if (!result) throw notFound(ref.jobId);
    if (!result.retried)
      throw new ApiError(
        'JOB_NOT_RETRYABLE',
        `job ${ref.jobId} is ${result.job.status}: only ${RETRYABLE_STATUSES.join(' and ')} jobs can be retried`,
        { status: result.job.status },
      );
    request.log.info({ endpointId: endpoint.id, jobId: result.job.id }, 'job retried');
    return { job: toWireJobListing(result.job, jobs.clock()) };
  });
}
