/**
 * The operations of the OpenAPI document: paths, summaries, descriptions and the error reasons each may answer
 * (what no schema says), and their operation objects.
 */

import { API_ERROR_CATALOGUE, type ApiErrorReason } from '../../errors/api-catalogue.js';
import { WIRE_GROUPINGS } from '../billing.js';
import { JOB_LIST_LIMIT } from '../job-views.js';
import { JOB_STATUSES } from '../jobs.js';
import { API_PREFIX, ENDPOINT_ID_KEYS } from '../paths.js';
import { MAX_PAGE_SIZE } from '../query.js';
import { ref, type Schema, str } from './schema.js';

interface Operation {
  method: 'get' | 'post' | 'delete';
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** False for the unauthenticated system routes. */
  auth: boolean;
  /** A system route that needs an admin key or the scrape token (/metrics): no X-Corral-Owner, no rate limit. */
  adminOnly?: boolean;
  parameters?: Schema[];
  /** Component schema name of the JSON body. */
  body?: string;
  /** The success answer: 200 with a body unless `status` says otherwise (204: none, `schema` absent). */
  response: { description: string; schema?: Schema; contentType?: string; status?: string };
  /** Another status answered with the same body (/readyz's 503). */
  sameBodyAlso?: { status: string; description: string };
  /** Reasons specific to this operation (auth, rate limit, database and internal errors are added for all). */
  errors?: ApiErrorReason[];
}

const VALIDATION: ApiErrorReason[] = [
  'INVALID_FIELD',
  'OUT_OF_RANGE',
  'MIN_ABOVE_MAX',
  'RESERVED_PORT',
  'UNKNOWN_PRODUCT',
  'UNKNOWN_CREDENTIALS',
  'UNKNOWN_STORAGE',
  'CLUSTER_MISMATCH',
  'STORAGE_NOT_ALLOWED',
  'UNKNOWN_SECRET',
];

const queryParameter = (name: string, description: string, schema: Schema, required = false): Schema => ({
  name,
  in: 'query',
  required,
  description,
  schema,
});

const [idKey, ...aliases] = ENDPOINT_ID_KEYS;
const endpointIdParameters = [
  queryParameter(idKey, `The endpoint id (required unless ${aliases.join(' or ')} is given).`, str()),
  ...aliases.map((alias) => queryParameter(alias, `Alias of ${idKey}.`, str())),
];

const json = (schemaName: string, description: string) => ({ description, schema: ref(schemaName) });

const v1 = (path: string) => `${API_PREFIX}${path}`;

