/**
 * The response schemas of the OpenAPI document. Responses are built by code (contract/endpoint-output.ts and the
 * routes) into the TypeScript shapes of contract/wire.ts, not parsed by a schema, so their JSON Schemas are
 * written here; src/api/openapi.test.ts checks them against what the app answers.
 */

import { QUOTA_NAMES } from '../../domain/quota.js';
import { ENDPOINT_EVENT_TYPES } from '../../domain/records.js';
import { WORKER_STATES } from '../../domain/worker.js';
import { API_ERROR_CATALOGUE } from '../../errors/api-catalogue.js';
import { USAGE_STATES } from '../../ports/usage.js';
import { JOB_STATUSES } from '../jobs.js';
import { WIRE_LIMIT_FIELDS } from '../limits.js';
import { arrayOf, bool, int, object, ref, type Schema, str } from './schema.js';

const ENDPOINT_STATES = ['deploying', 'serving', 'updating', 'stopped', 'failed', 'deleting'];
const WORKER_ERRORS = [
  'IMAGE_PULL_FAILED',
  'CRASH_LOOP',
  'HEALTH_TIMEOUT',
  'UNHEALTHY',
  'INSUFFICIENT_GPU',
  'RUNTIME_ERROR',
  'MODEL_DOWNLOAD_FAILED',
];

const stateSchema = (states: string[], errorText: string): Schema =>
  object({
    state: str(undefined, { enum: states }),
    error: str(errorText),
    message: str('Human-readable detail.'),
  });

function endpointSchema(port: Schema, description: string): Schema {
  return object(
    {
      id: str('Endpoint id; also the default appName.'),
      name: str(),
      appName: str('DNS label used in the URL; unique on the server.'),
      state: ref('EndpointState'),
      url: str('Where the endpoint is served: http://{appName}.{domain}:{gateway port} or the public base.'),
      workerConfig: ref('WorkerConfig'),
      policy: ref('Policy'),
      image: ref('Image'),
      rootfsSize: int('System disk size, GB.'),
      volumeMounts: arrayOf(ref('VolumeMount')),
      envs: arrayOf(ref('Env')),
      ports: arrayOf(object({ port }), 'Always exactly one port.', { minItems: 1, maxItems: 1 }),
      workers: arrayOf(ref('Worker')),
      products: arrayOf(ref('ProductRef')),
      healthy: ref('Healthy'),
      clusterID: str('Present only when a network volume is mounted.'),
      log: str('URL of the endpoint log (GET endpoint/log).', { format: 'uri' }),
      metrics: str('URL of the endpoint metrics (GET endpoint/metrics).', { format: 'uri' }),
      public: bool("Corral extension: true when the endpoint's URL answers without a key."),
      type: {
        type: 'string',
        enum: ['http', 'queue'],
        description: 'Corral extension: http (a URL) or queue (RunPod worker protocol).',
      },
      jobsPath: str('Corral extension: where a job of an http endpoint is delivered (POST {jobsPath}).'),
      models: arrayOf(
        object({
          name: str('A hub repository, org/name.'),
          revision: str('A branch, tag, commit or refs/pr/N.'),
          allowPatterns: arrayOf(str(), 'Only files matching one of these globs; empty: every file.'),
          tokenSecret: {
            type: ['string', 'null'],
            description: "The name of the owner's secret holding a hub token.",
          },
        }),
        "Corral extension: hub repositories its workers load, fetched into the machine's model cache before a GPU is held and mounted read-only at /runpod-volume/huggingface-cache/hub (docs/models.md).",
      ),
      openaiModel: str(
        'Corral extension: the model name OpenAI clients send as "model" for this endpoint, which the model router (/openai/v1/...) picks it by (docs/openai.md). Absent when none.',
      ),
      jobUrls: object(
        {
          run: str('POST {"input": {...}}: queues a job, answers its id.', { format: 'uri' }),
          runsync: str('POST {"input": {...}}: runs a job and waits for its output.', { format: 'uri' }),
          status: str("GET: a job's status; {jobId} stands for the id run answered."),
          health: str('GET: the queue and the workers.', { format: 'uri' }),
        },
        {
          description:
            "Corral extension: the endpoint's jobs API on the gateway (RunPod's /v2/{endpoint}/...), where a queue endpoint is called.",
        },
      ),
    },
    { optional: ['clusterID', 'openaiModel'], description },
  );
}

