/**
 * The zod schemas of an endpoint's fields as a create or update body carries them: they parse requests
 * (endpoint-input.ts) and, with the descriptions registered beside them, are the request schemas of the OpenAPI
 * document (json-schema.ts). Wire quirks accepted here and nowhere else: integers may arrive as numeric strings
 * (clients echo responses back), `workerConfig`/`policy`/`image`/`healthy` may be a one-element array of the
 * object (`healthy: []` restores the health defaults like `{}`; the other three cannot be cleared), `ports` may be
 * its one object alone, `null` means omitted, and unknown keys are ignored.
 */
import { z } from 'zod';
import { DEFAULT_HEALTH, DEFAULT_HEALTH_PATH, IMAGE_PULL_POLICIES } from '../domain/endpoint.js';
import { DEFAULT_MODEL_REVISION, MODEL_LIMITS } from '../domain/model-refs.js';
import { MAX_OPENAI_MODEL_LENGTH } from '../domain/openai-model.js';
import { DEFAULT_SCALING, DEFAULT_WORKERS } from '../domain/spec-patch.js';
import {
  APP_NAME,
  ENV_KEY,
  MAX_APP_NAME_LENGTH,
  MAX_CLUSTER_ID_LENGTH,
  MAX_NAME_LENGTH,
  RESERVED_PORTS,
} from '../domain/validate.js';
import { documented, type JsonSchema, type WireMeta, widened } from './json-schema.js';

const INTEGER_TEXT = /^\s*[+-]?\d{1,15}\s*$/;

const integer = documented(
  widened(
    z.preprocess(
      (v) => (typeof v === 'string' && INTEGER_TEXT.test(v) ? Number(v) : v),
      z.int({ error: 'must be an integer (a number or a numeric string)' }),
    ),
    (json) => ({ anyOf: [json, { type: 'string', pattern: INTEGER_TEXT.source }] }),
  ),
  { id: 'IntegerInput', description: 'An integer, or a string holding one.' },
);
const text = z.preprocess(
  (v) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : v),
  z.string({ error: 'must be a string' }),
);
const optional = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);

/** The object a one-element array holds (older clients send `[{...}]` for an object); anything else as it is. */
export function unwrapSingle(value: unknown): unknown {
  return Array.isArray(value) && value.length === 1 ? value[0] : value;
}

/** The object itself, or an array of at most one holding it (at least `minItems`). */
const objectOrArray =
  (minItems: number) =>
  (json: JsonSchema): JsonSchema => ({
    oneOf: [json, { type: 'array', items: json, minItems, maxItems: 1 }],
  });

/** An object, or a one-element array holding it (older clients send the latter). */
const single = <T extends z.ZodType>(schema: T) => z.preprocess(unwrapSingle, schema);
/** An object every endpoint has (workerConfig, policy, image): `[]` would clear it, which it cannot be. */
const requiredSingle = <T extends z.ZodType>(schema: T) =>
  widened(
    z.preprocess((v, ctx) => {
      if (!Array.isArray(v) || v.length > 0) return v;
      ctx.addIssue({
        code: 'custom',
        message:
          'is required and cannot be cleared: send the object (or a one-element array holding it), or leave the key out to keep its current value',
      });
      return z.NEVER;
    }, single(schema)),
    objectOrArray(1),
  );
/** An object with defaults (healthy): `[]` clears it to the defaults, as `{}` does, since a key sent as either clears it. */
const clearableSingle = <T extends z.ZodType>(schema: T) =>
  widened(
    z.preprocess((v) => (Array.isArray(v) && v.length === 0 ? {} : v), single(schema)),
    objectOrArray(0),
  );
const object = <S extends z.ZodRawShape>(shape: S) =>
  z.object(shape, { error: 'must be an object (or a one-element array holding one)' });
const list = <T extends z.ZodType>(item: T) => z.array(item, { error: 'must be an array' });
/** An array, or one item object on its own (read as a one-element array: some clients send `ports: {"port": N}`). */
const listOrLoneObject = <T extends z.ZodType>(item: T) =>
  widened(
    z.preprocess((v) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? [v] : v), list(item)),
    (json) => ({ oneOf: [json, (json as { items: JsonSchema }).items] }),
  );

/** An optional field of a request and what the document says of it. */
const field = <T extends z.ZodType>(
  schema: T,
  description?: string,
  defaultValue?: unknown,
  checks: Pick<WireMeta, 'pattern' | 'maxLength'> = {},
) =>
  documented(optional(schema), {
    ...(description === undefined ? {} : { description }),
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
    ...checks,
  });
const fromLimits = (what: string) => `${what}; the allowed range is in GET endpoint/limit.`;
const CLAMPED_DEFAULTS =
  "On create, an omitted field takes the default shown, moved to the nearest bound of the server's range when that range leaves it out.";

