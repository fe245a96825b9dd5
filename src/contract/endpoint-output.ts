/** Domain endpoints and workers in their wire shapes (wire.ts), with the links the API hands in. */
import type { Endpoint } from '../domain/endpoint.js';
import type { Worker } from '../domain/worker.js';
import type { WireEndpoint, WireJobUrls, WireWorker } from './wire.js';

export interface EndpointLinks {
  url: string;
  jobUrls: WireJobUrls;
  log: string;
  metrics: string;
  workers: WireWorker[];
}

/** The wire form of an endpoint; list sends `ports[].port` as a string, get as an integer. */
export function toWireEndpoint(
  endpoint: Endpoint,
  links: EndpointLinks,
  portType: 'string',
): WireEndpoint<string>;
export function toWireEndpoint(
  endpoint: Endpoint,
  links: EndpointLinks,
  portType: 'integer',
): WireEndpoint<number>;
export function toWireEndpoint(
  endpoint: Endpoint,
  links: EndpointLinks,
  portType: 'string' | 'integer',
): WireEndpoint {
  const { spec } = endpoint;
  const usesNetworkStorage = spec.volumes.some((v) => v.type === 'network');
  const wire: WireEndpoint = {
    id: endpoint.id,
    name: spec.name,
    appName: spec.appName,
    state: { ...endpoint.status },
    url: links.url,
    workerConfig: {
      minNum: spec.workers.minWorkers,
      maxNum: spec.workers.maxWorkers,
      freeTimeout: String(spec.workers.idleTimeoutSeconds),
      maxConcurrent: String(spec.workers.maxConcurrent),
      gpuNum: spec.workers.gpusPerWorker,
      cudaVersion: spec.workers.cudaVersion,
      requestTimeout: spec.workers.requestTimeoutSeconds,
      keepFrozen: spec.workers.keepFrozenSeconds,
      keepSuspended: spec.workers.keepSuspendedSeconds,
    },
    policy: { type: spec.scaling.type, value: String(spec.scaling.value) },
    image: {
      image: spec.image.ref,
      authId: spec.image.authId,
      command: spec.image.command,
      ...(spec.image.pullPolicy === undefined ? {} : { pullPolicy: spec.image.pullPolicy }),
    },
    rootfsSize: spec.rootfsSizeGB,
    volumeMounts: spec.volumes.map((v) =>
      v.type === 'local'
        ? { type: 'local', id: '', size: v.sizeGB, mountPath: v.mountPath }
        : { type: 'network', id: v.storageId, size: 0, mountPath: v.mountPath },
    ),
    envs: spec.env.map((e) => ({ key: e.key, value: e.value })),
    ports: [{ port: portType === 'string' ? String(spec.port) : spec.port }],
    workers: links.workers,
    products: spec.productIds.map((id) => ({ id })),
    healthy: {
      path: spec.health.path,
      initialDelay: spec.health.initialDelaySeconds,
      period: spec.health.periodSeconds,
      timeout: spec.health.timeoutSeconds,
      successThreshold: spec.health.successThreshold,
      failureThreshold: spec.health.failureThreshold,
    },
    log: links.log,
    metrics: links.metrics,
    public: spec.public,
    type: spec.type,
    jobsPath: spec.jobsPath,
    jobUrls: links.jobUrls,
    models: spec.models.map((m) => ({
      name: m.name,
      revision: m.revision,
      allowPatterns: [...m.allowPatterns],
      tokenSecret: m.tokenSecret,
    })),
    ...(spec.openaiModel === undefined ? {} : { openaiModel: spec.openaiModel }),
  };
  if (usesNetworkStorage) wire.clusterID = spec.clusterId;
  return wire;
}

export function toWireWorker(worker: Worker, links: { log: string; metrics: string }): WireWorker {
  return {
    id: worker.id,
    state: { ...worker.status },
    log: links.log,
    metrics: links.metrics,
    healthy: worker.healthy,
    drain: worker.drainRequested ?? false,
  };
}
