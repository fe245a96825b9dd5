import { z } from 'zod';
import type { EnvVar, VolumeMount } from '../domain/endpoint.js';
import type { SpecPatch } from '../domain/spec-patch.js';
import type { ValidationIssue } from '../domain/validate.js';

/*
 * Wire quirks accepted here and nowhere else: integers may arrive as numeric strings (clients echo
 * responses back), `workerConfig`/`policy`/`image`/`healthy` may be a one-element array of the object
 * (`healthy: []` restores the health defaults like `{}`; the other three cannot be cleared),
 * `null` means omitted, and unknown keys are ignored.
 */

const integer = z.preprocess(
  (v) => (typeof v === 'string' && /^\s*[+-]?\d{1,15}\s*$/.test(v) ? Number(v) : v),
  z.int({ error: 'must be an integer (a number or a numeric string)' }),
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

/** An object, or a one-element array holding it (older clients send the latter). */
const single = <T extends z.ZodType>(schema: T) => z.preprocess(unwrapSingle, schema);
/** An object every endpoint has (workerConfig, policy, image): `[]` would clear it, which it cannot be. */
const requiredSingle = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v, ctx) => {
    if (!Array.isArray(v) || v.length > 0) return v;
    ctx.addIssue({
      code: 'custom',
      message:
        'is required and cannot be cleared: send the object (or a one-element array holding it), or leave the key out to keep its current value',
    });
    return z.NEVER;
  }, single(schema));
/** An object with defaults (healthy): `[]` clears it to the defaults, as `{}` does, since a key sent as either clears it. */
const clearableSingle = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (Array.isArray(v) && v.length === 0 ? {} : v), single(schema));
const object = <S extends z.ZodRawShape>(shape: S) =>
  z.object(shape, { error: 'must be an object (or a one-element array holding one)' });
const list = <T extends z.ZodType>(item: T) => z.array(item, { error: 'must be an array' });

const workerConfig = requiredSingle(
  object({
    minNum: optional(integer),
    maxNum: optional(integer),
    freeTimeout: optional(integer),
    maxConcurrent: optional(integer),
    gpuNum: optional(integer),
    cudaVersion: optional(text),
    requestTimeout: optional(integer),
  }),
);
const policy = requiredSingle(
  object({
    type: optional(z.enum(['queue', 'concurrency'], { error: 'must be "queue" or "concurrency"' })),
    value: optional(integer),
  }),
);
const image = requiredSingle(
  object({ image: optional(text), authId: optional(text), command: optional(text) }),
);
const port = z.union([object({ port: integer }), integer], { error: 'must be {"port": <1-65535>}' });
const product = z.union([object({ id: text }), text], { error: 'must be {"id": "<product id>"}' });
const volumeMount = object({
  type: z.enum(['local', 'network'], { error: 'must be "local" or "network"' }),
  size: optional(integer),
  id: optional(text),
  mountPath: text,
});
const env = object({ key: text, value: optional(text) });
const healthy = clearableSingle(
  object({
    path: optional(text),
    initialDelay: optional(integer),
    period: optional(integer),
    timeout: optional(integer),
    successThreshold: optional(integer),
    failureThreshold: optional(integer),
  }),
);

const endpointFields = {
  name: optional(text),
  appName: optional(text),
  workerConfig: optional(workerConfig),
  ports: optional(list(port)),
  policy: optional(policy),
  image: optional(image),
  products: optional(list(product)),
  rootfsSize: optional(integer),
  volumeMounts: optional(list(volumeMount)),
  clusterID: optional(text),
  envs: optional(list(env)),
  healthy: optional(healthy),
};
const endpointInput = z.object(endpointFields, { error: 'must be an object' });
type EndpointInput = z.output<typeof endpointInput>;

