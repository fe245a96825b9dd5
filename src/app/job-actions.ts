/**
 * The management API's `JobActions` (ports/job-actions.ts) over the jobs core's `JobService`: the same cancel and
 * retry as the gateway's `/v2` routes (the stop channel, the queue's wake-up, the events), with the service's
 * "no such job" and "not retryable" said as results, which the API answers with its own error codes.
 */
import { JobError } from '../errors/jobs-catalogue.js';
import type { JobService } from '../jobs/job-service.js';
import type { JobActions } from '../ports/job-actions.js';

export function jobActionsOf(service: JobService): JobActions {
  return {
    async cancel(endpoint, jobId) {
      try {
        return await service.cancel(endpoint, jobId);
      } catch (error) {
        if (error instanceof JobError && error.code === 'JOB_NOT_FOUND') return undefined;
        throw error;
      }
    },
    async retry(endpoint, jobId) {
      try {
        return { retried: true, job: await service.retry(endpoint, jobId) };
      } catch (error) {
        if (!(error instanceof JobError)) throw error;
        if (error.code === 'JOB_NOT_FOUND') return undefined;
        if (error.code !== 'JOB_NOT_RETRYABLE') throw error;
        const job = await service.status(endpoint, jobId).catch(() => undefined);
        return job && { retried: false, job };
      }
    },
  };
}