function operations(): Operation[] {
  const endpoints = 'Endpoints';
  const lifecycle = (
    action: 'delete' | 'stop' | 'start',
    summary: string,
    description: string,
  ): Operation => ({
    method: 'post',
    path: v1(`/endpoint/${action}`),
    operationId: `${action}Endpoint`,
    summary,
    description,
    tag: endpoints,
    auth: true,
    body: 'EndpointIdRequest',
    response: json('Empty', 'Done.'),
    errors: ['INVALID_FIELD', 'ENDPOINT_NOT_FOUND', 'CONCURRENT_UPDATE'],
  });
  return [
    {
      method: 'get',
      path: v1('/endpoints'),
      operationId: 'listEndpoints',
      summary: 'List endpoints',
      description: 'Newest first. ports[].port, freeTimeout, maxConcurrent and policy.value are strings.',
      tag: endpoints,
      auth: true,
      parameters: [
        queryParameter('pageSize', `Entries per page (at most ${MAX_PAGE_SIZE}).`, {
          type: 'integer',
          minimum: 1,
          default: MAX_PAGE_SIZE,
        }),
        queryParameter('pageNum', 'Zero-based page number (0 is the first page).', {
          type: 'integer',
          minimum: 0,
          default: 0,
        }),
      ],
      response: json('EndpointList', 'One page of endpoints and the total count.'),
      errors: ['INVALID_QUERY'],
    },
    {
      method: 'get',
      path: v1('/endpoint'),
      operationId: 'getEndpoint',
      summary: 'Get an endpoint',
      description: 'ports[].port is an integer here.',
      tag: endpoints,
      auth: true,
      parameters: endpointIdParameters,
      response: json('EndpointResponse', 'The endpoint.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'post',
      path: v1('/endpoint/create'),
      operationId: 'createEndpoint',
      summary: 'Create an endpoint',
      tag: endpoints,
      auth: true,
      body: 'CreateEndpointRequest',
      response: json('IdResponse', 'The id of the new endpoint.'),
      errors: [
        ...VALIDATION,
        'APP_NAME_TAKEN',
        'OPENAI_MODEL_TAKEN',
        'RUNTIME_SINGLE_TENANT',
        'QUOTA_EXCEEDED',
      ],
    },
    {
      method: 'post',
      path: v1('/endpoint/update'),
      operationId: 'updateEndpoint',
      summary: 'Update an endpoint',
      description:
        'Omitted keys keep their value. Changing the image, command, envs, port, volumes, GPU count or health path rolls out a new revision; scaling numbers apply in place.',
      tag: endpoints,
      auth: true,
      body: 'UpdateEndpointRequest',
      response: json('EndpointResponse', 'The endpoint after the update.'),
      errors: [
        ...VALIDATION,
        'ENDPOINT_NOT_FOUND',
        'APP_NAME_TAKEN',
        'OPENAI_MODEL_TAKEN',
        'CONCURRENT_UPDATE',
        'RUNTIME_SINGLE_TENANT',
        'QUOTA_EXCEEDED',
      ],
    },
    lifecycle(
      'delete',
      'Delete an endpoint',
      'Its workers are drained and removed; the id answers 404 at once.',
    ),
    lifecycle(
      'stop',
      'Stop an endpoint',
      'Drains and removes every worker; the gateway answers 503 ENDPOINT_STOPPED.',
    ),
    lifecycle(
      'start',
      'Start a stopped endpoint',
      'Restores scaling; starting a running endpoint does nothing.',
    ),
    {
      method: 'get',
      path: v1('/endpoint/log'),
      operationId: 'getEndpointLog',
      summary: "Read an endpoint's events",
      tag: endpoints,
      auth: true,
      parameters: [
        ...endpointIdParameters,
        queryParameter('after', 'Return events with an id above this one.', {
          type: 'integer',
          minimum: 0,
          default: 0,
        }),
        queryParameter('limit', 'Most events to return (at most 1000).', {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          default: 100,
        }),
      ],
      response: json('EventPage', 'Events, oldest first.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/metrics'),
      operationId: 'getEndpointMetrics',
      summary: "Read an endpoint's metrics",
      description:
        "The URL in the endpoint's metrics field: workers by state, and its requests by status, latency, queue wait, queue depth, in flight and cold starts through this gateway.",
      tag: endpoints,
      auth: true,
      parameters: [...endpointIdParameters],
      response: json('EndpointMetrics', "The endpoint's metrics."),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/metrics/history'),
      operationId: 'getEndpointHistory',
      summary: "Read an endpoint's metrics over time",
      description:
        "Corral's own. One sample per interval (10 s, one hour kept, by default) of requests by status class, latency p50/p99, queue depth and oldest wait, in flight, workers by state, the desired count and cold starts, as this server's gateway and controller saw them; the dashboard's charts.",
      tag: endpoints,
      auth: true,
      parameters: [...endpointIdParameters],
      response: json('EndpointHistory', "The endpoint's history, oldest first."),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/worker/log'),
      operationId: 'getWorkerLog',
      summary: "Stream a worker's log",
      description:
        'The URL in workers[].log. Plain text, one line per log line; follow=1 keeps streaming. For a worker that ended (GET endpoint/worker/ended lists them), its kept last output after a first line `[corral] worker <id> ended ...`, with the header X-Corral-Worker-Ended.',
      tag: endpoints,
      auth: true,
      parameters: [
        ...endpointIdParameters,
        queryParameter('worker', 'The worker id, as workers[].id shows it.', str(), true),
        queryParameter('follow', '1 to keep streaming new lines.', { type: 'string', enum: ['0', '1'] }),
        queryParameter('tail', 'Only the last N lines.', { type: 'integer', minimum: 0 }),
      ],
      response: { description: 'Log lines.', schema: { type: 'string' }, contentType: 'text/plain' },
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND', 'WORKER_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/worker/ended'),
      operationId: 'listEndedWorkers',
      summary: 'List the workers that ended',
      description:
        "Corral's own. The endpoint's workers that ended (crashed, failed, replaced, scaled down) whose last output is kept: at least the 5 most recent failed and 5 others, across restarts.",
      tag: endpoints,
      auth: true,
      parameters: [...endpointIdParameters],
      response: json('EndedWorkerList', 'The ended workers, the most recently ended first.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/worker/metrics'),
      operationId: 'getWorkerMetrics',
      summary: "Read a worker's metrics",
      description: 'The URL in workers[].metrics: state, health, GPUs and resource use from the runtime.',
      tag: endpoints,
      auth: true,
      parameters: [
        ...endpointIdParameters,
        queryParameter('worker', 'The worker id, as workers[].id shows it.', str(), true),
      ],
      response: json('WorkerMetrics', 'The worker and its resource use.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND', 'WORKER_NOT_FOUND'],
    },
    {
      method: 'post',
      path: v1('/endpoint/worker/drain'),
      operationId: 'drainWorker',
      summary: 'Drain or undrain a worker',
      description:
        "drain: true takes the worker out of routing at once; it finishes the requests it has, is removed, and a replacement starts (it no longer counts towards the endpoint's workers). drain: false before its removal puts it back. waverless's scale-down drains its victims this way, then lowers minNum/maxNum.",
      tag: endpoints,
      auth: true,
      body: 'DrainWorkerRequest',
      response: json('Empty', 'Done; the controller acts on it within a pass.'),
      errors: ['INVALID_FIELD', 'WORKER_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/limit'),
      operationId: 'getLimits',
      summary: 'Get the allowed parameter ranges',
      tag: 'Catalog',
      auth: true,
      response: json('Limits', 'The limits record.'),
    },
    {
      method: 'get',
      path: v1('/quota'),
      operationId: 'getQuota',
      summary: 'Get your quotas and what you use of each',
      description:
        "Corral's own. Creates, updates, and saves of registry credentials, secrets and invoke keys past a quota answer 403 QUOTA_EXCEEDED. An owner holding an admin key (the operator) is not held to the default GPU quotas.",
      tag: 'Catalog',
      auth: true,
      response: json('QuotaReport', 'Your quotas and your use now.'),
    },
    {
      method: 'get',
      path: v1('/products'),
      operationId: 'listProducts',
      summary: 'List GPU products',
      tag: 'Catalog',
      auth: true,
      response: json('ProductList', "The server's products."),
    },
    {
      method: 'post',
      path: v1('/repository/auth/save'),
      operationId: 'saveCredentials',
      summary: 'Save registry credentials',
      description: 'For private images: pass the returned id as image.authId.',
      tag: 'Registry credentials',
      auth: true,
      body: 'SaveCredentialsRequest',
      response: json('IdResponse', 'The id of the saved credentials.'),
      errors: ['INVALID_FIELD', 'QUOTA_EXCEEDED'],
    },
    {
      method: 'get',
      path: v1('/repository/auths'),
      operationId: 'listCredentials',
      summary: 'List registry credentials',
      tag: 'Registry credentials',
      auth: true,
      response: json('CredentialsList', 'Your saved credentials, without passwords.'),
    },
    {
      method: 'post',
      path: v1('/repository/auth/delete'),
      operationId: 'deleteCredentials',
      summary: 'Delete registry credentials',
      tag: 'Registry credentials',
      auth: true,
      body: 'IdRequest',
      response: json('Empty', 'Deleted.'),
      errors: ['INVALID_FIELD', 'CREDENTIALS_NOT_FOUND', 'CREDENTIALS_IN_USE'],
    },
    {
      method: 'post',
      path: v1('/endpoint/invoke-key/create'),
      operationId: 'createInvokeKey',
      summary: 'Create an invoke key (Corral extension)',
      description:
        "A key that calls this endpoint's URL and nothing else (the API refuses it). The key is in this answer only.",
      tag: 'Invoke keys',
      auth: true,
      body: 'CreateInvokeKeyRequest',
      response: json('NewInvokeKey', 'The new key, shown this once.'),
      errors: ['INVALID_FIELD', 'ENDPOINT_NOT_FOUND', 'QUOTA_EXCEEDED'],
    },
    {
      method: 'get',
      path: v1('/endpoint/invoke-keys'),
      operationId: 'listInvokeKeys',
      summary: "List an endpoint's invoke keys (Corral extension)",
      tag: 'Invoke keys',
      auth: true,
      parameters: endpointIdParameters,
      response: json('InvokeKeyList', 'The keys, without the keys themselves.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'post',
      path: v1('/endpoint/invoke-key/delete'),
      operationId: 'deleteInvokeKey',
      summary: 'Revoke an invoke key (Corral extension)',
      description:
        'The gateway refuses the key within 10 seconds (each gateway caches a key check that long).',
      tag: 'Invoke keys',
      auth: true,
      body: 'DeleteInvokeKeyRequest',
      response: json('Empty', 'Revoked.'),
      errors: ['INVALID_FIELD', 'ENDPOINT_NOT_FOUND', 'INVOKE_KEY_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/webhook-secret'),
      operationId: 'getWebhookSecret',
      summary: "Read an endpoint's webhook signing secret (Corral extension)",
      description:
        "The Standard Webhooks secret (whsec_...) that signs the webhooks of this endpoint's jobs; made on first read. Verify deliveries with it (docs/jobs.md).",
      tag: 'Webhooks',
      auth: true,
      parameters: endpointIdParameters,
      response: json('WebhookSecret', 'The secret.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'post',
      path: v1('/endpoint/webhook-secret/rotate'),
      operationId: 'rotateWebhookSecret',
      summary: "Rotate an endpoint's webhook signing secret (Corral extension)",
      description:
        'Replaces the secret; every delivery attempt from now on, retries included, is signed with the new one.',
      tag: 'Webhooks',
      auth: true,
      body: 'EndpointIdRequest',
      response: json('WebhookSecret', 'The new secret.'),
      errors: ['INVALID_FIELD', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/jobs'),
      operationId: 'listEndpointJobs',
      summary: "List an endpoint's jobs and count them by status (Corral extension)",
      description:
        'The most recent jobs, newest first, without their inputs and outputs, and the counts by status (docs/api.md).',
      tag: 'Jobs',
      auth: true,
      parameters: [
        ...endpointIdParameters,
        queryParameter('status', 'Only the jobs of this status.', {
          type: 'string',
          enum: [...JOB_STATUSES],
        }),
        queryParameter(`limit`, `Most jobs to return (at most ${JOB_LIST_LIMIT.max}).`, {
          type: 'integer',
          minimum: 1,
          maximum: JOB_LIST_LIMIT.max,
          default: JOB_LIST_LIMIT.default,
        }),
      ],
      response: json('EndpointJobs', 'The counts and the jobs.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND'],
    },
    {
      method: 'get',
      path: v1('/endpoint/job'),
      operationId: 'getEndpointJob',
      summary: "Read one of an endpoint's jobs with its input and output (Corral extension)",
      description:
        'Input, output and the stream chunks no client has read yet are cut at a bound, with their whole size in bytes.',
      tag: 'Jobs',
      auth: true,
      parameters: [
        ...endpointIdParameters,
        queryParameter('job', 'The job id (or jobId).', str()),
        queryParameter('jobId', 'Alias of job.', str()),
      ],
      response: json('JobDetailAnswer', 'The job.'),
      errors: ['INVALID_QUERY', 'ENDPOINT_NOT_FOUND', 'JOB_NOT_FOUND'],
    },
    {
      method: 'post',
      path: v1('/endpoint/job/cancel'),
      operationId: 'cancelEndpointJob',
      summary: 'Cancel a queued or running job (Corral extension)',
      description: "As the gateway's cancel: a running job's worker is told through its stop channel.",
      tag: 'Jobs',
      auth: true,
      body: 'JobRefRequest',
      response: json('JobListingAnswer', 'The job, CANCELLED.'),
      errors: ['INVALID_FIELD', 'ENDPOINT_NOT_FOUND', 'JOB_NOT_FOUND', 'JOB_FINISHED'],
    },
    {
      method: 'post',
      path: v1('/endpoint/job/retry'),
      operationId: 'retryEndpointJob',
      summary: 'Queue a FAILED or TIMED_OUT job again (Corral extension)',
      tag: 'Jobs',
      auth: true,
      body: 'JobRefRequest',
      response: json('JobListingAnswer', 'The job, IN_QUEUE.'),
      errors: ['INVALID_FIELD', 'ENDPOINT_NOT_FOUND', 'JOB_NOT_FOUND', 'JOB_NOT_RETRYABLE'],
    },
    {
      method: 'post',
      path: v1('/secret/save'),
      operationId: 'saveSecret',
      summary: 'Save a secret',
      description:
        'Creates or replaces a secret. Env values reference it as {{ CORRAL_SECRET_name }}; it is resolved when a ' +
        'worker starts, so workers started after a replace get the new value.',
      tag: 'Secrets',
      auth: true,
      body: 'SaveSecretRequest',
      response: json('SavedSecret', 'Saved.'),
      errors: ['INVALID_FIELD', 'QUOTA_EXCEEDED'],
    },
    {
      method: 'get',
      path: v1('/secrets'),
      operationId: 'listSecrets',
      summary: 'List secrets',
      tag: 'Secrets',
      auth: true,
      response: json('SecretList', 'Your secrets by name, without values.'),
    },
    {
      method: 'post',
      path: v1('/secret/delete'),
      operationId: 'deleteSecret',
      summary: 'Delete a secret',
      tag: 'Secrets',
      auth: true,
      body: 'SecretNameRequest',
      response: json('Empty', 'Deleted.'),
      errors: ['INVALID_FIELD', 'SECRET_NOT_FOUND', 'SECRET_IN_USE'],
    },
    {
      method: 'get',
      path: v1('/gpus'),
      operationId: 'getGpus',
      summary: 'List the GPUs, who holds them and the workers waiting for one',
      description:
        "Corral's own. Any key: the inventory is no secret (GET products counts it), but a worker of another owner " +
        'shows only as busy unless the key is an admin key.',
      tag: 'GPUs',
      auth: true,
      response: json('Gpus', 'The inventory and the waiting workers.'),
    },
    {
      method: 'get',
      path: v1('/models'),
      operationId: 'getModels',
      summary: "List the models in this machine's cache and the GPU nodes'",
      description:
        "Corral's own (docs/models.md). An admin key sees every cached model; any other key only the models its " +
        'endpoints name. Each with its machine (a GPU node on Kubernetes with node agents; null: this machine), ' +
        'its size, last use and the endpoints naming it.',
      tag: 'Models',
      auth: true,
      response: json('Models', 'The cached models.'),
    },
    {
      method: 'post',
      path: v1('/models'),
      operationId: 'pullModel',
      summary: "Pull a model into this machine's cache",
      description:
        "Corral's own (docs/models.md). The body is one item of an endpoint's models, checked on the hub with your " +
        'token (the value of your tokenSecret) as at create. 202 when a download began: it goes on after the answer, ' +
        'and GET models shows its progress (to you too: a model you pulled is in your own GET models). 200 when ' +
        'every file was already here.',
      tag: 'Models',
      auth: true,
      body: 'ModelInput',
      response: json('CachedModel', 'The model was already cached.'),
      sameBodyAlso: { status: '202', description: 'A download began: the model with its download so far.' },
      errors: [
        'INVALID_FIELD',
        'UNKNOWN_SECRET',
        'MODEL_NOT_FOUND',
        'MODEL_GATED',
        'MODEL_UNAUTHORIZED',
        'MODEL_HUB_UNREACHABLE',
      ],
    },
    {
      method: 'delete',
      path: v1('/models/{org}/{name}'),
      operationId: 'removeModel',
      summary: "Remove a model from this machine's cache and the GPU nodes' (admin keys only)",
      description:
        "Corral's own (docs/models.md). Every revision of the repository, or the one named; blobs another revision " +
        'still links stay. Refused while an endpoint names the model (409 MODEL_IN_USE, metadata.endpoints) or ' +
        'while it is being downloaded (409 MODEL_DOWNLOADING: not cancelled). On Kubernetes with node agents, from ' +
        'every GPU node too (503 MODEL_NODE_UNREACHABLE when an agent does not answer).',
      tag: 'Models',
      auth: true,
      parameters: [
        {
          name: 'org',
          in: 'path',
          required: true,
          description: 'The repository owner on the hub.',
          schema: str(),
        },
        { name: 'name', in: 'path', required: true, description: 'The repository name.', schema: str() },
        queryParameter(
          'revision',
          'A branch, tag or refs/pr/N (as refs/ holds it) or a commit; absent: every revision.',
          str(),
        ),
      ],
      response: { description: 'Removed.', status: '204' },
      errors: [
        'ADMIN_REQUIRED',
        'INVALID_FIELD',
        'MODEL_IN_USE',
        'MODEL_NOT_CACHED',
        'MODEL_DOWNLOADING',
        'MODEL_NODE_UNREACHABLE',
      ],
    },
    {
      method: 'get',
      path: v1('/billing/endpoints'),
      operationId: 'getEndpointBilling',
      summary: "Your workers' GPU time and its price, by bucket and endpoint (RunPod's billing route)",
      description:
        "RunPod's shape, with Corral's own ownerId, gpuSeconds and currency. An owner's key sees its own workers; an " +
        "admin key every owner's, or one owner's with ownerId. See docs/usage.md.",
      tag: 'Usage',
      auth: true,
      parameters: [
        queryParameter('bucketSize', 'The span of each row (UTC; weeks start on Mondays).', {
          type: 'string',
          enum: ['hour', 'day', 'week', 'month'],
          default: 'hour',
        }),
        queryParameter(
          'grouping',
          "What each row is of: RunPod's endpointId or gpuTypeId, or Corral's ownerId or state.",
          {
            type: 'string',
            enum: [...WIRE_GROUPINGS],
            default: 'endpointId',
          },
        ),
        queryParameter('startTime', 'ISO 8601; default a week before endTime.', {
          type: 'string',
          format: 'date-time',
        }),
        queryParameter('endTime', 'ISO 8601, exclusive; default now. At most 366 days after startTime.', {
          type: 'string',
          format: 'date-time',
        }),
        queryParameter('endpointId', 'Only this endpoint.', { type: 'string' }),
        queryParameter('ownerId', "Admin keys only: only this owner's workers.", { type: 'string' }),
      ],
      response: json('BillingRows', 'One row per bucket and endpoint (or GPU type) with any usage.'),
      errors: ['INVALID_QUERY'],
    },
    {
      method: 'get',
      path: v1('/apikeys'),
      operationId: 'listApiKeys',
      summary: "List the server's API keys",
      description: "Corral's own, admin keys only. Every owner's keys, revoked ones included; never a key.",
      tag: 'API keys',
      auth: true,
      response: json('ApiKeyList', 'The keys, without the keys themselves.'),
      errors: ['ADMIN_REQUIRED'],
    },
    {
      method: 'post',
      path: v1('/apikey/create'),
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description: "Corral's own, admin keys only. The answer holds the key: it is never shown again.",
      tag: 'API keys',
      auth: true,
      body: 'CreateApiKeyRequest',
      response: json('NewApiKey', 'The new key, shown this once.'),
      errors: ['ADMIN_REQUIRED', 'INVALID_FIELD'],
    },
    {
      method: 'post',
      path: v1('/apikey/delete'),
      operationId: 'deleteApiKey',
      summary: 'Revoke an API key',
      description: "Corral's own, admin keys only. Requests with the key are refused at once.",
      tag: 'API keys',
      auth: true,
      body: 'IdRequest',
      response: json('Empty', 'Revoked.'),
      errors: ['ADMIN_REQUIRED', 'INVALID_FIELD', 'API_KEY_NOT_FOUND'],
    },
    {
      method: 'get',
      path: '/healthz',
      operationId: 'health',
      summary: 'Liveness',
      description:
        'Always 200 while the process runs, without waiting for the database; the body says when the database ' +
        'is out. /readyz says whether it can serve.',
      tag: 'System',
      auth: false,
      response: json('Health', 'The server is up.'),
    },
    {
      method: 'get',
      path: '/readyz',
      operationId: 'readiness',
      summary: 'Readiness',
      description:
        '200 when this replica can serve: workers can run and the database answers within 2 s; 503 otherwise, ' +
        'with the same body saying why. /healthz is liveness: 200 while the process runs.',
      tag: 'System',
      auth: false,
      response: json('Readiness', 'Ready.'),
      sameBodyAlso: { status: '503', description: 'Not ready: the body says what is missing.' },
    },
    {
      method: 'get',
      path: v1('/cluster'),
      operationId: 'getCluster',
      summary: 'List the replicas and the leader',
      description:
        "Corral's own, admin keys only (another key gets 401 UNAUTHENTICATED). The replicas on this database " +
        '(a heartbeat row each), which one runs the controller and since when (docs/operations.md).',
      tag: 'System',
      auth: true,
      response: json('Cluster', 'The replicas and the leader.'),
    },
    {
      method: 'get',
      path: '/metrics',
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      description:
        'Needs an admin API key, or the scrape token set with --metrics-token (CORRAL_METRICS_TOKEN).',
      tag: 'System',
      auth: false,
      adminOnly: true,
      errors: ['UNAUTHENTICATED'],
      response: {
        description: 'Metrics in the Prometheus text format.',
        schema: { type: 'string' },
        contentType: 'text/plain',
      },
    },
    {
      method: 'get',
      path: '/openapi.json',
      operationId: 'openApiDocument',
      summary: 'This OpenAPI document',
      tag: 'System',
      auth: false,
      response: { description: 'The OpenAPI 3.1 document.', schema: { type: 'object' } },
    },
  ];
}

/** Error responses for the given reasons, one per status, each naming the reasons it may carry. */
function errorResponses(reasons: ApiErrorReason[]): Record<string, Schema> {
  const byStatus = new Map<number, ApiErrorReason[]>();
  for (const reason of new Set(reasons)) {
    const { status } = API_ERROR_CATALOGUE[reason];
    byStatus.set(status, [...(byStatus.get(status) ?? []), reason]);
  }
  const entries = [...byStatus.entries()].sort(([a], [b]) => a - b);
  return Object.fromEntries(
    entries.map(([status, group]) => [
      String(status),
      {
        description: group.map((r) => `\`${r}\`: ${API_ERROR_CATALOGUE[r].description}`).join('\n\n'),
        ...(group.includes('RATE_LIMITED')
          ? { headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } } }
          : {}),
        content: {
          'application/json': {
            schema: {
              allOf: [
                ref('Error'),
                { type: 'object', properties: { code: { const: status }, reason: { enum: group } } },
              ],
            },
          },
        },
      },
    ]),
  );
}

function toOperationObject(op: Operation): Schema {
  const reasons: ApiErrorReason[] = [
    ...(op.body ? (['INVALID_JSON', 'BODY_TOO_LARGE'] as const) : []),
    ...(op.errors ?? []),
    ...(op.auth ? (['UNAUTHENTICATED', 'RATE_LIMITED', 'DATABASE_UNAVAILABLE'] as const) : []),
    'INTERNAL',
  ];
  const parameters = [
    ...(op.auth ? [{ $ref: '#/components/parameters/ActAsOwner' }] : []),
    ...(op.parameters ?? []),
  ];
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: [op.tag],
    ...(op.auth || op.adminOnly ? {} : { security: [] }),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: ref(op.body) } } } }
      : {}),
    responses: {
      [op.response.status ?? '200']: {
        description: op.response.description,
        ...(op.response.schema
          ? { content: { [op.response.contentType ?? 'application/json']: { schema: op.response.schema } } }
          : {}),
      },
      ...(op.sameBodyAlso
        ? {
            [op.sameBodyAlso.status]: {
              description: op.sameBodyAlso.description,
              content: { [op.response.contentType ?? 'application/json']: { schema: op.response.schema } },
            },
          }
        : {}),
      ...errorResponses(reasons),
    },
  };
}

export function paths(): Record<string, Record<string, Schema>> {
  const result: Record<string, Record<string, Schema>> = {};
  for (const op of operations()) {
    result[op.path] = { ...result[op.path], [op.method]: toOperationObject(op) };
  }
  return result;
}
