/** How the domain's field names read on the wire: keys, paths and the names messages use. */
import type { EndpointSpec } from '../domain/endpoint.js';

/** Each top-level field of the domain's spec and the wire key a client knows it by (the event log names them). */
export const WIRE_SPEC_FIELDS: Record<keyof EndpointSpec, string> = {
  name: 'name',
  appName: 'appName',
  workers: 'workerConfig',
  port: 'ports',
  scaling: 'policy',
  image: 'image',
  productIds: 'products',
  rootfsSizeGB: 'rootfsSize',
  volumes: 'volumeMounts',
  clusterId: 'clusterID',
  env: 'envs',
  health: 'healthy',
  public: 'public',
  type: 'type',
  jobsPath: 'jobsPath',
  models: 'models',
  openaiModel: 'openaiModel',
};

/** Maps a domain field path (validate.ts) to the wire field a client sent. */
const RENAMES: [RegExp, string][] = [
  [/^workers\.minWorkers$/, 'workerConfig.minNum'],
  [/^workers\.maxWorkers$/, 'workerConfig.maxNum'],
  [/^workers\.idleTimeoutSeconds$/, 'workerConfig.freeTimeout'],
  [/^workers\.maxConcurrent$/, 'workerConfig.maxConcurrent'],
  [/^workers\.gpusPerWorker$/, 'workerConfig.gpuNum'],
  [/^workers\.cudaVersion$/, 'workerConfig.cudaVersion'],
  [/^workers\.requestTimeoutSeconds$/, 'workerConfig.requestTimeout'],
  [/^workers\.keepFrozenSeconds$/, 'workerConfig.keepFrozen'],
  [/^workers\.keepSuspendedSeconds$/, 'workerConfig.keepSuspended'],
  [/^port$/, 'ports.0.port'],
  [/^scaling\./, 'policy.'],
  [/^image\.ref$/, 'image.image'],
  [/^productIds\.(\d+)$/, 'products.$1.id'],
  [/^productIds$/, 'products'],
  [/^rootfsSizeGB$/, 'rootfsSize'],
  [/^volumes\.(\d+)\.sizeGB$/, 'volumeMounts.$1.size'],
  [/^volumes\.(\d+)\.storageId$/, 'volumeMounts.$1.id'],
  [/^volumes\./, 'volumeMounts.'],
  [/^volumes$/, 'volumeMounts'],
  [/^clusterId$/, 'clusterID'],
  [/^env\./, 'envs.'],
  [/^env$/, 'envs'],
  [/^health\.(\w+?)(Seconds)?$/, 'healthy.$1'],
];

export function wireField(domainField: string): string {
  for (const [pattern, replacement] of RENAMES) {
    if (pattern.test(domainField)) return domainField.replace(pattern, replacement);
  }
  return domainField;
}

/** Where a message names a field more briefly than its wire path: one number of workerConfig by its own key. */
const MESSAGE_NAMES: [RegExp, string][] = [
  [/^workerConfig\./, ''],
  [/^policy\.value$/, 'policy value'],
  [/^image\.image$/, 'image'],
];

/** How a message names a domain field to a client: its wire key (wireField), briefly where that is clear. */
export function wireName(domainField: string): string {
  const field = wireField(domainField);
  for (const [pattern, replacement] of MESSAGE_NAMES) {
    if (pattern.test(field)) return field.replace(pattern, replacement);
  }
  return field;
}

/** A domain message (validate.ts) as a client reads it: each backticked domain field named as the client knows it. */
export function wireMessage(message: string): string {
  return message.replace(/`([A-Za-z]+(?:\.[A-Za-z0-9]+)*)`/g, (_whole, field: string) => wireName(field));
}
