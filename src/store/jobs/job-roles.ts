/**
 * What each part of the jobs core takes of `JobRepository` (jobs.ts), named by its role: the parts take these, not
 * the whole repository, so that each says what it reads and writes, and a test of one can pass only that.
 */
import type { JobRepository } from './jobs.js';

/** The client's side of the queue (jobs/job-service.ts): submit, read, stream, cancel, retry, purge, count, list. */
export type ClientJobStore = Pick<
  JobRepository,
  'enqueue' | 'get' | 'takeChunks' | 'cancel' | 'retry' | 'purgeQueue' | 'counts' | 'list'
>;

/** The owner's reads of an endpoint's jobs (api/routes/jobs.ts): counts, the recent ones, one in detail. */
export type JobReads = Pick<JobRepository, 'counts' | 'list' | 'detail'>;

/** The worker's side (jobs/worker-jobs.ts): takes, results, progress, the stream, pings, stops and give-backs. */
export type WorkerJobStore = Pick<
  JobRepository,
  | 'take'
  | 'complete'
  | 'progress'
  | 'appendChunk'
  | 'chunkFit'
  | 'heartbeat'
  | 'stopsFor'
  | 'requeue'
  | 'requeueWorker'
>;

/** Delivery to an HTTP endpoint (jobs/http-delivery.ts): the worker's takes and results, and which queues wait. */
export type DeliveryJobStore = Pick<WorkerJobStore, 'take' | 'complete' | 'heartbeat' | 'stopsFor'> &
  Pick<JobRepository, 'queuedEndpoints'>;

/** What time does to jobs (jobs/job-sweeper.ts): expiry, retention, lost jobs, overdue stops, freed pages. */
export type JobSweepStore = Pick<JobRepository, 'expire' | 'requeueUnseen' | 'overdueStops' | 'reclaimSpace'>;

/** Every endpoint's queue and jobs in progress, for the autoscaler and the metrics (jobs/job-signals.ts). */
export type JobSignalStore = Pick<JobRepository, 'queueSignals'>;

/** When each queue worker last polled or pinged (jobs/worker-contacts.ts; the `job_workers` table). */
export type WorkerContactStore = Pick<JobRepository, 'workerSeen' | 'workerSeenAt'>;

/** What the owner's jobs take, for the quota report (service/quota-service.ts). */
export type JobUseStore = Pick<JobRepository, 'ownerUse'>;
