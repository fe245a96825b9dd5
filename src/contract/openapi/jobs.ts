/**
 * The jobs API in the OpenAPI document (docs/jobs.md): RunPod's client routes, which the gateway serves, not the API
 * (each path names the gateway's address in its own `servers`), their bodies and answers, and the jobs' parts of
 * `endpoint/metrics` and its history. src/api/openapi.test.ts checks the paths against the gateway's route table
 * and the schemas against what the routes answer.
 */
import { JOB_LIMITS, JOB_STATUSES } from '../../domain/job.js';
import { JOBS_ERROR_CATALOGUE, type JobErrorCode } from '../../errors/jobs-catalogue.js';
import { arrayOf, int, object, ref, type Schema, str } from './schema.js';

interface JobOperation {
  verb: string;
  method: 'get' | 'post';
  /** The route names a job: `/v2/{endpoint}/{verb}/{job}`. */
  job: boolean;
  operationId: string;
  summary: string;
  description: string;
  /** Takes `?wait=` (ms). */
  wait?: string;
  /** Component schema name of the JSON body. */
  body?: string;
  parameters?: Schema[];
  response: string;
  errors: JobErrorCode[];
}

const MB = 1024 * 1024;
const COMMON_ERRORS: JobErrorCode[] = [
  'INVALID_JOB_REQUEST',
  'UNAUTHENTICATED',
  'ENDPOINT_NOT_FOUND',
  'AMBIGUOUS_ENDPOINT_NAME',
  'JOBS_UNAVAILABLE',
];
const JOB_ERRORS: JobErrorCode[] = [...COMMON_ERRORS, 'JOB_NOT_FOUND'];

