import { describe, expect, it } from 'vitest';
import { KUBERNETES_WORKER_SERVICE, workerFacingBaseUrl } from './worker-facing-url.js';

describe('workerFacingBaseUrl', () => {
  it.each([
    [{ runtime: 'docker', address: '172.31.0.1', port: 8082 } as const, 'http://172.31.0.1:8082'],
    [{ runtime: 'local', address: '127.0.0.1', port: 8082 } as const, 'http://127.0.0.1:8082'],
    [{ runtime: 'local', address: '0.0.0.0', port: 9000 } as const, 'http://127.0.0.1:9000'],
    [{ runtime: 'fake', address: '::1', port: 8082 } as const, 'http://[::1]:8082'],
    [
      { runtime: 'kubernetes', ...KUBERNETES_WORKER_SERVICE } as const,
      'http://corral-workers.corral.svc:8082',
    ],
    [
      { runtime: 'kubernetes', service: 'jobs', namespace: 'gpu', port: 80 } as const,
      'http://jobs.gpu.svc:80',
    ],
  ])('%o -> %s', (target, url) => {
    expect(workerFacingBaseUrl(target)).toBe(url);
  });
});
