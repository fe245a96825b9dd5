/**
 * The create/edit form's values and their conversion (pure, tested): the form's defaults from `GET endpoint/limit`,
 * a form filled from an endpoint, the request body built from a form, and an API error's fields mapped to the
 * controls that show them. Every value stays a string until the API reads it, so the API's own validation (and
 * its `metadata.field`) is the one that speaks; a health path left empty is left to the API too, which gives each
 * type its own (docs/jobs.md, Queue workers' health).
 */
import type { WireEndpoint, WireEndpointInput, WireLimits } from '../../src/client/index.js';

export interface SpecForm {
  name: string;
  appName: string;
  /** `http` or `queue` (docs/jobs.md, Which endpoints take jobs). */
  type: string;
  image: string;
  command: string;
  authId: string;
  port: string;
  minNum: string;
  maxNum: string;
  gpuNum: string;
  maxConcurrent: string;
  freeTimeout: string;
  requestTimeout: string;
  /** Idle tiers' seconds (docs/workers.md, Idle tiers). */
  keepFrozen: string;
  keepSuspended: string;
  cudaVersion: string;
  policyType: string;
  policyValue: string;
  rootfsSize: string;
  healthPath: string;
  initialDelay: string;
  period: string;
  timeout: string;
  successThreshold: string;
  failureThreshold: string;
  /** One `KEY=value` per line. */
  envs: string;
  /** One `local SIZE /path` or `network ID /path` per line. */
  volumes: string;
  products: string[];
  public: boolean;
}

export type Control = keyof SpecForm;

const clamp = (value: number, min: number, max: number) => String(Math.min(max, Math.max(min, value)));

/** A new endpoint's form: the defaults of docs/api.md, moved into the server's ranges as the server moves them. */
export function defaultForm(limits: WireLimits): SpecForm {
  return {
    name: '',
    appName: '',
    type: 'http',
    image: '',
    command: '',
    authId: '',
    port: '8000',
    minNum: clamp(0, limits.minWorkerNum, limits.maxWorkerNum),
    maxNum: clamp(1, limits.minWorkerNum, limits.maxWorkerNum),
    gpuNum: clamp(1, limits.minGPUNum, limits.maxGPUNum),
    maxConcurrent: clamp(1, limits.minConcurrencyNum, limits.maxConcurrencyNum),
    freeTimeout: clamp(60, limits.minFreeTimeout, limits.maxFreeTimeout),
    requestTimeout: clamp(300, limits.minRequestTimeout, limits.maxRequestTimeout),
    keepFrozen: '0',
    keepSuspended: '0',
    cudaVersion: 'any',
    policyType: 'queue',
    policyValue: clamp(4, limits.minQueueWaitTime, limits.maxQueueWaitTime),
    rootfsSize: String(limits.freeRootfsSize),
    // Empty: the type's own (/health on http, none on queue), and a default the API may widen (workers.md).
    healthPath: '',
    initialDelay: '0',
    period: '2',
    timeout: '2',
    successThreshold: '1',
    failureThreshold: '3',
    envs: '',
    volumes: '',
    products: [],
    public: false,
  };
}

/** The form of an existing endpoint, for editing. */
export function formOf(endpoint: WireEndpoint): SpecForm {
  const w = endpoint.workerConfig;
  const h = endpoint.healthy;
  return {
    name: endpoint.name,
    appName: endpoint.appName,
    type: endpoint.type,
    image: endpoint.image.image,
    command: endpoint.image.command,
    authId: endpoint.image.authId,
    port: String(endpoint.ports[0]?.port ?? ''),
    minNum: String(w.minNum),
    maxNum: String(w.maxNum),
    gpuNum: String(w.gpuNum),
    maxConcurrent: String(w.maxConcurrent),
    freeTimeout: String(w.freeTimeout),
    requestTimeout: String(w.requestTimeout),
    keepFrozen: String(w.keepFrozen),
    keepSuspended: String(w.keepSuspended),
    cudaVersion: w.cudaVersion,
    policyType: endpoint.policy.type,
    policyValue: String(endpoint.policy.value),
    rootfsSize: String(endpoint.rootfsSize),
    healthPath: h.path,
    initialDelay: String(h.initialDelay),
    period: String(h.period),
    timeout: String(h.timeout),
    successThreshold: String(h.successThreshold),
    failureThreshold: String(h.failureThreshold),
    envs: endpoint.envs.map((e) => `${e.key}=${e.value}`).join('\n'),
    volumes: endpoint.volumeMounts
      .map((v) =>
        v.type === 'network' ? `network ${v.id} ${v.mountPath}` : `local ${v.size} ${v.mountPath}`,
      )
      .join('\n'),
    products: endpoint.products.map((p) => p.id),
    public: endpoint.public,
  };
}

/** A number field as the API reads it: the text as typed (a numeric string), or left out when empty. */
function number(text: string): string | undefined {
  const trimmed = text.trim();
  return trimmed === '' ? undefined : trimmed;
}

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** `KEY=value` lines; a line without `=` is a key with an empty value. */
export function parseEnvs(text: string): { key: string; value: string }[] {
  return lines(text).map((line) => {
    const at = line.indexOf('=');
    return at < 0 ? { key: line, value: '' } : { key: line.slice(0, at).trim(), value: line.slice(at + 1) };
  });
}

