/**
 * Parses create and update bodies into the domain's spec patch, and the body of `POST models` (one item of an
 * endpoint's `models`) into a model; the schemas they use are endpoint-schema.ts.
 */

import type { z } from 'zod';
import type { EnvVar, VolumeMount } from '../domain/endpoint.js';
import { DEFAULT_MODEL_REVISION } from '../domain/model-refs.js';
import type { ModelRef } from '../domain/models.js';
import type { SpecPatch } from '../domain/spec-patch.js';
import type { ValidationIssue } from '../domain/validate.js';
import {
  type EndpointInput,
  endpointFields,
  endpointInput,
  modelInput,
  unwrapSingle,
} from './endpoint-schema.js';
import { ENDPOINT_ID_KEYS } from './paths.js';

/** The port of a queue endpoint created without `ports` (used only by a `healthy.path` probe). */
export const QUEUE_DEFAULT_PORT = 8000;

export interface InputDefaults {
  /** Size of a local volume that does not say its size. */
  localVolumeSizeGB: number;
}

/**
 * A failed parse may carry `partial`: the body read with the fields at fault left out, so that the caller can check
 * the rest's ranges and answer every problem of the body in one 400.
 */
export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[]; partial?: T };

/** Parses `body.endpoint` of a create request. */
export function parseCreateBody(body: unknown, defaults: InputDefaults): ParseResult<SpecPatch> {
  if (!isRecord(body) || !isRecord(body.endpoint)) {
    return fail('endpoint', 'the body must be {"endpoint": {...}}');
  }
  const parsed = parseFields(body.endpoint, defaults);
  const patch = parsed.ok ? parsed.value : parsed.partial;
  const missing = patch === undefined ? [] : missingOnCreate(patch);
  if (!parsed.ok) {
    // A field left out for its fault is not missing as well (`ports` with two ports is not also required).
    const faulty = new Set(parsed.issues.map((issue) => issue.field.split('.')[0]));
    const more = missing.filter((issue) => !faulty.has(issue.field.split('.')[0]));
    return { ...parsed, issues: [...parsed.issues, ...more] };
  }
  return missing.length > 0 ? { ok: false, issues: missing, partial: parsed.value } : parsed;
}

/** The fields a create needs; a queue endpoint without a port gets the default one (set on `patch`). */
function missingOnCreate(patch: SpecPatch): ValidationIssue[] {
  const missing: ValidationIssue[] = [];
  if (patch.image?.ref === undefined) {
    missing.push({ field: 'image.image', reason: 'INVALID_FIELD', message: 'image.image is required' });
  }
  if (patch.port === undefined && patch.type === 'queue') {
    // A queue worker pulls its jobs: its port serves only a `healthy.path` probe, if one is set.
    patch.port = QUEUE_DEFAULT_PORT;
  } else if (patch.port === undefined) {
    missing.push({
      field: 'ports',
      reason: 'INVALID_FIELD',
      message: 'ports is required (exactly one port)',
    });
  }
  return missing;
}