export interface InputDefaults {
  /** Size of a local volume that does not say its size. */
  localVolumeSizeGB: number;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

/** Parses `body.endpoint` of a create request. */
export function parseCreateBody(body: unknown, defaults: InputDefaults): ParseResult<SpecPatch> {
  if (!isRecord(body) || !isRecord(body.endpoint)) {
    return fail('endpoint', 'the body must be {"endpoint": {...}}');
  }
  const parsed = parseFields(body.endpoint, defaults);
  if (!parsed.ok) return parsed;
  const missing: ValidationIssue[] = [];
  if (parsed.value.image?.ref === undefined) {
    missing.push({ field: 'image.image', reason: 'INVALID_FIELD', message: 'image.image is required' });
  }
  if (parsed.value.port === undefined) {
    missing.push({
      field: 'ports',
      reason: 'INVALID_FIELD',
      message: 'ports is required (exactly one port)',
    });
  }
  return missing.length > 0 ? { ok: false, issues: missing } : parsed;
}

/** Parses a flat update body: `id` plus any endpoint fields; omitted fields keep their value. */
export function parseUpdateBody(
  body: unknown,
  defaults: InputDefaults,
): ParseResult<{ id: string; patch: SpecPatch }> {
  if (!isRecord(body)) return fail('', 'the body must be a JSON object');
  const fields = updateFields(body);
  const id = readId(body, ['id']) ?? readId(fields, ['id']);
  if (id === undefined) return fail('id', 'id is required');
  const parsed = parseFields(fields, defaults);
  return parsed.ok ? { ok: true, value: { id, patch: parsed.value } } : parsed;
}

/**
 * The fields of an update. Some clients send update wrapped like create (`{"id", "endpoint": {...}}`); since
 * unknown keys are ignored, that body would otherwise succeed and change nothing. The wrapper is read only
 * when no endpoint field stands at the top level, so a flat body that echoes an `endpoint` key is unaffected.
 */
function updateFields(body: Record<string, unknown>): Record<string, unknown> {
  const wrapped = body.endpoint;
  if (!isRecord(wrapped)) return body;
  const flat = Object.keys(endpointFields).some((key) => Object.hasOwn(body, key));
  return flat ? body : wrapped;
}

/** Reads the first present id-like key as a non-empty string. */
export function readId(source: unknown, keys: readonly string[]): string | undefined {
  if (!isRecord(source)) return undefined;
  for (const key of keys) {
    const value = source[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  }
  return undefined;
}

function parseFields(raw: unknown, defaults: InputDefaults): ParseResult<SpecPatch> {
  const result = endpointInput.safeParse(raw);
  if (!result.success) {
    return {
      ok: false,
      issues: result.error.issues.map((issue) => ({
        field: issue.path.join('.'),
        reason: 'INVALID_FIELD',
        message: `${issue.path.join('.') || 'body'} ${issue.message}`,
      })),
    };
  }
  const input = result.data;
  if (input.ports !== undefined && input.ports.length !== 1) {
    return fail('ports', `exactly one port is supported, got ${input.ports.length}`);
  }
  const volumes = toVolumes(input.volumeMounts, defaults);
  if (!volumes.ok) return volumes;
  return { ok: true, value: toPatch(input, volumes.value) };
}

function toPatch(input: EndpointInput, volumes: VolumeMount[] | undefined): SpecPatch {
  const w = input.workerConfig;
  const h = input.healthy;
  const firstPort = input.ports?.[0];
  return {
    name: input.name,
    appName: input.appName,
    workers: w && {
      minWorkers: w.minNum,
      maxWorkers: w.maxNum,
      idleTimeoutSeconds: w.freeTimeout,
      maxConcurrent: w.maxConcurrent,
      gpusPerWorker: w.gpuNum,
      cudaVersion: w.cudaVersion,
      requestTimeoutSeconds: w.requestTimeout,
    },
    port: firstPort === undefined ? undefined : typeof firstPort === 'number' ? firstPort : firstPort.port,
    scaling: input.policy,
    image: input.image && {
      ref: input.image.image,
      authId: input.image.authId,
      command: input.image.command,
    },
    productIds: input.products?.map((p) => (typeof p === 'string' ? p : p.id)),
    rootfsSizeGB: input.rootfsSize,
    volumes,
    clusterId: input.clusterID,
    env: input.envs?.map((e): EnvVar => ({ key: e.key, value: e.value ?? '' })),
    health:
      h === undefined
        ? undefined
        : Object.values(h).every((v) => v === undefined)
          ? 'reset'
          : {
              path: h.path,
              initialDelaySeconds: h.initialDelay,
              periodSeconds: h.period,
              timeoutSeconds: h.timeout,
              successThreshold: h.successThreshold,
              failureThreshold: h.failureThreshold,
            },
  };
}

function toVolumes(
  mounts: EndpointInput['volumeMounts'],
  defaults: InputDefaults,
): ParseResult<VolumeMount[] | undefined> {
  if (mounts === undefined) return { ok: true, value: undefined };
  const volumes: VolumeMount[] = [];
  for (const [index, mount] of mounts.entries()) {
    if (mount.type === 'local') {
      volumes.push({
        type: 'local',
        sizeGB: mount.size ?? defaults.localVolumeSizeGB,
        mountPath: mount.mountPath,
      });
    } else if (mount.id === undefined || mount.id === '') {
      return fail(`volumeMounts.${index}.id`, 'a network volume needs the id of a network storage');
    } else {
      volumes.push({ type: 'network', storageId: mount.id, mountPath: mount.mountPath });
    }
  }
  return { ok: true, value: volumes };
}

function fail(field: string, message: string): { ok: false; issues: ValidationIssue[] } {
  return { ok: false, issues: [{ field, reason: 'INVALID_FIELD', message }] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