/** `local SIZE /path` or `network ID /path` lines. */
export function parseVolumes(
  text: string,
): { type: string; size?: string; id?: string; mountPath: string }[] {
  return lines(text).map((line) => {
    const [type = '', second = '', ...rest] = line.split(/\s+/);
    const mountPath = rest.join(' ');
    return type === 'network' ? { type, id: second, mountPath } : { type, size: second, mountPath };
  });
}

/**
 * The endpoint a form describes, as create's `endpoint` or update's body take it. The health path goes only where
 * it differs from the form's `initial` one (a new form's: empty): a path sent is one the owner named, which the
 * API then probes as named and keeps across a change of type.
 */
export function inputOf(form: SpecForm, initial?: Pick<SpecForm, 'healthPath'>): WireEndpointInput {
  const optional = (key: string, value: string | undefined) => (value === undefined ? {} : { [key]: value });
  const path = form.healthPath.trim();
  return {
    name: form.name.trim(),
    ...(form.appName.trim() === '' ? {} : { appName: form.appName.trim() }),
    type: form.type,
    image: { image: form.image.trim(), command: form.command.trim(), authId: form.authId },
    ports: [{ port: number(form.port) ?? '' }],
    workerConfig: {
      ...optional('minNum', number(form.minNum)),
      ...optional('maxNum', number(form.maxNum)),
      ...optional('gpuNum', number(form.gpuNum)),
      ...optional('maxConcurrent', number(form.maxConcurrent)),
      ...optional('freeTimeout', number(form.freeTimeout)),
      ...optional('requestTimeout', number(form.requestTimeout)),
      ...optional('keepFrozen', number(form.keepFrozen)),
      ...optional('keepSuspended', number(form.keepSuspended)),
      cudaVersion: form.cudaVersion,
    },
    policy: { type: form.policyType, ...optional('value', number(form.policyValue)) },
    ...optional('rootfsSize', number(form.rootfsSize)),
    healthy: {
      ...(path === (initial?.healthPath.trim() ?? '') ? {} : { path }),
      ...optional('initialDelay', number(form.initialDelay)),
      ...optional('period', number(form.period)),
      ...optional('timeout', number(form.timeout)),
      ...optional('successThreshold', number(form.successThreshold)),
      ...optional('failureThreshold', number(form.failureThreshold)),
    },
    envs: parseEnvs(form.envs),
    volumeMounts: parseVolumes(form.volumes),
    products: form.products.map((id) => ({ id })),
    public: form.public,
  };
}

/** Wire field (as `metadata.field` names it) -> the control that edits it. */
const CONTROLS: Record<string, Control> = {
  name: 'name',
  appName: 'appName',
  type: 'type',
  image: 'image',
  'image.image': 'image',
  'image.command': 'command',
  'image.authId': 'authId',
  ports: 'port',
  'workerConfig.minNum': 'minNum',
  'workerConfig.maxNum': 'maxNum',
  'workerConfig.gpuNum': 'gpuNum',
  'workerConfig.maxConcurrent': 'maxConcurrent',
  'workerConfig.freeTimeout': 'freeTimeout',
  'workerConfig.requestTimeout': 'requestTimeout',
  'workerConfig.keepFrozen': 'keepFrozen',
  'workerConfig.keepSuspended': 'keepSuspended',
  'workerConfig.cudaVersion': 'cudaVersion',
  'policy.type': 'policyType',
  'policy.value': 'policyValue',
  rootfsSize: 'rootfsSize',
  'healthy.path': 'healthPath',
  'healthy.initialDelay': 'initialDelay',
  'healthy.period': 'period',
  'healthy.timeout': 'timeout',
  'healthy.successThreshold': 'successThreshold',
  'healthy.failureThreshold': 'failureThreshold',
  envs: 'envs',
  volumeMounts: 'volumes',
  clusterID: 'volumes',
  products: 'products',
  public: 'public',
};

/** The control that shows an error about `field` (`ports.0.port`, `envs.2.key`...); undefined: the whole form's. */
export function controlFor(field: string): Control | undefined {
  const exact = CONTROLS[field];
  if (exact !== undefined) return exact;
  // A list's entries (`envs.2.key`, `volumeMounts.0.size`, `ports.0.port`) are shown at the list.
  const list = CONTROLS[field.split('.')[0] ?? ''];
  return list;
}

export interface FormErrors {
  byControl: Partial<Record<Control, string>>;
  /** Errors that name no field of the form. */
  general: string[];
}

/** An API error's issues (`metadata.issues`, else `metadata.field`) placed at the controls they name. */
export function formErrors(message: string, metadata: Record<string, unknown>): FormErrors {
  const issues: { field?: unknown; message?: unknown }[] = Array.isArray(metadata.issues)
    ? (metadata.issues as { field?: unknown; message?: unknown }[])
    : [{ field: metadata.field, message }];
  const errors: FormErrors = { byControl: {}, general: [] };
  for (const issue of issues) {
    const text = typeof issue.message === 'string' ? issue.message : message;
    const control = typeof issue.field === 'string' ? controlFor(issue.field) : undefined;
    if (control === undefined) errors.general.push(text);
    else
      errors.byControl[control] = errors.byControl[control] ? `${errors.byControl[control]}; ${text}` : text;
  }
  if (issues.length === 0) errors.general.push(message);
  return errors;
}
