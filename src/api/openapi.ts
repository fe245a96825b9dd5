import { WIRE_LIMIT_FIELDS } from '../contract/limits.js';
import { API_PREFIX } from '../contract/paths.js';
import { MAX_PAGE_SIZE } from '../contract/query.js';
import { DEFAULT_HEALTH, DEFAULT_HEALTH_PATH } from '../domain/endpoint.js';
import { DEFAULT_SCALING, DEFAULT_WORKERS } from '../domain/spec-patch.js';
import {
  MAX_APP_NAME_LENGTH,
  MAX_CLUSTER_ID_LENGTH,
  MAX_NAME_LENGTH,
  RESERVED_PORTS,
} from '../domain/validate.js';
import { WORKER_STATES } from '../domain/worker.js';
import { ENDPOINT_EVENT_TYPES } from '../store/events.js';
import { ERROR_CATALOGUE, type ErrorReason } from './errors.js';

/**
 * The OpenAPI 3.1 document of the whole API, served at GET /openapi.json. It is built from the same
 * constants the code uses (error catalogue, limit fields, defaults), and src/api/openapi.test.ts checks it
 * against the routes the app actually serves.
 */

type Schema = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------------------
// Schema helpers

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const withDescription = (schema: Schema, description?: string): Schema =>
  description === undefined ? schema : { ...schema, description };

const str = (description?: string, extra: Schema = {}): Schema =>
  withDescription({ type: 'string', ...extra }, description);

const int = (description?: string, extra: Schema = {}): Schema =>
  withDescription({ type: 'integer', ...extra }, description);

const bool = (description?: string): Schema => withDescription({ type: 'boolean' }, description);

const arrayOf = (items: Schema, description?: string, extra: Schema = {}): Schema =>
  withDescription({ type: 'array', items, ...extra }, description);

/** An object schema; every property is required unless `optional` names it. */
const object = (
  properties: Record<string, Schema>,
  options: { optional?: string[]; required?: string[]; description?: string } = {},
): Schema => {
  const required =
    options.required ?? Object.keys(properties).filter((key) => !options.optional?.includes(key));
  return withDescription(
    { type: 'object', properties, ...(required.length > 0 ? { required } : {}) },
    options.description,
  );
};

/**
 * Request shapes may be the object itself or a one-element array holding it (older clients); a clearable one
 * (healthy) may also be [] (its defaults), the others may not.
 */
const objectOrSingleton = (name: string, description: string, clearable = false): Schema => ({
  description: clearable
    ? `${description} The object, or a one-element array holding it; {} or [] restores the defaults.`
    : `${description} The object, or a one-element array holding it; required, so it cannot be cleared with [].`,
  oneOf: [ref(name), { type: 'array', items: ref(name), minItems: clearable ? 0 : 1, maxItems: 1 }],
});

/** An integer field of a request: a JSON integer or a numeric string (clients echo responses back). */
const intInput = (description: string, defaultValue?: number): Schema => ({
  ...ref('IntegerInput'),
  description,
  ...(defaultValue === undefined ? {} : { default: defaultValue }),
});

const fromLimits = (what: string) => `${what}; the allowed range is in GET endpoint/limit.`;

const CLAMPED_DEFAULTS =
  "On create, an omitted field takes the default shown, moved to the nearest bound of the server's range when that range leaves it out.";

// ---------------------------------------------------------------------------------------------------------
// Response schemas

const ENDPOINT_STATES = ['deploying', 'serving', 'updating', 'stopped', 'failed', 'deleting'];
const WORKER_ERRORS = [
  'IMAGE_PULL_FAILED',
  'CRASH_LOOP',
  'HEALTH_TIMEOUT',
  'INSUFFICIENT_GPU',
  'RUNTIME_ERROR',
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
    },
    { optional: ['clusterID'], description },
  );
}

/** A latency-like figure in milliseconds: percentiles from the histogram buckets, the exact mean. */
const distribution = (what: string): Schema => ({
  type: ['object', 'null'],
  description: `${what}, in ms; each null before the first request. Null without a gateway in this process.`,
  properties: {
    p50: { type: ['number', 'null'], description: 'Median, estimated from the histogram buckets.' },
    p99: { type: ['number', 'null'], description: '99th percentile, estimated from the histogram buckets.' },
    mean: { type: ['number', 'null'], description: 'Mean.' },
  },
  required: ['p50', 'p99', 'mean'],
});