/** A latency-like figure in milliseconds: percentiles from the histogram buckets, the exact mean. */
const distribution = (what: string): Schema => ({
  type: ['object', 'null'],
  description: `${what}, in ms; each null before the first request. Null without a gateway in this process.`,
  properties: {
    p50: {
      type: ['number', 'null'],
      description:
        'Median, estimated from the histogram buckets, within the smallest and largest values seen.',
    },
    p99: {
      type: ['number', 'null'],
      description:
        '99th percentile, estimated from the histogram buckets, within the smallest and largest values seen.',
    },
    mean: { type: ['number', 'null'], description: 'Mean.' },
  },
  required: ['p50', 'p99', 'mean'],
});

const nullableCount = (description: string): Schema => ({
  type: ['integer', 'null'],
  description: `${description} Null without a gateway in this process.`,
});

/** Wakes from zero of one tier since the gateway started. */
const wakes = (description: string): Schema => ({
  type: ['object', 'null'],
  description,
  properties: {
    count: int(),
    meanMs: {
      type: ['number', 'null'],
      description: 'Mean time from the first waiting request to the first routable worker; null without any.',
    },
  },
  required: ['count', 'meanMs'],
});

function endpointMetricsSchema(): Schema {
  return object(
    {
      id: str('Endpoint id.'),
      workers: {
        type: 'object',
        additionalProperties: { type: 'integer' },
        description: 'Workers by state (states with none are left out), as the endpoint shows them.',
      },
      readyWorkers: int(
        'Workers serving now (running and healthy); failed workers count only in `workers.failed`.',
      ),
      window: {
        type: ['object', 'null'],
        description:
          "What the since-start figures (requests, latencyMs, queueWaitMs, coldStarts, thaws, restores) cover: everything the answering server's gateway saw since it started. Null without a gateway in this process.",
        properties: {
          since: { type: 'string', format: 'date-time', description: 'When the gateway started.' },
          seconds: int('How long ago that was.'),
          replica: {
            type: ['string', 'null'],
            description:
              "With several replicas on PostgreSQL: the answering replica, whose gateway alone those figures cover (queueDepth and inFlight are every live replica's). Null with one process.",
          },
        },
        required: ['since', 'seconds', 'replica'],
      },
      requests: {
        type: ['object', 'null'],
        description:
          'Requests (upgrades included) by status code; 499: the client left. Null without a gateway in this process.',
        properties: {
          total: int(),
          byStatus: { type: 'object', additionalProperties: { type: 'integer' } },
        },
        required: ['total', 'byStatus'],
      },
      latencyMs: distribution('From arrival to the end of the response, queue wait included'),
      queueWaitMs: distribution('Time waited for a worker slot'),
      queueDepth: nullableCount(
        "Requests waiting for a slot now; with several replicas, every live replica's (each writes its own at most every 50 ms, and at least every second while busy).",
      ),
      inFlight: nullableCount(
        "Requests at workers now; with several replicas, every live replica's, as queueDepth.",
      ),
      coldStarts: wakes(
        'Cold starts: wakes from zero by a new worker (one per wake), thaws and restores apart. Null without a gateway in this process.',
      ),
      thaws: wakes(
        'Wakes from zero by a thaw (a frozen worker). Absent from servers before it; null without a gateway in this process.',
      ),
      restores: wakes(
        'Wakes from zero by a restore (a suspended worker). Absent from servers before it; null without a gateway in this process.',
      ),
      wakes: {
        type: ['object', 'null'],
        description:
          'coldStarts, thaws and restores again by tier (cold, thaw, restore), as servers before them answered. Null without a gateway in this process.',
        properties: Object.fromEntries(
          ['thaw', 'restore', 'cold'].map((tier) => [
            tier,
            {
              type: 'object',
              properties: { count: int(), meanMs: { type: ['number', 'null'] } },
              required: ['count', 'meanMs'],
            },
          ]),
        ),
      },
      desiredWorkers: {
        type: ['integer', 'null'],
        description:
          "The workers the autoscaler wants now, within minNum and maxNum (0 while stopped). Null where the answering server's controller has not decided (it does not lead, or has not passed yet).",
      },
      recent: {
        type: ['object', 'null'],
        description:
          'The traffic of the last 5 minutes, from the history (GET endpoint/metrics/history). Null where the answering server keeps none.',
        properties: {
          seconds: int('What the figures cover: the seconds of history within the window (fewer at first).'),
          requests: int('Requests that ended in it.'),
          requestsPerMinute: { type: 'number', description: 'requests per minute over those seconds.' },
          latencyMs: {
            type: 'object',
            description:
              'Percentiles of those requests (from the buckets added up), in ms; null without any.',
            properties: { p50: { type: ['number', 'null'] }, p99: { type: ['number', 'null'] } },
            required: ['p50', 'p99'],
          },
        },
        required: ['seconds', 'requests', 'requestsPerMinute', 'latencyMs'],
      },
      jobs: ref('EndpointJobs'),
      usage: object(
        { lastHour: ref('UsageTotals'), lastDay: ref('UsageTotals') },
        {
          description:
            "The usage ledger's GPU time and its price over the last hour and the last day, every replica's (docs/usage.md).",
        },
      ),
    },
    {
      optional: ['usage'],
      description:
        "One endpoint's metrics. Traffic figures are this process's gateway's since it started; see docs/gateway.md.",
    },
  );
}

