import { describe, expect, it } from 'vitest';
import {
  KUBERNETES_WORKER_SERVICE,
  kubernetesWorkersUnreachable,
  kubernetesWorkersUrl,
  workerFacingBaseUrl,
} from './worker-facing-url.js';

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

describe('the worker-facing URL on Kubernetes', () => {
  const listen = (host: string) => ({ host, port: 8082 });
  it.each([
    [listen('0.0.0.0'), undefined, 'http://corral-workers.corral.svc:8082', undefined],
    [listen('::'), undefined, 'http://corral-workers.corral.svc:8082', undefined],
    [listen('0.0.0.0'), 'http://10.96.0.12:8082', 'http://10.96.0.12:8082', undefined],
    [listen('127.0.0.1'), undefined, 'http://127.0.0.1:8082', 'a loopback address no pod reaches'],
    [
      listen('127.0.0.1'),
      'http://corral-workers.corral.svc:8082',
      'http://corral-workers.corral.svc:8082',
      'on 127.0.0.1:8082',
    ],
    [
      listen('0.0.0.0'),
      'http://localhost:8082',
      'http://localhost:8082',
      'URL http://localhost:8082 is a loopback',
    ],
    [listen('0.0.0.0'), 'http://[::1]:8082', 'http://[::1]:8082', 'is a loopback address'],
  ])('listen %o, advertised %s -> %s, unreachable: %s', (at, advertiseUrl, url, unreachable) => {
    expect(kubernetesWorkersUrl({ listen: at, advertiseUrl })).toBe(url);
    const reason = kubernetesWorkersUnreachable({ listen: at, advertiseUrl });
    if (unreachable === undefined) expect(reason).toBeUndefined();
    else expect(reason).toContain(unreachable);
  });
});
