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
  [/^port$/, 'ports.0.port'],
  [/^scaling\./, 'policy.'],
  [/^image\.ref$/, 'image.image'],
  [/^productIds\.(\d+)$/, 'products.$1.id'],
  [/^rootfsSizeGB$/, 'rootfsSize'],
  [/^volumes\.(\d+)\.sizeGB$/, 'volumeMounts.$1.size'],
  [/^volumes\.(\d+)\.storageId$/, 'volumeMounts.$1.id'],
  [/^volumes\./, 'volumeMounts.'],
  [/^clusterId$/, 'clusterID'],
  [/^env\./, 'envs.'],
  [/^health\.(\w+?)(Seconds)?$/, 'healthy.$1'],
];

export function wireField(domainField: string): string {
  for (const [pattern, replacement] of RENAMES) {
    if (pattern.test(domainField)) return domainField.replace(pattern, replacement);
  }
  return domainField;
}