/** Parses a flat update body: `id` (or `endpoint_id`) plus any endpoint fields; omitted fields keep their value. */
export function parseUpdateBody(
  body: unknown,
  defaults: InputDefaults,
): ParseResult<{ id: string; patch: SpecPatch }> {
  if (!isRecord(body)) return fail('', 'the body must be a JSON object');
  const fields = updateFields(body);
  const id = readId(body, ENDPOINT_ID_KEYS) ?? readId(fields, ENDPOINT_ID_KEYS);
  if (id === undefined) return fail('id', 'id (or endpoint_id) is required');
  const parsed = parseFields(fields, defaults);
  if (parsed.ok) return { ok: true, value: { id, patch: parsed.value } };
  const { partial, issues } = parsed;
  return partial === undefined
    ? { ok: false, issues }
    : { ok: false, issues, partial: { id, patch: partial } };
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

/** The fields parsed; when some are at fault, the rest parsed without them as `partial` (two tries at most). */
function parseFields(raw: unknown, defaults: InputDefaults): ParseResult<SpecPatch> {
  const parsed = parseWhole(raw, defaults);
  if (parsed.ok || !isRecord(raw)) return parsed;
  let rest = withoutFields(raw, parsed.issues);
  for (let attempt = 0; attempt < 2; attempt++) {
    const again = parseWhole(rest, defaults);
    if (again.ok) return { ...parsed, partial: again.value };
    // A fault the path does not reach (inside a one-element array, say) leaves out its whole top-level key.
    rest = withoutFields(rest, again.issues, true);
  }
  return parsed;
}

/**
 * A copy of `raw` without the fields the issues name (`workerConfig.minNum`), or without their top-level keys
 * (`workerConfig`) when `whole` is set or the path cannot be followed.
 */
function withoutFields(
  raw: Record<string, unknown>,
  issues: readonly ValidationIssue[],
  whole = false,
): Record<string, unknown> {
  const copy = structuredClone(raw);
  for (const { field } of issues) {
    const path = field.split('.');
    const [top] = path;
    if (top === undefined || top === '') continue;
    let parent: unknown = copy;
    for (const key of path.slice(0, -1)) parent = isRecord(parent) ? unwrapSingle(parent[key]) : undefined;
    const last = path[path.length - 1] ?? top;
    if (!whole && isRecord(parent) && Object.hasOwn(parent, last)) delete parent[last];
    else delete copy[top];
  }
  return copy;
}

function parseWhole(raw: unknown, defaults: InputDefaults): ParseResult<SpecPatch> {
  const result = endpointInput.safeParse(raw);
  if (!result.success) return { ok: false, issues: schemaIssues(result.error) };
  const input = result.data;
  if (input.ports !== undefined && input.ports.length !== 1) {
    return fail('ports', `exactly one port is supported, got ${input.ports.length}`);
  }
  const volumes = toVolumes(input.volumeMounts, defaults);
  if (!volumes.ok) return { ok: false, issues: volumes.issues };
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
      // Clients send "" for "not set" (waverless's update does): the default on create, unchanged on update.
      cudaVersion: w.cudaVersion === '' ? undefined : w.cudaVersion,
      requestTimeoutSeconds: w.requestTimeout,
      keepFrozenSeconds: w.keepFrozen,
      keepSuspendedSeconds: w.keepSuspended,
    },
    port: firstPort === undefined ? undefined : typeof firstPort === 'number' ? firstPort : firstPort.port,
    scaling: input.policy,
    image: input.image && {
      ref: input.image.image,
      authId: input.image.authId,
      command: input.image.command,
      pullPolicy: input.image.pullPolicy,
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
    public: input.public,
    type: input.type,
    jobsPath: input.jobsPath,
    models: input.models?.map(toModelRef),
    openaiModel: input.openaiModel,
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

/** Parses the body of `POST models`: one model as an endpoint's `models` holds it, with the same defaults. */
export function parseModelBody(body: unknown): ParseResult<ModelRef> {
  if (!isRecord(body)) return fail('', 'the body must be a JSON object');
  const result = modelInput.safeParse(body);
  return result.success
    ? { ok: true, value: toModelRef(result.data) }
    : { ok: false, issues: schemaIssues(result.error) };
}

function toModelRef(m: z.output<typeof modelInput>): ModelRef {
  return {
    name: m.name,
    revision: m.revision ?? DEFAULT_MODEL_REVISION,
    allowPatterns: m.allowPatterns ?? [],
    tokenSecret: m.tokenSecret === undefined || m.tokenSecret === '' ? null : m.tokenSecret,
  };
}

function schemaIssues(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    field: issue.path.join('.'),
    reason: 'INVALID_FIELD',
    message: `${issue.path.join('.') || 'body'} ${issue.message}`,
  }));
}

function fail(field: string, message: string): { ok: false; issues: ValidationIssue[] } {
  return { ok: false, issues: [{ field, reason: 'INVALID_FIELD', message }] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