/** A column of the history: one value per sample. */
const column = (description: string, nullable = false): Schema => ({
  type: 'array',
  description,
  items: { type: nullable ? ['number', 'null'] : 'number' },
});

/** Wakes from zero of one tier in each interval: how many, and their mean duration. */
const wakeColumns = (description: string): Schema =>
  object(
    {
      count: column('Wakes completed in the interval.'),
      meanMs: column('Their mean duration, ms; null without any.', true),
    },
    { description },
  );

function endpointHistorySchema(): Schema {
  return object(
    {
      id: str('Endpoint id.'),
      intervalSeconds: {
        type: ['integer', 'null'],
        description:
          'Seconds between samples. Null where the answering server keeps no history (no gateway, or history.samples 0).',
      },
      capacity: int('The most samples kept (history.samples; 0 where none are).'),
      at: column(
        'When each sample was taken, ms since the epoch; every other array has one value per sample.',
      ),
      requests: object(
        {
          ok: column('Requests that ended in the interval below 400 (2xx, and 1xx/3xx).'),
          clientErrors: column('4xx (499: the client left).'),
          serverErrors: column('5xx.'),
        },
        { description: 'Requests that ended in each interval, by status class.' },
      ),
      latencyMs: object(
        {
          p50: column('Median, ms; null without a request.', true),
          p99: column('99th percentile, ms; null without a request.', true),
        },
        {
          description:
            "Of each interval's requests, queue wait included: estimated from the histogram buckets within the interval's smallest and largest values.",
        },
      ),
      queue: object(
        {
          depth: column('Requests waiting for a slot at the sample.'),
          oldestWaitMs: column('How long the oldest of them had waited, ms (0 with none).'),
        },
        { description: 'The queue at each sample.' },
      ),
      inFlight: column('Requests at workers at the sample.'),
      workers: {
        type: 'object',
        description:
          'Workers in each state at each sample, every state listed (no state where none are kept).',
        additionalProperties: { type: 'array', items: { type: 'number' } },
      },
      desiredWorkers: column(
        "The autoscaler's desired count; null where this server's scaler had not decided.",
        true,
      ),
      coldStarts: wakeColumns('Cold starts (a new worker) in each interval.'),
      thaws: wakeColumns('Thaws (a frozen worker) in each interval.'),
      restores: wakeColumns('Restores (a suspended worker) in each interval.'),
      jobs: ref('JobsHistory'),
    },
    {
      description:
        "An endpoint's history, oldest first, in columns: this server's gateway's traffic and controller's workers, one sample per interval (docs/dashboard.md).",
    },
  );
}

