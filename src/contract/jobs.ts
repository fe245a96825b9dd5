/**
 * The jobs API's wire (RunPod's shapes, issue 22): a `run` body (`input`, `webhook`, `policy`) parsed into the
 * domain's job, a job written as RunPod's status body, and a worker's result body read whatever its content type.
 * JSON stays text where it passes through (input, output): it is parsed once, to check it, and never rebuilt.
 */
import {
  DEFAULT_JOB_POLICY,
  JOB_LIMITS,
  type Job,
  type JobListing,
  type JobPolicy,
  jobTimes,
} from '../domain/job.js';
import { nestsDeeperThan } from './json-depth.js';

/** The job statuses, as clients name them (the client and the CLI read them here). */
export { JOB_STATUSES, type JobStatus, TERMINAL_STATUSES } from '../domain/job.js';

/** A `run`/`runsync` request, parsed. */
export interface RunRequest {
  /** The `input` as JSON text. */
  input: string;
  /** Its UTF-8 size, counted once where it was made (a count of megabytes costs milliseconds). */
  inputBytes: number;
  webhook: string | null;
  policy: JobPolicy;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

const fail = (problem: string): { ok: false; problem: string } => ({ ok: false, problem });

/** The refusal of a body nested past the limit: what, and the limit. */
export function tooDeep(what: string): { ok: false; problem: string } {
  return fail(
    `${what} nests arrays and objects more than ${JOB_LIMITS.jsonDepth} levels deep, the limit: send a flatter input`,
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A `run` body's JSON taken apart: its `input` as JSON text (with its UTF-8 size) and its other fields, or why it is
 * not a JSON object. What validates the fields is `runRequestOf`; this part is the one that costs in proportion to
 * the body (decoding aside), so it is self-contained (it names nothing outside its body and arguments) and a body of
 * megabytes runs it on the jobs' body thread from its source (jobs/run-body-parser.ts), off the event loop.
 */
export function splitRunBody(
  text: string,
  maxDepth: number,
  nests: (text: string, max: number) => boolean,
  utf8Bytes: (text: string) => number,
): RunBodySplit {
  if (nests(text, maxDepth)) return { kind: 'too-deep' };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { kind: 'not-json' };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { kind: 'not-object' };
  const { input, ...fields } = body as Record<string, unknown>;
  if (input === undefined || input === null) return { kind: 'split', input: null, inputBytes: 0, fields };
  const inputText = JSON.stringify(input);
  return { kind: 'split', input: inputText, inputBytes: utf8Bytes(inputText), fields };
}

export type RunBodySplit =
  | { kind: 'too-deep' | 'not-json' | 'not-object' }
  | { kind: 'split'; input: string | null; inputBytes: number; fields: Record<string, unknown> };

/** A `run` body taken apart (`splitRunBody`) as the request it makes, or what is wrong with it. */
export function runRequestOf(split: RunBodySplit): Parsed<RunRequest> {
  if (split.kind !== 'split') {
    if (split.kind === 'too-deep') return tooDeep('the body');
    if (split.kind === 'not-json') return fail('the body is not JSON: send {"input": {...}}');
    return fail('the body must be a JSON object: {"input": {...}}');
  }
  if (split.input === null) return fail('input is required: send {"input": {...}}');
  const { webhook } = split.fields;
  if (webhook !== undefined && webhook !== null && typeof webhook !== 'string')
    return fail('webhook must be a URL string');
  if (typeof webhook === 'string' && webhook !== '' && !/^https?:\/\/[^\s]+$/i.test(webhook))
    return fail('webhook must be an http(s) URL');
  const policy = parsePolicy(split.fields.policy);
  if (!policy.ok) return policy;
  return {
    ok: true,
    value: {
      input: split.input,
      inputBytes: split.inputBytes,
      webhook: typeof webhook === 'string' && webhook !== '' ? webhook : null,
      policy: policy.value,
    },
  };
}

/** Parses a `run` body: `{"input": ..., "webhook"?: "https://...", "policy"?: {...}}`. */
export function parseRunBody(text: string): Parsed<RunRequest> {
  return runRequestOf(splitRunBody(text, JOB_LIMITS.jsonDepth, nestsDeeperThan, utf8Length));
}

/** A text's UTF-8 size, in the browser too (the dashboard shares this module). */
function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

function parsePolicy(raw: unknown): Parsed<JobPolicy> {
  if (raw === undefined || raw === null) return { ok: true, value: DEFAULT_JOB_POLICY };
  if (!isRecord(raw)) return fail('policy must be an object');
  const ms = (key: string, min: number, max: number, fallback: number): Parsed<number> => {
    const value = raw[key];
    if (value === undefined || value === null) return { ok: true, value: fallback };
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
      return fail(`policy.${key} must be an integer number of milliseconds from ${min} to ${max}`);
    return { ok: true, value };
  };
  const execution = ms(
    'executionTimeout',
    JOB_LIMITS.minExecutionTimeoutMs,
    JOB_LIMITS.maxExecutionTimeoutMs,
    DEFAULT_JOB_POLICY.executionTimeoutMs,
  );
  if (!execution.ok) return execution;
  const ttl = ms('ttl', JOB_LIMITS.minTtlMs, JOB_LIMITS.maxTtlMs, DEFAULT_JOB_POLICY.ttlMs);
  if (!ttl.ok) return ttl;
  const low = raw.lowPriority;
  if (low !== undefined && low !== null && typeof low !== 'boolean')
    return fail('policy.lowPriority must be true or false');
  return {
    ok: true,
    value: { executionTimeoutMs: execution.value, ttlMs: ttl.value, lowPriority: low === true },
  };
}

/** A `wait` query value in ms, within `[0, max]`; undefined: none given. */
export function parseWait(raw: string | null, max: number): Parsed<number | undefined> {
  if (raw === null || raw === '') return { ok: true, value: undefined };
  if (!/^\d{1,9}$/.test(raw)) return fail(`wait must be a whole number of milliseconds (at most ${max})`);
  return { ok: true, value: Math.min(Number(raw), max) };
}

/**
 * RunPod's status body: `{id, status, delayTime, executionTime, workerId?, output?, error?}`, written as text so
 * that the stored output goes out as stored; a queued job adds Corral's `waitingFor` when it is known why it waits
 * (its owner's budget spent: BUDGET_EXCEEDED), asked of `waitingFor` for a queued job alone.
 */
export function jobStatusBody(job: Job, now: number, waitingFor?: (job: Job) => string | undefined): string {
  const { delayTime, executionTime } = jobTimes(job, now);
  let text = `{"id":${JSON.stringify(job.id)},"status":"${job.status}","delayTime":${delayTime},"executionTime":${executionTime}`;
  if (job.workerId !== null) text += `,"workerId":${JSON.stringify(job.workerId)}`;
  if (job.output !== null) text += `,"output":${job.output}`;
  if (job.error !== null) text += `,"error":${JSON.stringify(job.error)}`;
  const why = job.status === 'IN_QUEUE' ? waitingFor?.(job) : undefined;
  if (why !== undefined) text += `,"waitingFor":${JSON.stringify(why)}`;
  return `${text}}`;
}

/** A job as the list shows it: the status body's fields and when it was submitted (ISO 8601), without input or output. */
export function jobSummary(job: JobListing, now: number): Record<string, unknown> {
  const { delayTime, executionTime } = jobTimes(job, now);
  return {
    id: job.id,
    status: job.status,
    // ISO 8601, as every listing of the API writes a time.
    createdAt: new Date(job.createdAt).toISOString(),
    delayTime,
    executionTime,
    workerId: job.workerId,
    attempts: job.attempts,
    ...(job.error === null ? {} : { error: job.error }),
  };
}

/** What a worker posted to its result URL. */
export type WorkerResult =
  | { kind: 'progress'; output: string | null }
  | {
      kind: 'final';
      status: 'COMPLETED' | 'FAILED';
      output: string | null;
      error: string | null;
      /** The worker asked to be replaced (`stopPod`, the SDK's refresh_worker). */
      stopPod: boolean;
    };

/**
 * A worker's result body, parsed as JSON whatever its content type (the SDK labels it form-urlencoded): `{"output":
 * ...}`, `{"error": ...}`, `{"status": "IN_PROGRESS", ...}` (a progress update), with `stopPod` perhaps.
 */
export function parseWorkerResult(text: string): Parsed<WorkerResult> {
  if (nestsDeeperThan(text, JOB_LIMITS.jsonDepth)) return tooDeep('the result');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return fail('the result is not JSON');
  }
  if (!isRecord(body)) return fail('the result must be a JSON object');
  const output = body.output === undefined ? null : JSON.stringify(body.output);
  if (body.status === 'IN_PROGRESS') return { ok: true, value: { kind: 'progress', output } };
  const error = body.error;
  const failed = error !== undefined && error !== null && error !== '';
  return {
    ok: true,
    value: {
      kind: 'final',
      status: failed ? 'FAILED' : 'COMPLETED',
      output,
      error: failed ? (typeof error === 'string' ? error : JSON.stringify(error)) : null,
      stopPod: body.stopPod === true,
    },
  };
}

/** A chunk a worker streams: JSON, nested no deeper than the limit; the text as it came. */
export function parseStreamChunk(text: string): Parsed<string> {
  if (nestsDeeperThan(text, JOB_LIMITS.jsonDepth)) return tooDeep('a stream chunk');
  try {
    JSON.parse(text);
  } catch {
    return fail('a stream chunk must be JSON');
  }
  return { ok: true, value: text };
}

/** One streamed chunk as the stream route answers it: RunPod's `{"output": ...}` items. */
export function streamBody(job: Job, chunks: readonly string[]): string {
  const items = chunks.map((chunk) => {
    try {
      const parsed: unknown = JSON.parse(chunk);
      return isRecord(parsed) && Object.hasOwn(parsed, 'output') ? chunk : `{"output":${chunk}}`;
    } catch {
      return `{"output":${JSON.stringify(chunk)}}`;
    }
  });
  return `{"status":"${job.status}","stream":[${items.join(',')}]}`;
}