/** Every operation of the client routes; a route that takes GET and POST is listed once per method. */
function jobOperations(): JobOperation[] {
  const both = (op: Omit<JobOperation, 'method' | 'operationId'> & { id: string }): JobOperation[] =>
    (['get', 'post'] as const).map((method) => {
      const { id, ...rest } = op;
      return { ...rest, method, operationId: `${id}${method === 'post' ? 'Post' : ''}` };
    });
  return [
    {
      verb: 'run',
      method: 'post',
      job: false,
      operationId: 'runJob',
      summary: 'Queue a job',
      description: `Stores the job IN_QUEUE and answers its id at once. The body is at most ${JOB_LIMITS.runBodyBytes / MB} MB; a finished job's status is kept 30 minutes by default.`,
      body: 'JobRunRequest',
      response: 'JobAccepted',
      errors: [...COMMON_ERRORS, 'BODY_TOO_LARGE'],
    },
    {
      verb: 'runsync',
      method: 'post',
      job: false,
      operationId: 'runJobSync',
      summary: 'Run a job and wait for its end',
      description: `Queues the job and answers its status once it is finished, or as it is after the wait (IN_QUEUE or IN_PROGRESS: then poll status). The body is at most ${JOB_LIMITS.runsyncBodyBytes / MB} MB; a finished job's status is kept 1 minute by default.`,
      wait: 'How long to wait for the end, ms (default 90000).',
      body: 'JobRunRequest',
      response: 'JobStatus',
      errors: [...COMMON_ERRORS, 'BODY_TOO_LARGE'],
    },
    ...both({
      verb: 'status',
      job: true,
      id: 'getJobStatus',
      summary: "A job's status",
      description:
        'Its status, delayTime and executionTime (ms), workerId, and its output or error once finished.',
      response: 'JobStatus',
      errors: JOB_ERRORS,
    }),
    ...both({
      verb: 'status-sync',
      job: true,
      id: 'awaitJobStatus',
      summary: "A job's status once it is finished",
      description: 'A long poll: answers when the job is finished, or as it is after the wait.',
      wait: 'How long to wait, ms (default 90000).',
      response: 'JobStatus',
      errors: JOB_ERRORS,
    }),
    ...both({
      verb: 'stream',
      job: true,
      id: 'streamJob',
      summary: 'What a job streamed since the last read',
      description: `A long poll: answers the chunks its worker streamed (each at most ${JOB_LIMITS.streamChunkBytes / MB} MB) once there are some or the job ended; a chunk read is consumed.`,
      wait: 'How long to wait for a chunk, ms (default 10000).',
      response: 'JobStream',
      errors: JOB_ERRORS,
    }),
    {
      verb: 'cancel',
      method: 'post',
      job: true,
      operationId: 'cancelJob',
      summary: 'Cancel a job',
      description:
        'A queued job is CANCELLED at once; a running one too, and its worker is told to stop it (replaced if it keeps it). A finished job is answered as it is.',
      response: 'JobStatus',
      errors: JOB_ERRORS,
    },
    {
      verb: 'retry',
      method: 'post',
      job: true,
      operationId: 'retryJob',
      summary: 'Queue a FAILED or TIMED_OUT job again',
      description: 'Its ttl counts afresh; any other status is 409 JOB_NOT_RETRYABLE.',
      response: 'JobAccepted',
      errors: [...JOB_ERRORS, 'JOB_NOT_RETRYABLE'],
    },
    {
      verb: 'purge-queue',
      method: 'post',
      job: false,
      operationId: 'purgeJobQueue',
      summary: "Remove the endpoint's queued jobs",
      description: 'Jobs IN_QUEUE are removed; jobs in progress go on.',
      response: 'JobPurge',
      errors: COMMON_ERRORS,
    },
    {
      verb: 'health',
      method: 'get',
      job: false,
      operationId: 'getJobHealth',
      summary: "The endpoint's jobs and workers",
      description: 'Jobs by status (failed: FAILED and TIMED_OUT) and the running workers, idle ones apart.',
      response: 'JobHealth',
      errors: COMMON_ERRORS,
    },
    {
      verb: 'jobs',
      method: 'get',
      job: false,
      operationId: 'listJobs',
      summary: "The endpoint's recent jobs (Corral extension)",
      description: 'Newest first, without inputs or outputs, and the jobs kept counted by status.',
      parameters: [
        {
          name: 'status',
          in: 'query',
          required: false,
          description: 'Only jobs of this status.',
          schema: { type: 'string', enum: [...JOB_STATUSES] },
        },
        {
          name: 'limit',
          in: 'query',
          required: false,
          description: 'At most this many jobs.',
          schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
        },
      ],
      response: 'JobList',
      errors: COMMON_ERRORS,
    },
  ];
}

/** The jobs API's path of a route, as the document names it. */
export const jobPath = (verb: string, job: boolean) => `/v2/{endpoint}/${verb}${job ? '/{job}' : ''}`;

const pathParameter = (name: string, description: string): Schema => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

/** Error responses for the given codes, one per status, each naming the codes it may carry. */
function jobErrorResponses(codes: JobErrorCode[]): Record<string, Schema> {
  const byStatus = new Map<number, JobErrorCode[]>();
  for (const code of new Set(codes)) {
    const { status } = JOBS_ERROR_CATALOGUE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, group]) => [
        String(status),
        {
          description: group.map((c) => `\`${c}\`: ${JOBS_ERROR_CATALOGUE[c].description}`).join('\n\n'),
          content: {
            'application/json': {
              schema: {
                allOf: [
                  ref('JobError'),
                  { type: 'object', properties: { code: { const: status }, reason: { enum: group } } },
                ],
              },
            },
          },
        },
      ]),
  );
}

/**
 * The client routes' paths, each with the gateway's address as its server (`gatewayUrl`): they are served there,
 * not on the API's address.
 */