const workerConfig = documented(
  object({
    minNum: field(integer, fromLimits('Fewest workers (0 scales to zero)'), DEFAULT_WORKERS.minWorkers),
    maxNum: field(integer, fromLimits('Most workers; not below minNum'), DEFAULT_WORKERS.maxWorkers),
    freeTimeout: field(
      integer,
      fromLimits('Idle seconds before a worker is removed'),
      DEFAULT_WORKERS.idleTimeoutSeconds,
    ),
    maxConcurrent: field(
      integer,
      fromLimits('Concurrent requests per worker'),
      DEFAULT_WORKERS.maxConcurrent,
    ),
    gpuNum: field(integer, fromLimits('GPUs per worker'), DEFAULT_WORKERS.gpusPerWorker),
    cudaVersion: field(
      text,
      'A version of cudaVersionList, or "any"; "" means not set (the default on create, unchanged on update).',
      DEFAULT_WORKERS.cudaVersion,
    ),
    requestTimeout: field(
      integer,
      fromLimits('Per-request deadline in seconds'),
      DEFAULT_WORKERS.requestTimeoutSeconds,
    ),
    keepFrozen: field(
      integer,
      'Corral extension: seconds an idle worker stays frozen (processes stopped, GPUs held; woken in milliseconds) before it is suspended or stopped; 0 (default) stops it at freeTimeout. 0 to 604800.',
      DEFAULT_WORKERS.keepFrozenSeconds,
    ),
    keepSuspended: field(
      integer,
      'Corral extension: seconds a worker stays suspended (GPU state in host memory, no GPU held) before it is stopped, where GPU checkpoints are supported; 0 (default): never suspended. 0 to 604800.',
      DEFAULT_WORKERS.keepSuspendedSeconds,
    ),
  }),
  { id: 'WorkerConfigInput', description: CLAMPED_DEFAULTS },
);
const policy = documented(
  object({
    type: field(
      z.enum(['queue', 'concurrency'], { error: 'must be "queue" or "concurrency"' }),
      undefined,
      DEFAULT_SCALING.type,
    ),
    value: field(
      integer,
      fromLimits('Seconds of queue wait (queue) or queued requests (concurrency) before scaling up'),
      DEFAULT_SCALING.value,
    ),
  }),
  { id: 'PolicyInput', description: CLAMPED_DEFAULTS },
);
const image = documented(
  object({
    image: field(text, 'Image reference, no whitespace. Required on create.'),
    authId: field(text, 'Id of saved registry credentials, or empty for a public image.', ''),
    command: field(text, 'Command to run, or empty for the image default.', ''),
    pullPolicy: field(
      z.enum(['', ...IMAGE_PULL_POLICIES], {
        error: 'must be "Always", "IfNotPresent", "Never" or "" (the installation\'s)',
      }),
      "Kubernetes runtime only: when the node pulls the image. Empty: the installation's (IfNotPresent, Always for :latest or no tag).",
    ),
  }),
  { id: 'ImageInput' },
);
const port = documented(
  z.union([object({ port: integer }), integer], { error: 'must be {"port": <1-65535>}' }),
  { id: 'PortInput', description: `{"port": N} (or N itself), 1-65535 except ${RESERVED_PORTS.join(', ')}.` },
);
const product = documented(
  z.union([object({ id: text }), text], { error: 'must be {"id": "<product id>"}' }),
  { id: 'ProductInput', description: 'A product id of GET products: {"id": "..."} or the id itself.' },
);
const volumeMount = documented(
  object({
    type: documented(z.enum(['local', 'network'], { error: 'must be "local" or "network"' }), {
      description: 'local: a per-worker scratch volume; network: a configured shared storage.',
    }),
    size: field(integer, fromLimits('local only: GB (default freeLocalVolumeSize)')),
    id: field(text, 'network only (required): the network storage id.'),
    mountPath: documented(text.clone(), { description: 'Absolute path, used once per endpoint.' }),
  }),
  { id: 'VolumeMountInput' },
);
const env = documented(
  object({
    key: documented(text.clone(), {
      description:
        'A-Z, a-z, 0-9 and _, not starting with a digit; unique; not CORRAL_ENDPOINT_ID or CORRAL_WORKER_ID.',
      pattern: ENV_KEY.source,
    }),
    value: field(text, undefined, ''),
  }),
  { id: 'EnvInput' },
);
const healthy = documented(
  object({
    path: field(
      text,
      'Starts with /. A queue endpoint has none by default (its workers are ready by their polls); set, its workers get this HTTP probe too.',
      DEFAULT_HEALTH_PATH,
    ),
    initialDelay: field(integer, 'Seconds, 0-3600.', DEFAULT_HEALTH.initialDelaySeconds),
    period: field(integer, 'Seconds, 1-300.', DEFAULT_HEALTH.periodSeconds),
    timeout: field(integer, 'Seconds, 1-300.', DEFAULT_HEALTH.timeoutSeconds),
    successThreshold: field(integer, '1-100.', DEFAULT_HEALTH.successThreshold),
    failureThreshold: field(integer, '1-100.', DEFAULT_HEALTH.failureThreshold),
  }),
  { id: 'HealthyInput', description: 'On update, {} restores every default.' },
);