export function responseSchemas(): Record<string, Schema> {
  return {
    EndpointState: stateSchema(
      ENDPOINT_STATES,
      'Stable UPPER_SNAKE code when the endpoint failed, else empty.',
    ),
    WorkerState: stateSchema(
      [...WORKER_STATES],
      `Stable code when the worker failed (${WORKER_ERRORS.join(', ')}), else empty.`,
    ),
    Worker: object({
      id: str(),
      state: ref('WorkerState'),
      log: str("URL of the worker's log stream."),
      metrics: str("URL of the worker's metrics."),
      healthy: bool('Whether the worker passes its health check (and so receives requests).'),
      drain: bool(
        'Whether its owner drained it (POST endpoint/worker/drain): it takes no new request and is replaced.',
      ),
    }),
    WorkerConfig: object({
      minNum: int(),
      maxNum: int(),
      freeTimeout: str('Idle seconds before a worker is removed, as a string.', { pattern: '^\\d+$' }),
      maxConcurrent: str('Concurrent requests per worker, as a string.', { pattern: '^\\d+$' }),
      gpuNum: int('GPUs per worker.'),
      cudaVersion: str('A version of cudaVersionList, or "any".'),
      requestTimeout: int("Seconds the gateway waits for a worker's response."),
      keepFrozen: int(
        'Corral extension: seconds an idle worker stays frozen before it is suspended or stopped.',
      ),
      keepSuspended: int('Corral extension: seconds a worker stays suspended before it is stopped.'),
    }),
    Policy: object({
      type: str('queue: value is the seconds the oldest request may wait; concurrency: queued requests.', {
        enum: ['queue', 'concurrency'],
      }),
      value: str('As a string.', { pattern: '^\\d+$' }),
    }),
    Image: object({
      image: str('Image reference.'),
      authId: str('Id of registry credentials (POST repository/auth/save), or empty.'),
      command: str('Command the container runs, or empty for the image default.'),
    }),
    VolumeMount: object({
      type: str(undefined, { enum: ['local', 'network'] }),
      id: str('Network storage id; empty for a local volume.'),
      size: int('GB; 0 for a network volume.'),
      mountPath: str(),
    }),
    Env: object({ key: str(), value: str() }),
    ProductRef: object({ id: str('A product id of GET products.') }),
    Healthy: object({
      path: str(),
      initialDelay: int('Seconds.'),
      period: int('Seconds.'),
      timeout: int('Seconds.'),
      successThreshold: int(),
      failureThreshold: int(),
    }),
    Endpoint: endpointSchema(
      int(undefined, { minimum: 1, maximum: 65535 }),
      'An endpoint as get and update return it (ports[].port is an integer).',
    ),
    ListedEndpoint: endpointSchema(
      str(undefined, { pattern: '^\\d+$' }),
      'An endpoint as list returns it (ports[].port is a string).',
    ),
    EndpointList: object({
      endpoints: arrayOf(ref('ListedEndpoint'), 'Newest first.'),
      total: int('How many endpoints the caller has in all pages.'),
    }),
    EndpointResponse: object({ endpoint: ref('Endpoint') }),
    IdResponse: object({ id: str() }),
    Empty: { type: 'object', description: 'An empty object.', maxProperties: 0 },
    Limits: limitsSchema(),
    QuotaReport: quotaReportSchema(),
    Product: object({
      id: str('Product id, such as h100-80g; use it in products[].id.'),
      name: str(),
      gpuModel: str(),
      gpuMemoryGB: int(),
      gpusTotal: int(),
      gpusFree: int(),
    }),
    ProductList: object({ products: arrayOf(ref('Product')) }),
    Credentials: object(
      {
        id: str('Use it as image.authId.'),
        name: str(),
        username: str(),
        createdAt: str(undefined, { format: 'date-time' }),
      },
      { description: 'Saved registry credentials; the password is never returned.' },
    ),
    CredentialsList: object({ auths: arrayOf(ref('Credentials')) }),
    InvokeKey: object({
      id: str('The key id (the part after ik_); revoke by it.'),
      endpointId: str('The endpoint the key calls.'),
      name: str(),
      createdAt: str(undefined, { format: 'date-time' }),
      revokedAt: { type: ['string', 'null'], format: 'date-time', description: 'Null while the key works.' },
    }),
    NewInvokeKey: {
      allOf: [
        ref('InvokeKey'),
        object({ key: str('The key, ik_<id>_<secret>: shown only in this answer.') }, { required: ['key'] }),
      ],
    },
    InvokeKeyList: object({ keys: arrayOf(ref('InvokeKey'), 'Oldest first, revoked keys included.') }),
    WebhookSecret: object({
      endpointId: str(),
      secret: str('whsec_ and base64: the Standard Webhooks signing secret of the endpoint.'),
      createdAt: str('When this secret was made (first read or last rotation).', { format: 'date-time' }),
    }),
    JobListing: object({
      id: str(),
      status: { type: 'string', enum: [...JOB_STATUSES] },
      createdAt: str(undefined, { format: 'date-time' }),
      startedAt: {
        type: ['string', 'null'],
        format: 'date-time',
        description: 'When a worker took it last.',
      },
      completedAt: { type: ['string', 'null'], format: 'date-time' },
      delayTime: int('Milliseconds from submission to a worker taking it (so far, while queued).'),
      executionTime: int('Milliseconds the worker ran it (so far, while in progress).'),
      workerId: { type: ['string', 'null'] },
      attempts: int('How many times a worker took it.'),
      error: { type: ['string', 'null'], description: 'Why it FAILED, TIMED_OUT or was CANCELLED.' },
    }),
    EndpointJobs: object({
      id: str('The endpoint id.'),
      counts: object(Object.fromEntries(JOB_STATUSES.map((s) => [s, int()]))),
      jobs: arrayOf(ref('JobListing'), 'Newest first; never inputs or outputs.'),
    }),
    ClippedText: object({
      text: str('The stored JSON text, or its first characters when truncated.'),
      bytes: int('The whole text in bytes.'),
      truncated: bool(),
    }),
    JobDetail: {
      allOf: [
        ref('JobListing'),
        object({
          input: ref('ClippedText'),
          output: { anyOf: [ref('ClippedText'), { type: 'null' }] },
          chunks: arrayOf(ref('ClippedText'), 'Streamed chunks no client has read yet, oldest first.'),
          chunkCount: int('How many such chunks there are in all.'),
          webhook: { type: ['string', 'null'] },
          policy: object({ executionTimeout: int(), ttl: int(), lowPriority: bool() }),
        }),
      ],
    },
    JobDetailAnswer: object({ job: ref('JobDetail') }),
    JobListingAnswer: object({ job: ref('JobListing') }),
    ApiKey: object({
      id: str('The key id (the part after sk_); revoke by it.'),
      name: str(),
      ownerId: str('The owner the key acts as.'),
      admin: bool('An admin key manages keys and may act for other owners.'),
      createdAt: str(undefined, { format: 'date-time' }),
      lastUsedAt: {
        type: ['string', 'null'],
        format: 'date-time',
        description: 'Its last use, recorded at most once a minute; null: never used.',
      },
      revokedAt: { type: ['string', 'null'], format: 'date-time', description: 'Null while the key works.' },
    }),
    NewApiKey: {
      allOf: [
        ref('ApiKey'),
        object({ key: str('The key, sk_<id>_<secret>: shown only in this answer.') }, { required: ['key'] }),
      ],
    },
    BillingRows: arrayOf(ref('BillingRow'), 'By bucket, then by endpoint (or GPU type).'),
    UsageTotals: object(
      {
        gpuSeconds: {
          type: 'object',
          description: 'GPU-seconds (worker seconds x its GPUs) per state.',
          additionalProperties: { type: 'number' },
        },
        timeBilledMs: int('Worker time, every state.'),
        amount: { type: 'number', description: 'Price x GPUs x time per state, in `currency`.' },
        currency: str('The currency of amount (config usage.currency).'),
      },
      { description: 'GPU time and its price over some span.' },
    ),
    BillingRow: object(
      {
        time: str("The bucket's start (UTC).", { format: 'date-time' }),
        amount: {
          type: 'number',
          description: 'Price x GPUs x time per state, in `currency` (0 where no price is set).',
        },
        timeBilledMs: int(
          'Worker time in the bucket, every state (from placement until the worker stops or fails).',
        ),
        diskSpaceBilledGb: int('Corral bills no disk: 0.'),
        endpointId: str('With grouping=endpointId.'),
        gpuTypeId: str('With grouping=gpuTypeId: the GPU product id.'),
        state: str("Corral's own, with grouping=state: the worker state the row's time was spent in.", {
          enum: [...USAGE_STATES],
        }),
        ownerId: { type: ['string', 'null'], description: "Corral's own: the workers' owner." },
        gpuSeconds: {
          type: 'object',
          description: "Corral's own: GPU-seconds (worker seconds x its GPUs) per state.",
          additionalProperties: { type: 'number' },
        },
        currency: str("Corral's own: the currency of amount (config usage.currency)."),
      },
      {
        required: [
          'time',
          'amount',
          'timeBilledMs',
          'diskSpaceBilledGb',
          'ownerId',
          'gpuSeconds',
          'currency',
        ],
      },
    ),
    ApiKeyList: object({ keys: arrayOf(ref('ApiKey'), 'Oldest first, revoked keys included.') }),
    Gpus: object({
      scope: str(
        "all: an admin key sees every owner's workers; own: only yours, others' GPUs are just busy.",
        {
          enum: ['all', 'own'],
        },
      ),
      gpus: arrayOf(ref('Gpu'), 'By index.'),
      waiting: arrayOf(ref('WaitingWorker'), 'Workers waiting for GPUs, the longest waiting first.'),
    }),
    Gpu: object(
      {
        index: int(),
        uuid: str(),
        productId: str('The product it counts as (GET products).'),
        model: str('Its marketing name.'),
        memoryGB: int(),
        simulated: bool('A GPU of --gpus, not a real one.'),
        node: str('The node it is on, where the cluster has several.'),
        busy: bool('A worker holds it (or its container is being removed).'),
        heldBy: {
          anyOf: [ref('GpuHolder'), { type: 'null' }],
          description:
            'Null when free, or when a worker of another owner holds it and the key is no admin key.',
        },
      },
      { optional: ['node'] },
    ),
    GpuHolder: object({
      workerId: str(),
      endpointId: str("Empty while a removed worker's container still holds the GPU."),
      endpointName: str(),
      ownerId: str(),
      state: str("The worker's state, or removing.", { enum: [...WORKER_STATES, 'removing'] }),
    }),
    WaitingWorker: object({
      workerId: str(),
      endpointId: str(),
      endpointName: str(),
      ownerId: str(),
      since: str('When the worker was decided on.', { format: 'date-time' }),
      gpuCount: int('GPUs per worker.'),
      productIds: arrayOf(str(), 'The products it may run on.'),
      reason: str('Why it is not placed yet.'),
    }),
    Models: object({
      scope: str('all: an admin key sees every cached model; own: the models your endpoints name.', {
        enum: ['all', 'own'],
      }),
      models: arrayOf(
        ref('CachedModel'),
        "One entry per cached revision per machine: this machine's cache first, then each GPU node's.",
      ),
    }),
    CachedModel: object({
      name: str('org/name, as on the hub.'),
      machine: {
        anyOf: [str(), { type: 'null' }],
        description:
          "The GPU node whose cache holds this copy (Kubernetes with node agents); null: this machine's own cache.",
      },
      revision: str(
        'The branch, tag or refs/pr/N that points to the commit here (the commit when none does).',
      ),
      commit: str('The commit the files are of.'),
      files: int(),
      bytes: int("Bytes of this revision's files."),
      diskBytes: int("Bytes the repository takes on disk, every revision's blobs counted once."),
      lastUsedAt: str("When a worker last needed it (fetched, or checked with its owner's token).", {
        format: 'date-time',
      }),
      endpoints: arrayOf(
        ref('ModelUser'),
        "The endpoints naming it: yours, or every owner's for an admin key.",
      ),
      download: {
        anyOf: [ref('ModelDownload'), { type: 'null' }],
        description: 'A download under way, or null.',
      },
    }),
    ModelUser: object({ endpointId: str(), endpointName: str() }),
    ModelDownload: object({
      bytesDone: int(),
      bytesTotal: int(),
      bytesPerSecond: int('Over the last 5 seconds.'),
    }),
    SavedSecret: object({
      name: str(),
      replaced: bool('True when a secret of that name existed and its value was replaced.'),
    }),
    Secret: object(
      {
        name: str('Referenced as {{ CORRAL_SECRET_name }} in env values.'),
        createdAt: str(undefined, { format: 'date-time' }),
        updatedAt: str(undefined, { format: 'date-time' }),
      },
      { description: 'A saved secret; its value is never returned.' },
    ),
    SecretList: object({ secrets: arrayOf(ref('Secret')) }),
    Event: object({
      id: int('Increasing; pass the last one as `after` to read on.'),
      at: str(undefined, { format: 'date-time' }),
      type: str(`What happened: ${ENDPOINT_EVENT_TYPES.join(', ')} (docs/api.md describes each).`),
      message: str(),
      data: { type: 'object', additionalProperties: true },
    }),
    WorkerMetrics: object({
      id: str('Worker id.'),
      state: str('Worker state.'),
      healthy: { type: 'boolean' },
      gpus: { type: 'array', items: str('GPU uuid.') },
      requests: { type: ['integer', 'null'], description: 'Requests the gateway has given this worker.' },
      inFlight: { type: ['integer', 'null'], description: 'Requests in flight on it now.' },
      cpuPercent: { type: ['number', 'null'], description: 'CPU use (100 = one core); null when unknown.' },
      memoryBytes: { type: ['integer', 'null'], description: 'Memory in use; null when unknown.' },
      startedAt: str('When the worker was created.', { format: 'date-time' }),
      readyAt: {
        type: ['string', 'null'],
        format: 'date-time',
        description: 'When it first passed its health check.',
      },
    }),
    EndedWorker: object({
      id: str('Worker id.'),
      endedAt: str('When its container was removed.', { format: 'date-time' }),
      failed: bool('It ended failed (crashed, failed its health checks or its start), not by scaling.'),
      reason: str('Why it ended, e.g. `worker exited with code 3`.'),
      truncated: bool('Older lines were dropped: its last 1,000 lines (256 KiB) are kept.'),
      log: str('GET endpoint/worker/log for it: its last output.'),
    }),
    EndedWorkerList: object({ workers: arrayOf(ref('EndedWorker'), 'The most recently ended first.') }),
    EndpointMetrics: endpointMetricsSchema(),
    EndpointHistory: endpointHistorySchema(),
    EventPage: object({
      events: arrayOf(ref('Event'), 'Oldest first.'),
      next: int('The id to pass as `after` for the next page (the last id, or `after` if none).'),
    }),
    Health: object(
      {
        status: str(undefined, { const: 'ok' }),
        ready: bool(
          'False while workers cannot run yet (corral serve waits for a Docker engine to answer) or the database ' +
            "did not take this replica's last heartbeat.",
        ),
        reason: str('Why the database counts as out (only then).'),
        waitingFor: str('What corral serve waits for, while not ready.'),
        database: str(
          "Said only while the database did not take this replica's last heartbeat (every 2 s).",
          {
            enum: ['unreachable'],
          },
        ),
      },
      { optional: ['reason', 'waitingFor', 'database'] },
    ),
    Readiness: object(
      {
        status: str('ok when ready, unavailable when not.', { enum: ['ok', 'unavailable'] }),
        ready: bool('Workers can run and the database answers.'),
        reason: str('Why it is not ready, in words (only when not ready).'),
        waitingFor: str('What corral serve waits for, while workers cannot run yet.'),
        database: str('Whether the database answered within 2 s.', { enum: ['ok', 'unreachable'] }),
        replica: str("This replica's id (GET cluster lists them)."),
        leader: bool('Whether this replica runs the controller now.'),
      },
      { optional: ['reason', 'waitingFor', 'replica', 'leader'] },
    ),
    Cluster: object({
      database: str('The store: sqlite (one process) or postgres (any number of replicas).', {
        enum: ['sqlite', 'postgres'],
      }),
      self: str('The id of the replica that answered.'),
      leader: {
        type: ['object', 'null'],
        description: 'The replica that runs the controller; null while none holds the lease.',
        properties: {
          replica: str('Its id.'),
          since: str('When it took the lease.', { format: 'date-time' }),
          token: int('The fencing token of its term: one more at every change of leader.'),
        },
        required: ['replica', 'since', 'token'],
        additionalProperties: false,
      },
      replicas: arrayOf(ref('Replica')),
    }),
    Replica: object({
      id: str('Made at each start.'),
      host: str('Its host name.'),
      pid: int('Its process id on that host.'),
      apiUrl: str('Where its API listens.'),
      startedAt: str(undefined, { format: 'date-time' }),
      lastSeenAt: str('Its last heartbeat (every 2 s).', { format: 'date-time' }),
      alive: bool('Seen within the last 6 s.'),
      leader: bool('It runs the controller now.'),
      inFlight: int('Requests in flight through its gateway at its last heartbeat.'),
      queued: int('Requests queued in its gateway at its last heartbeat.'),
    }),
    Error: object(
      {
        code: int('The HTTP status code.'),
        reason: str('Stable reason; clients match on it.', { enum: Object.keys(API_ERROR_CATALOGUE) }),
        message: str('Human-readable explanation.'),
        metadata: {
          type: 'object',
          additionalProperties: true,
          description:
            'Facts about the error: field (the wire field at fault), issues, min/max, retryAfterSeconds...',
        },
      },
      { description: 'The body of every error response.' },
    ),
  };
}