const nullableCount = (description: string): Schema => ({
  type: ['integer', 'null'],
  description: `${description} Null without a gateway in this process.`,
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
      queueDepth: nullableCount('Requests waiting for a slot now.'),
      inFlight: nullableCount('Requests at workers now.'),
      coldStarts: {
        type: ['object', 'null'],
        description: 'Wakes from zero (one per wake). Null without a gateway in this process.',
        properties: {
          count: int(),
          meanMs: {
            type: ['number', 'null'],
            description: 'Mean time from the first waiting request to the first routable worker.',
          },
        },
        required: ['count', 'meanMs'],
      },
    },
    {
      description:
        "One endpoint's metrics. Traffic figures are this process's gateway's since it started; see docs/gateway.md.",
    },
  );
}

function responseSchemas(): Record<string, Schema> {
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
    }),
    WorkerConfig: object({
      minNum: int(),
      maxNum: int(),
      freeTimeout: str('Idle seconds before a worker is removed, as a string.', { pattern: '^\\d+$' }),
      maxConcurrent: str('Concurrent requests per worker, as a string.', { pattern: '^\\d+$' }),
      gpuNum: int('GPUs per worker.'),
      cudaVersion: str('A version of cudaVersionList, or "any".'),
      requestTimeout: int("Seconds the gateway waits for a worker's response."),
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
    EndpointMetrics: endpointMetricsSchema(),
    EventPage: object({
      events: arrayOf(ref('Event'), 'Oldest first.'),
      next: int('The id to pass as `after` for the next page (the last id, or `after` if none).'),
    }),
    Health: object({ status: str(undefined, { const: 'ok' }) }),
    Error: object(
      {
        code: int('The HTTP status code.'),
        reason: str('Stable reason; clients match on it.', { enum: Object.keys(ERROR_CATALOGUE) }),
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

// ---------------------------------------------------------------------------------------------------------
// Request schemas

function requestSchemas(): Record<string, Schema> {
  return {
    IntegerInput: {
      description: 'An integer, or a string holding one.',
      oneOf: [{ type: 'integer' }, { type: 'string', pattern: '^\\s*[+-]?\\d{1,15}\\s*$' }],
    },
    WorkerConfigInput: object(
      {
        minNum: intInput(fromLimits('Fewest workers (0 scales to zero)'), DEFAULT_WORKERS.minWorkers),
        maxNum: intInput(fromLimits('Most workers; not below minNum'), DEFAULT_WORKERS.maxWorkers),
        freeTimeout: intInput(
          fromLimits('Idle seconds before a worker is removed'),
          DEFAULT_WORKERS.idleTimeoutSeconds,
        ),
        maxConcurrent: intInput(fromLimits('Concurrent requests per worker'), DEFAULT_WORKERS.maxConcurrent),
        gpuNum: intInput(fromLimits('GPUs per worker'), DEFAULT_WORKERS.gpusPerWorker),
        cudaVersion: str('A version of cudaVersionList, or "any".', { default: DEFAULT_WORKERS.cudaVersion }),
        requestTimeout: intInput(
          fromLimits('Per-request deadline in seconds'),
          DEFAULT_WORKERS.requestTimeoutSeconds,
        ),
      },
      { required: [], description: CLAMPED_DEFAULTS },
    ),
    PolicyInput: object(
      {
        type: str(undefined, { enum: ['queue', 'concurrency'], default: DEFAULT_SCALING.type }),
        value: intInput(
          fromLimits('Seconds of queue wait (queue) or queued requests (concurrency) before scaling up'),
          DEFAULT_SCALING.value,
        ),
      },
      { required: [], description: CLAMPED_DEFAULTS },
    ),
    ImageInput: object(
      {
        image: str('Image reference, no whitespace. Required on create.'),
        authId: str('Id of saved registry credentials, or empty for a public image.', { default: '' }),
        command: str('Command to run, or empty for the image default.', { default: '' }),
      },
      { required: [] },
    ),
    PortInput: {
      description: `{"port": N} (or N itself), 1-65535 except ${RESERVED_PORTS.join(', ')}.`,
      oneOf: [object({ port: ref('IntegerInput') }), ref('IntegerInput')],
    },
    ProductInput: {
      description: 'A product id of GET products: {"id": "..."} or the id itself.',
      oneOf: [object({ id: str() }), str()],
    },
    VolumeMountInput: object(
      {
        type: str('local: a per-worker scratch volume; network: a configured shared storage.', {
          enum: ['local', 'network'],
        }),
        size: intInput(fromLimits('local only: GB (default freeLocalVolumeSize)')),
        id: str('network only (required): the network storage id.'),
        mountPath: str('Absolute path, used once per endpoint.'),
      },
      { required: ['type', 'mountPath'] },
    ),
    EnvInput: object(
      {
        key: str(
          'A-Z, a-z, 0-9 and _, not starting with a digit; unique; not CORRAL_ENDPOINT_ID or CORRAL_WORKER_ID.',
          {
            pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
          },
        ),
        value: str(undefined, { default: '' }),
      },
      { required: ['key'] },
    ),
    HealthyInput: object(
      {
        path: str('Starts with /.', { default: DEFAULT_HEALTH_PATH }),
        initialDelay: intInput('Seconds, 0-3600.', DEFAULT_HEALTH.initialDelaySeconds),
        period: intInput('Seconds, 1-300.', DEFAULT_HEALTH.periodSeconds),
        timeout: intInput('Seconds, 1-300.', DEFAULT_HEALTH.timeoutSeconds),
        successThreshold: intInput('1-100.', DEFAULT_HEALTH.successThreshold),
        failureThreshold: intInput('1-100.', DEFAULT_HEALTH.failureThreshold),
      },
      { required: [], description: 'On update, {} restores every default.' },
    ),
    EndpointInput: object(endpointInputProperties(), {
      required: ['image', 'ports'],
      description:
        'Endpoint fields. Unknown keys are ignored and null means omitted; image.image and ports are required on create.',
    }),
    CreateEndpointRequest: object({ endpoint: ref('EndpointInput') }),
    UpdateEndpointRequest: object(
      { id: str('The endpoint to update.'), ...endpointInputProperties() },
      {
        required: ['id'],
        description:
          'Partial update: omitted (or null) keys keep their value; [] clears a list and healthy: {} (or []) restores the health defaults. Objects merge one level deep; workerConfig, policy and image cannot be cleared.',
      },
    ),
    EndpointIdRequest: {
      ...object(
        {
          id: str('The endpoint id.'),
          name: str('The endpoint id, under the key some clients use.'),
          endpoint_id: str('The endpoint id, under the key some clients use.'),
        },
        { required: [] },
      ),
      anyOf: [{ required: ['id'] }, { required: ['name'] }, { required: ['endpoint_id'] }],
    },
    SaveCredentialsRequest: object({
      name: str('A label, 1-4096 characters.', { minLength: 1, maxLength: 4096 }),
      username: str(undefined, { minLength: 1, maxLength: 4096 }),
      password: str('Stored encrypted; never returned.', { minLength: 1, maxLength: 4096 }),
    }),
    IdRequest: object({ id: str() }),
  };
}

function endpointInputProperties(): Record<string, Schema> {
  return {
    name: str(`At most ${MAX_NAME_LENGTH} characters.`, { maxLength: MAX_NAME_LENGTH, default: '' }),
    appName: str(
      `Lowercase DNS label (a-z, 0-9, -), at most ${MAX_APP_NAME_LENGTH} characters, unique on the server. Default: the endpoint id.`,
      { pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$', maxLength: MAX_APP_NAME_LENGTH },
    ),
    workerConfig: objectOrSingleton('WorkerConfigInput', 'Worker settings.'),
    ports: arrayOf(ref('PortInput'), 'Exactly one HTTP port.', { minItems: 1, maxItems: 1 }),
    policy: objectOrSingleton('PolicyInput', 'Scaling policy.'),
    image: objectOrSingleton('ImageInput', 'Container image.'),
    products: arrayOf(ref('ProductInput'), 'Products workers may be placed on; empty means any.'),
    rootfsSize: intInput(fromLimits('System disk in GB (default freeRootfsSize)')),
    volumeMounts: arrayOf(ref('VolumeMountInput')),
    clusterID: str(
      `Must equal the cluster of any network volume; at most ${MAX_CLUSTER_ID_LENGTH} characters.`,
      { maxLength: MAX_CLUSTER_ID_LENGTH },
    ),
    envs: arrayOf(ref('EnvInput')),
    healthy: objectOrSingleton('HealthyInput', 'Health check.', true),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Operations

interface Operation {
  method: 'get' | 'post';
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** False for the unauthenticated system routes. */
  auth: boolean;
  parameters?: Schema[];
  /** Component schema name of the JSON body. */
  body?: string;
  response: { description: string; schema: Schema; contentType?: string };
  /** Reasons specific to this operation (auth, rate limit and internal errors are added for all). */
  errors?: ErrorReason[];
}

const VALIDATION: ErrorReason[] = [
  'INVALID_FIELD',
  'OUT_OF_RANGE',
  'MIN_ABOVE_MAX',
  'RESERVED_PORT',
  'UNKNOWN_PRODUCT',
  'UNKNOWN_CREDENTIALS',
  'UNKNOWN_STORAGE',
  'CLUSTER_MISMATCH',
];

const queryParameter = (name: string, description: string, schema: Schema, required = false): Schema => ({
  name,
  in: 'query',
  required,
  description,
  schema,
});

const endpointIdParameters = [
  queryParameter('id', 'The endpoint id (required unless endpoint_id is given).', str()),
  queryParameter('endpoint_id', 'Alias of id.', str()),
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
      errors: [...VALIDATION, 'APP_NAME_TAKEN'],
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
      errors: [...VALIDATION, 'ENDPOINT_NOT_FOUND', 'APP_NAME_TAKEN', 'CONCURRENT_UPDATE'],
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
      path: v1('/endpoint/worker/log'),
      operationId: 'getWorkerLog',
      summary: "Stream a worker's log",
      description: 'The URL in workers[].log. Plain text, one line per log line; follow=1 keeps streaming.',
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
      errors: ['INVALID_FIELD'],
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
      method: 'get',
      path: '/healthz',
      operationId: 'health',
      summary: 'Liveness',
      tag: 'System',
      auth: false,
      response: json('Health', 'The server is up.'),
    },
    {
      method: 'get',
      path: '/metrics',
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      tag: 'System',
      auth: false,
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
function errorResponses(reasons: ErrorReason[]): Record<string, Schema> {
  const byStatus = new Map<number, ErrorReason[]>();
  for (const reason of new Set(reasons)) {
    const { status } = ERROR_CATALOGUE[reason];
    byStatus.set(status, [...(byStatus.get(status) ?? []), reason]);
  }
  const entries = [...byStatus.entries()].sort(([a], [b]) => a - b);
  return Object.fromEntries(
    entries.map(([status, group]) => [
      String(status),
      {
        description: group.map((r) => `\`${r}\`: ${ERROR_CATALOGUE[r].description}`).join('\n\n'),
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
  const reasons: ErrorReason[] = [
    ...(op.body ? (['INVALID_JSON', 'BODY_TOO_LARGE'] as const) : []),
    ...(op.errors ?? []),
    ...(op.auth ? (['UNAUTHENTICATED', 'RATE_LIMITED'] as const) : []),
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
    ...(op.auth ? {} : { security: [] }),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: ref(op.body) } } } }
      : {}),
    responses: {
      '200': {
        description: op.response.description,
        content: { [op.response.contentType ?? 'application/json']: { schema: op.response.schema } },
      },
      ...errorResponses(reasons),
    },
  };
}

function paths(): Record<string, Record<string, Schema>> {
  const result: Record<string, Record<string, Schema>> = {};
  for (const op of operations()) {
    result[op.path] = { ...result[op.path], [op.method]: toOperationObject(op) };
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------
// The document

export function openApiDocument(options: { serverUrl: string }): object {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Corral API',
      version: 'v1',
      description:
        'Serverless GPU endpoints, wire-compatible with /gpu-instance/openapi/v1. Requests accept integers as numeric strings and workerConfig/policy/image/healthy as a one-element array; unknown keys are ignored. See docs/api.md.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: options.serverUrl }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Endpoints' },
      { name: 'Catalog', description: 'Limits and GPU products.' },
      { name: 'Registry credentials', description: 'Credentials for private images.' },
      { name: 'System', description: 'Unauthenticated.' },
    ],
    paths: paths(),
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Authorization: Bearer <API key>. The first key is printed when the server first starts.',
        },
      },
      parameters: {
        ActAsOwner: {
          name: 'X-Corral-Owner',
          in: 'header',
          required: false,
          description: 'With an admin key: act for this owner.',
          schema: { type: 'string' },
        },
      },
      schemas: { ...responseSchemas(), ...requestSchemas() },
    },
  };
}