export function jobPaths(gatewayUrl: string): Record<string, Record<string, Schema | Schema[]>> {
  const result: Record<string, Record<string, Schema | Schema[]>> = {};
  for (const op of jobOperations()) {
    const path = jobPath(op.verb, op.job);
    const parameters = [
      pathParameter(
        'endpoint',
        "The endpoint's id, its appName, or its name where no other endpoint the key may call has it.",
      ),
      ...(op.job ? [pathParameter('job', "The job's id, as run answered it.")] : []),
      ...(op.wait
        ? [
            {
              name: 'wait',
              in: 'query',
              required: false,
              description: `${op.wait} At most 300000.`,
              schema: { type: 'integer', minimum: 0, maximum: 300_000 },
            },
          ]
        : []),
      ...(op.parameters ?? []),
    ];
    result[path] = {
      ...result[path],
      servers: [
        {
          url: gatewayUrl,
          description:
            "The gateway's address (the jobs API is served there, on any Host that is not an endpoint's own), not the API's.",
        },
      ],
      [op.method]: {
        operationId: op.operationId,
        summary: op.summary,
        description: `${op.description} See docs/jobs.md.`,
        tags: ['Jobs'],
        security: [{ bearerAuth: [] }],
        parameters,
        ...(op.body
          ? { requestBody: { required: true, content: { 'application/json': { schema: ref(op.body) } } } }
          : {}),
        responses: {
          '200': { description: 'Done.', content: { 'application/json': { schema: ref(op.response) } } },
          ...jobErrorResponses(op.errors),
        },
      },
    };
  }
  return result;
}

/** Every `METHOD path` of the client routes the document describes (the openapi test compares the gateway's). */
export function jobOperationKeys(): string[] {
  return jobOperations().map((op) => `${op.method.toUpperCase()} ${jobPath(op.verb, op.job)}`);
}

const ms = (description: string): Schema => int(`${description}, ms.`);
const statusSchema: Schema = { type: 'string', enum: [...JOB_STATUSES] };
const recentTimes = (what: string): Schema =>
  object(
    { p50: { type: ['number', 'null'] }, p95: { type: ['number', 'null'] } },
    { description: `${what}, ms: p50 and p95 from the buckets added up; null without a finished job.` },
  );
const column = (description: string, nullable = false): Schema => ({
  type: 'array',
  description,
  items: { type: nullable ? ['number', 'null'] : 'number' },
});
const timesColumns = (what: string): Schema =>
  object(
    { p50: column('p50, ms; null without a finished job.', true), p95: column('p95, ms.', true) },
    { description: `Of the jobs that finished in each interval: their ${what}.` },
  );

