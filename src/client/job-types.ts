/**
 * The jobs API's wire shapes as the client reads them: RunPod's queue API (`/v2/{endpoint}/run`, `runsync`,
 * `status`, `cancel`, `purge-queue`) and Corral's `jobs` listing, served on the gateway's address (docs/jobs.md).
 */

import { JOB_STATUSES, type JobStatus, TERMINAL_STATUSES } from '../contract/jobs.js';

export { JOB_STATUSES };
export type JobStatusName = JobStatus;

/** The statuses a job ends in. */
export const TERMINAL_JOB_STATUSES: readonly JobStatusName[] = TERMINAL_STATUSES;

/** A job's status body (RunPod's): `output` once COMPLETED, `error` once FAILED; times in ms. */
export interface WireJob {
  id: string;
  status: JobStatusName;
  /** Milliseconds from acceptance to a worker taking it. */
  delayTime?: number;
  /** Milliseconds the worker ran it. */
  executionTime?: number;
  workerId?: string;
  output?: unknown;
  error?: unknown;
  /** Corral's listing adds these; RunPod's status does not. */
  createdAt?: string;
  [key: string]: unknown;
}

/** `POST /run`'s and `/runsync`'s body. */
export interface RunJobInput {
  input: unknown;
  webhook?: string;
  policy?: { executionTimeout?: number; ttl?: number; lowPriority?: boolean };
}

/** `GET /v2/{endpoint}/jobs` (Corral extension): the recent jobs, newest first, and the counts by status. */
/** One read of a job's stream: the outputs of the chunks not read before, in order, and the job's status. */
export interface WireJobStream {
  status: WireJob['status'];
  stream: unknown[];
}

export interface WireJobList {
  jobs: WireJob[];
  counts: Partial<Record<JobStatusName, number>>;
}

/** `POST /purge-queue`'s answer: how many queued jobs were removed. */
export interface WirePurge {
  removed: number;
  status?: string;
}

export interface JobListParams {
  status?: JobStatusName;
  limit?: number;
}
