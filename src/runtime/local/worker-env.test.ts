import { describe, expect, it } from 'vitest';
import { testWorkerSpec } from '../../../test/support/runtime-contract.js';
import type { WorkerSpec } from '../types.js';
import { localWorkerEnv, mountEnvName } from './worker-env.js';

function spec(overrides: Partial<WorkerSpec> = {}): WorkerSpec {
  return testWorkerSpec({
    image: 'ignored:latest',
    command: ['worker'],
    workerId: 'w1',
    endpointId: 'e1',
    ...overrides,
  });
}

describe('localWorkerEnv', () => {
  const base = {
    PATH: '/usr/bin',
    HOME: '/home/x',
    CORRAL_API_KEY: 'k',
    CORRAL_SECRET_KEY: 's',
    CORRAL_DATABASE_URL: 'postgres://secret',
    CORRAL_API_ADDR: '0.0.0.0:8080',
    CUDA_VISIBLE_DEVICES: '0,1,2,3',
  };

  it('scrubs Corral variables, keeps the rest, replaces PORT and sets GPUs and mounts', () => {
    const env = localWorkerEnv(
      spec({
        workerId: 'w9',
        endpointId: 'e9',
        env: { PORT: '8000', FOO: 'bar', CORRAL_WORKER_ID: 'w9', CORRAL_ENDPOINT_ID: 'e9' },
        gpus: [
          { index: 2, uuid: 'GPU-b' },
          { index: 0, uuid: 'GPU-a' },
        ],
      }),
      base,
      41234,
      [{ mountPath: '/data/models', dir: '/state/volumes/w9/0' }],
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/x',
      FOO: 'bar',
      PORT: '41234',
      CORRAL_WORKER_ID: 'w9',
      CORRAL_ENDPOINT_ID: 'e9',
      NVIDIA_VISIBLE_DEVICES: 'GPU-b,GPU-a',
      CUDA_VISIBLE_DEVICES: 'GPU-b,GPU-a',
      CORRAL_MOUNT_DATA_MODELS: '/state/volumes/w9/0',
    });
  });

  it('hides every GPU from a worker that was given none', () => {
    const env = localWorkerEnv(spec(), base, 1, []);
    expect(env.CUDA_VISIBLE_DEVICES).toBe('');
    expect(env.NVIDIA_VISIBLE_DEVICES).toBe('void');
  });

  it.each([
    ['/data', 'CORRAL_MOUNT_DATA'],
    ['/data/models', 'CORRAL_MOUNT_DATA_MODELS'],
    ['/workspace/my-cache.d/', 'CORRAL_MOUNT_WORKSPACE_MY_CACHE_D'],
    ['/', 'CORRAL_MOUNT_ROOT'],
  ])('mountEnvName(%s) = %s', (mountPath, name) => {
    expect(mountEnvName(mountPath)).toBe(name);
  });
});
