/**
 * `JobActions`: what the management API asks of the jobs core for an owner's job (the dashboard's cancel and
 * retry). They go through the same job service as the gateway's `/v2` routes, so a cancel reaches the worker's stop
 * channel and a retry wakes the queue; built in app/job-actions.ts.
 */
import type { Endpoint } from '../domain/endpoint.js';
import type { Job } from '../domain/job.js';

export interface JobActions {
  /** Cancels the job if it is still queued or running; the job as it is after. undefined: no such job. */
  cancel(endpoint: Endpoint, jobId: string): Promise<Job | undefined>;
  /** Queues a FAILED or TIMED_OUT job again; `retried` false: its status allows no retry. undefined: no such job. */
  retry(endpoint: Endpoint, jobId: string): Promise<{ retried: boolean; job: Job } | undefined>;
}