/** The jobs' component schemas: the client routes' bodies and answers, and the jobs of endpoint/metrics. */
export function jobSchemas(): Record<string, Schema> {
  return {
    JobRunRequest: object(
      {
        input: {
          description: "The job's input, any JSON but null: the worker's handler gets it as job['input'].",
        },
        webhook: str('Where its terminal status is POSTed, signed (Standard Webhooks).', { format: 'uri' }),
        policy: object(
          {
            executionTimeout: int(
              `Most time on a worker, ms (at least ${JOB_LIMITS.minExecutionTimeoutMs}).`,
              {
                minimum: JOB_LIMITS.minExecutionTimeoutMs,
              },
            ),
            ttl: int(`Most time from submission, wherever it is, ms (at least ${JOB_LIMITS.minTtlMs}).`, {
              minimum: JOB_LIMITS.minTtlMs,
            }),
            lowPriority: {
              type: 'boolean',
              description: 'Adds no worker: runs on workers there for other reasons.',
            },
          },
          { required: [] },
        ),
      },
      { required: ['input'], description: "RunPod's run body." },
    ),
    JobAccepted: object({ id: str("The job's id."), status: statusSchema }, { description: 'A queued job.' }),
    JobStatus: object(
      {
        id: str(),
        status: statusSchema,
        delayTime: ms('Time in the queue before a worker took it (so far, while queued)'),
        executionTime: ms('Time on the worker (so far, while in progress)'),
        workerId: str('The worker that took it.'),
        output: { description: "The handler's output (a progress update's while IN_PROGRESS)." },
        error: str("Why it FAILED or TIMED_OUT: the handler's error, or Corral's cause."),
      },
      { optional: ['workerId', 'output', 'error'], description: "RunPod's status body." },
    ),
    JobStream: object(
      {
        status: statusSchema,
        stream: arrayOf(object({ output: { description: 'One chunk the worker streamed.' } })),
      },
      { description: 'The chunks since the last read, and the status after them.' },
    ),
    JobPurge: object(
      { removed: int('Queued jobs removed.'), status: str(undefined, { const: 'completed' }) },
      { description: 'What purge-queue removed.' },
    ),
    JobHealth: object(
      {
        jobs: object({
          completed: int(),
          failed: int('FAILED and TIMED_OUT jobs kept.'),
          inProgress: int(),
          inQueue: int(),
          retried: int(),
        }),
        workers: object({ idle: int('Running workers with no job in progress.'), running: int() }),
      },
      { description: "RunPod's health body: the jobs kept by status, and the running workers." },
    ),
    JobList: object(
      {
        counts: object(Object.fromEntries(JOB_STATUSES.map((s) => [s, int()])), {
          description: 'The jobs kept, by status.',
        }),
        jobs: arrayOf(
          object(
            {
              id: str(),
              status: statusSchema,
              createdAt: str('When it was submitted (or retried).', { format: 'date-time' }),
              delayTime: int(),
              executionTime: int(),
              workerId: { type: ['string', 'null'] },
              attempts: int('Times a worker took it.'),
              error: str(),
            },
            { optional: ['error'] },
          ),
          'Newest first.',
        ),
      },
      { description: "The endpoint's recent jobs." },
    ),
    JobError: object(
      {
        code: int('The HTTP status code.'),
        reason: str('Stable code; clients match on it.', { enum: Object.keys(JOBS_ERROR_CATALOGUE) }),
        message: str('Human-readable explanation.'),
        metadata: { type: 'object', additionalProperties: true },
        error: str("The message again, where RunPod's clients read it."),
      },
      { description: 'The body of every error of the jobs API.' },
    ),
    EndpointJobs: object(
      {
        inQueue: int('Jobs IN_QUEUE now, as the store counts them.'),
        inProgress: int('Jobs IN_PROGRESS now.'),
        recent: {
          type: ['object', 'null'],
          description:
            "The jobs that finished over the history's last 5 minutes (every replica's). Null where the answering server keeps no history.",
          properties: {
            seconds: int('What the figures cover.'),
            completed: int(),
            failed: int(),
            cancelled: int(),
            timedOut: int(),
            retried: int(
              "Sent back to the queue for another attempt: a client's retry, or a lost or ended worker's job.",
            ),
            delayMs: recentTimes('Their delayTime'),
            executionMs: recentTimes('Their executionTime (of those a worker took)'),
          },
          required: [
            'seconds',
            'completed',
            'failed',
            'cancelled',
            'timedOut',
            'retried',
            'delayMs',
            'executionMs',
          ],
        },
      },
      { description: "The endpoint's jobs (Corral extension; docs/jobs.md, Watching jobs)." },
    ),
    JobsHistory: object(
      {
        inQueue: column('Jobs IN_QUEUE at the sample.'),
        inProgress: column('Jobs IN_PROGRESS at the sample.'),
        completed: column('Jobs that finished COMPLETED in the interval.'),
        failed: column('FAILED in the interval.'),
        cancelled: column('CANCELLED in the interval.'),
        timedOut: column('TIMED_OUT in the interval.'),
        retried: column('Sent back to the queue in the interval.'),
        delayMs: timesColumns('delayTime'),
        executionMs: timesColumns('executionTime'),
      },
      {
        description:
          "The endpoint's jobs in each sample (Corral extension); zeros and nulls where it had none.",
      },
    ),
  };
}