function limitsSchema(): Schema {
  const units: Record<string, string> = {
    rootfsSizeGB: 'system disk size (GB)',
    localVolumeSizeGB: 'local volume size (GB)',
    workers: 'worker count (minNum, maxNum)',
    idleTimeoutSeconds: 'freeTimeout (seconds)',
    concurrency: 'maxConcurrent (requests per worker)',
    queueWaitSeconds: 'policy value when type is queue (seconds)',
    requestCount: 'policy value when type is concurrency (queued requests)',
    gpus: 'gpuNum (GPUs per worker)',
    requestTimeoutSeconds: 'requestTimeout (seconds)',
  };
  const bounds = { min: 'Smallest', max: 'Largest', free: 'Default' };
  const properties: Record<string, Schema> = {};
  for (const [wireKey, [domainKey, bound]] of Object.entries(WIRE_LIMIT_FIELDS)) {
    properties[wireKey] = int(`${bounds[bound]} ${units[domainKey] ?? domainKey}.`);
  }
  properties.cudaVersionList = arrayOf(str(), 'CUDA versions every GPU of the server supports.');
  return object(properties, { description: 'Allowed ranges for create and update; all fields present.' });
}

/** A token bucket's budget, as `GET quota` reports it. */
function rateSchema(description: string): Schema {
  return object(
    {
      requestsPerSecond: { type: 'number', description: 'Tokens added each second.' },
      burst: int('Tokens at most: requests at once.'),
      per: str('What one bucket is kept for.', { enum: ['key', 'owner'] }),
      bytesPerToken: int('A request costs one token and one more per this many bytes of its body.'),
    },
    { description },
  );
}

