/**
 * Wire fixtures: an endpoint as the API answers it (client and CLI tests), and request bodies exactly as real
 * clients of the original service send them (the contract tests replay them byte for byte).
 */
import type { WireEndpoint } from '../../src/contract/wire.js';

/** An endpoint as the API answers it (get: integer ports; list: string ports), for client and CLI tests. */
export function sampleWireEndpoint<P extends string | number>(
  port: P,
  overrides: Partial<WireEndpoint<P>> = {},
): WireEndpoint<P> {
  return {
    id: 'ep-1',
    name: 'echo',
    appName: 'echo',
    state: { state: 'serving', error: '', message: '' },
    url: 'http://echo.localhost:8081',
    workerConfig: {
      minNum: 0,
      maxNum: 2,
      freeTimeout: '300',
      maxConcurrent: '4',
      gpuNum: 1,
      cudaVersion: 'any',
      requestTimeout: 300,
      keepFrozen: 0,
      keepSuspended: 0,
    },
    policy: { type: 'queue', value: '30' },
    image: { image: 'corral/echo:1', authId: '', command: '' },
    rootfsSize: 100,
    volumeMounts: [],
    envs: [],
    ports: [{ port }],
    workers: [],
    products: [{ id: 'h100-80g' }],
    healthy: {
      path: '/health',
      initialDelay: 0,
      period: 2,
      timeout: 2,
      successThreshold: 1,
      failureThreshold: 3,
    },
    log: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/log?id=ep-1',
    metrics: 'http://127.0.0.1:8080/gpu-instance/openapi/v1/endpoint/metrics?id=ep-1',
    public: false,
    type: 'http',
    jobsPath: '/run',
    ...overrides,
  };
}

/**
 * Request bodies of waverless's Go provider (github.com/WaveSpeedAI/waverless, pkg/provider/novita), byte for byte
 * as Go's encoding/json writes its request structs (types.go: field order, omitempty): `{{ENDPOINT_ID}}` and
 * `{{WORKER_ID}}` stand for the ids the test learns.
 */
export const WAVERLESS = {
  /** Deploy: `CreateEndpointRequest` from mapDeployRequestToNovita (replicas 2; int workerConfig, no cudaVersion). */
  create:
    '{"endpoint":{"name":"flux-dev","appName":"flux-dev","workerConfig":{"minNum":2,"maxNum":2,"freeTimeout":300,"maxConcurrent":1,"gpuNum":1,"requestTimeout":3600},"ports":[{"port":8000}],"policy":{"type":"queue","value":60},"image":{"image":"wavespeed/flux-dev:latest"},"products":[{"id":"h100-80g"}],"rootfsSize":100,"clusterID":"us-dallas-nas-2","envs":[{"key":"WAVERLESS_ENDPOINT_ID","value":"flux-dev"},{"key":"NOVITA_REGION","value":"us-dallas-nas-2"}],"healthy":{"path":"/health"}}}',
  /** ScaleApp's first step for each victim: `DrainWorkerRequest`. */
  drain: '{"workerID":"{{WORKER_ID}}","drain":true}',
  /**
   * ScaleApp's second step (replicas 2 -> 1): `UpdateEndpointRequest` from mapUpdateRequestToNovita, echoing the
   * get answer with string freeTimeout/maxConcurrent/policy.value, `"cudaVersion":""` (never copied) and
   * `"workers":null`.
   */
  scaleTo1:
    '{"id":"{{ENDPOINT_ID}}","name":"flux-dev","appName":"flux-dev","workerConfig":{"minNum":1,"maxNum":1,"freeTimeout":"300","maxConcurrent":"1","gpuNum":1,"requestTimeout":3600,"cudaVersion":""},"policy":{"type":"queue","value":"60"},"image":{"image":"wavespeed/flux-dev:latest"},"rootfsSize":100,"volumeMounts":[],"envs":[{"key":"WAVERLESS_ENDPOINT_ID","value":"flux-dev"},{"key":"NOVITA_REGION","value":"us-dallas-nas-2"}],"ports":[{"port":8000}],"workers":null,"products":[{"id":"h100-80g"}],"healthy":{"path":"/health"}}',
} as const;

/** Bodies of other clients: an update naming the endpoint by `endpoint_id`, and a lone `ports` object. */
export const OTHER_CLIENTS = {
  updateByEndpointId: '{"endpoint_id":"{{ENDPOINT_ID}}","workerConfig":{"minNum":0,"maxNum":3}}',
  createWithLonePorts:
    '{"endpoint":{"name":"lone-port","image":{"image":"nginx:latest"},"ports":{"port":8080},"workerConfig":{"minNum":0,"maxNum":1,"gpuNum":1}}}',
  updateWithLonePorts: '{"id":"{{ENDPOINT_ID}}","ports":{"port":"9000"}}',
} as const;

/** The body with its `{{ENDPOINT_ID}}` and `{{WORKER_ID}}` filled in; nothing else changes. */
export function fillIds(body: string, ids: { endpointId?: string; workerId?: string }): string {
  return body
    .replaceAll('{{ENDPOINT_ID}}', ids.endpointId ?? '{{ENDPOINT_ID}}')
    .replaceAll('{{WORKER_ID}}', ids.workerId ?? '{{WORKER_ID}}');
}
