/** Wire fixtures for client and CLI tests: an endpoint as the API answers it. */
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
    ...overrides,
  };
}