/** `GET quota`: each quota as a count or "unlimited", the use of each, which apply and why, and the rates. */
function quotaReportSchema(): Schema {
  const limit = { anyOf: [int(undefined, { minimum: 0 }), str(undefined, { enum: ['unlimited'] })] };
  const each = (schema: Schema) => Object.fromEntries(QUOTA_NAMES.map((name) => [name, schema]));
  const source = (description: string) => str(description, { enum: ['config', 'operator', 'default'] });
  return object(
    {
      quota: object(each(limit), { description: 'Your quotas (configured by the operator).' }),
      used: object(each(int(undefined, { minimum: 0 })), {
        description:
          'What you use now: your live endpoints (stopped ones included), saved registry credentials and secrets, and active invoke keys of your live endpoints.',
      }),
      source: source(
        "Which quotas apply to you: config (the config file sets them, for you or for every owner), operator (you hold an admin key: the default GPU quotas do not apply), default (the defaults for the server's GPUs).",
      ),
      reason: str('Why, in one sentence.'),
      sources: object(each(source('Where this quota comes from.')), {
        description: 'Where each quota comes from.',
      }),
      rates: object(
        {
          api: rateSchema("Every request to this API, per API key (the config file's rateLimit)."),
          jobSubmissions: rateSchema(
            "run, runsync and retry on the gateway's /v2, per owner over all its keys (jobs.submissionRate).",
          ),
        },
        {
          optional: ['jobSubmissions'],
          description:
            'The token buckets your requests draw on; past one: 429 RATE_LIMITED with Retry-After.',
        },
      ),
      budget: object(
        {
          state: str(
            'ok; warning from 80 % of the limit; exceeded from 100 %: no new worker starts beyond minNum.',
            {
              enum: ['ok', 'warning', 'exceeded'],
            },
          ),
          budget: str('Which limit binds.', { enum: ['perMonth', 'gpuHoursPerMonth', 'spendPerHour'] }),
          limit: { type: 'number', description: 'The limit, in `unit`.' },
          used: {
            type: 'number',
            description: "What is used of it in this period (the month's, or the hour's).",
          },
          unit: str('The currency, or GPU-hours.'),
          resetsAt: str('ISO 8601: when the period ends and the use counts from 0 again.'),
          message: str('The budget, its use and its reset, in one sentence.'),
        },
        {
          description:
            'The budget that binds you (docs/budgets.md): your monthly one or the account-wide spend per hour; absent where none applies.',
        },
      ),
    },
    {
      optional: ['rates', 'budget'],
      description:
        'endpoints; minGpus: the sum of minNum x gpuNum; maxGpus: the sum of maxNum x gpuNum; workers: the sum of maxNum; credentials; secrets; invokeKeys: active invoke keys over all your endpoints.',
    },
  );
}