/** One model an endpoint names; also the body of `POST models` (contract/endpoint-input.ts's parseModelBody). */
export const modelInput = documented(
  object({
    name: documented(text.clone(), {
      description: `A hub repository, org/name (at most ${MODEL_LIMITS.nameLength} characters, no . or .. segments, no "--").`,
    }),
    revision: field(
      text,
      'A branch, tag, commit or refs/pr/N (slashes allowed, no . or .. segments).',
      DEFAULT_MODEL_REVISION,
    ),
    allowPatterns: field(
      list(text),
      `Only files matching one of these globs (as snapshot_download's allow_patterns), at most ${MODEL_LIMITS.allowPatterns}; empty: every file.`,
      [],
    ),
    tokenSecret: field(
      text,
      'The name of your secret holding a hub token, for gated and private repositories; null or absent: none.',
    ),
  }),
  { id: 'ModelInput' },
);

const required = (what: string) =>
  `${what} The object, or a one-element array holding it; required, so it cannot be cleared with [].`;

export const endpointFields = {
  name: field(text, `At most ${MAX_NAME_LENGTH} characters.`, '', { maxLength: MAX_NAME_LENGTH }),
  appName: field(
    text,
    `Lowercase DNS label (a-z, 0-9, -), at most ${MAX_APP_NAME_LENGTH} characters, unique on the server. Default: the endpoint id.`,
    undefined,
    { pattern: APP_NAME.source, maxLength: MAX_APP_NAME_LENGTH },
  ),
  workerConfig: field(requiredSingle(workerConfig), required('Worker settings.')),
  ports: field(
    listOrLoneObject(port),
    'Exactly one HTTP port; a lone {"port": N} object is read as [{"port": N}].',
  ),
  policy: field(requiredSingle(policy), required('Scaling policy.')),
  image: field(requiredSingle(image), required('Container image.')),
  products: field(list(product), 'Products workers may be placed on; empty means any.'),
  rootfsSize: field(integer, fromLimits('System disk in GB (default freeRootfsSize)')),
  volumeMounts: field(list(volumeMount)),
  clusterID: field(
    text,
    `Must equal the cluster of any network volume; at most ${MAX_CLUSTER_ID_LENGTH} characters.`,
    undefined,
    { maxLength: MAX_CLUSTER_ID_LENGTH },
  ),
  envs: field(list(env)),
  healthy: field(
    clearableSingle(healthy),
    'Health check. The object, or a one-element array holding it; {} or [] restores the defaults.',
  ),
  public: field(
    z.boolean({ error: 'must be true or false' }),
    "Corral extension: true lets anyone call the endpoint's URL without a key (the gateway otherwise needs one of the owner's keys or an invoke key).",
    false,
  ),
  type: field(
    z.enum(['http', 'queue'], { error: 'must be "http" or "queue"' }),
    'Corral extension: "http" serves a load-balanced URL (jobs are delivered to it as POST {jobsPath}); "queue" runs RunPod handler images, whose workers pull jobs over the RunPod worker protocol (ports is then optional).',
    'http',
  ),
  jobsPath: field(
    text,
    'Corral extension: where a job of an "http" endpoint is delivered (POST with the input as the JSON body); starts with /.',
    '/run',
  ),
  models: field(
    list(modelInput),
    `Corral extension: hub repositories the workers load (at most ${MODEL_LIMITS.models}), on the worker's machine before a GPU is held and mounted read-only at /runpod-volume/huggingface-cache/hub, with HF_HUB_CACHE and HF_HUB_OFFLINE=1 set (docs/models.md). On update, the list replaces the current one; [] removes every model.`,
  ),
  openaiModel: field(
    text,
    `Corral extension: the model name OpenAI clients send as "model" for this endpoint: the gateway's model router (/openai/v1/... without an endpoint in the path) picks the caller's endpoint by it (docs/openai.md#model-router). Unique among the owner's endpoints; at most ${MAX_OPENAI_MODEL_LENGTH} characters, a letter or digit first, then letters, digits and . _ - : / @ +. "" removes it.`,
    undefined,
    { maxLength: MAX_OPENAI_MODEL_LENGTH },
  ),
};

export const endpointInput = documented(z.object(endpointFields, { error: 'must be an object' }), {
  id: 'EndpointInput',
  description:
    'Endpoint fields. Unknown keys are ignored and null means omitted; image.image and ports are required on create.',
});
export type EndpointInput = z.output<typeof endpointInput>;
