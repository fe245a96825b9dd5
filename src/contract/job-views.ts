/**
 * An endpoint's jobs on the management API (the dashboard's Jobs section, a Corral extension): the listing with the
 * counts by status, one job's detail (input, output and unread stream chunks, each perhaps cut, with its size), the
 * cancel and retry bodies, and the listing's query. Inputs and outputs never travel in a listing.
 */

import { isJobStatus, JOB_STATUSES, type JobListing, type JobStatus, jobTimes } from '../domain/job.js';
import type { ClippedText, JobDetail } from '../domain/job-detail.js';
import { ApiError } from '../errors/api-catalogue.js';
import { readId } from './endpoint-input.js';
import { ENDPOINT_ID_BODY_KEYS } from './paths.js';

/** The query and body keys that name a job. */
export const JOB_ID_KEYS = ['job', 'jobId'] as const;

/** The listing's bounds: how many jobs when the query names none, and the most it may name. */
export const JOB_LIST_LIMIT = { default: 50, max: 500 } as const;

/** One job in a listing: its status and times, never its input or output. */
export interface WireJobListing {
  id: string;
  status: JobStatus;
  /** ISO 8601. */
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  /** Milliseconds from submission to a worker taking it (so far, while queued). */
  delayTime: number;
  /** Milliseconds the worker ran it (so far, while in progress). */
  executionTime: number;
  workerId: string | null;
  /** How many times a worker took it. */
  attempts: number;
  /** Why it FAILED, TIMED_OUT or was CANCELLED; null otherwise. */
  error: string | null;
}

/** `GET endpoint/jobs`. */
export interface WireEndpointJobs {
  id: string;
  counts: Record<JobStatus, number>;
  jobs: WireJobListing[];
}

/** A stored JSON text, perhaps cut to its first characters (`truncated`), with its whole size in bytes. */
export type WireClippedText = ClippedText;

/** `GET endpoint/job`'s `job`. */
export interface WireJobDetail extends WireJobListing {
  input: WireClippedText;
  output: WireClippedText | null;
  /** The chunks streamed that no client has read yet (a stream read consumes them), the first of `chunkCount`. */
  chunks: WireClippedText[];
  chunkCount: number;
  webhook: string | null;
  policy: { executionTimeout: number; ttl: number; lowPriority: boolean };
}

export function toWireJobListing(job: JobListing, now: number): WireJobListing {
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    id: job.id,
    status: job.status,
    createdAt: new Date(job.createdAt).toISOString(),
    startedAt: iso(job.startedAt),
    completedAt: iso(job.completedAt),
    ...jobTimes(job, now),
    workerId: job.workerId,
    attempts: job.attempts,
    error: job.error,
  };
}

export function toWireJobDetail(job: JobDetail, now: number): WireJobDetail {
  return {
    ...toWireJobListing(job, now),
    input: job.input,
    output: job.output,
    chunks: job.chunks,
    chunkCount: job.chunkCount,
    webhook: job.webhook,
    policy: {
      executionTimeout: job.policy.executionTimeoutMs,
      ttl: job.policy.ttlMs,
      lowPriority: job.policy.lowPriority,
    },
  };
}

/** `status` of the listing's query: undefined for every status; another value fails with INVALID_QUERY. */
export function readJobStatusFilter(raw: string | undefined): JobStatus | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (isJobStatus(raw)) return raw;
  throw new ApiError('INVALID_QUERY', `status must be one of ${JOB_STATUSES.join(', ')}, got "${raw}"`, {
    field: 'status',
  });
}

/** The cancel and retry body, `{"id": <endpoint id>, "job": <job id>}`. */
export function parseJobRef(body: unknown): { endpointId: string; jobId: string } {
  const endpointId = readId(body, [...ENDPOINT_ID_BODY_KEYS]);
  if (endpointId === undefined)
    throw new ApiError('INVALID_FIELD', 'the body needs {"id": "<endpoint id>", "job": "<job id>"}', {
      field: 'id',
    });
  const jobId = readId(body, [...JOB_ID_KEYS]);
  if (jobId === undefined)
    throw new ApiError('INVALID_FIELD', 'the body needs {"id": "<endpoint id>", "job": "<job id>"}', {
      field: 'job',
    });
  return { endpointId, jobId };
}
