import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { simulatedInventory } from '../gpu/inventory.js';
import type { ManagedWorker } from './managed-worker.js';
import { buildWorkerSpec, memoryLimitBytes, registryOf, splitCommand } from './worker-spec.js';

describe('splitCommand', () => {
  it.each([
    ['', []],
    ['python serve.py', ['python', 'serve.py']],
    ['  a   b  ', ['a', 'b']],
    ['run --name "my model" --x=\'1 2\'', ['run', '--name', 'my model', '--x=1 2']],
    ['echo "a \\"b\\"" c\\ d', ['echo', 'a "b"', 'c d']],
    ['x ""', ['x', '']],
  ])('%j', (input, expected) => {
    expect(splitCommand(input)).toEqual(expected);
  });
});

describe('registryOf', () => {
  it.each([
    ['nginx', ''],
    ['library/nginx:1', ''],
    ['registry.example.com/team/model:1', 'registry.example.com'],
    ['localhost:5000/x', 'localhost:5000'],
  ])('%s -> %j', (image, registry) => {
    expect(registryOf(image)).toBe(registry);
  });
});

describe('buildWorkerSpec', () => {
  const worker: ManagedWorker = {
    id: 'w1',
    endpointId: 'e',
    ownerId: 'owner-a',
    revision: 3,
    state: 'pending',
    error: '',
    message: '',
    healthy: false,
    gpuUuids: [],
    address: null,
    createdAt: 0,
    startedAt: null,
    readyAt: null,
  };

  it('sets Corral env and labels; simulated GPUs are in env and in spec.gpus, flagged as simulated', () => {
    const endpoint = sampleEndpoint({
      patch: {
        env: [{ key: 'MODEL', value: 'x' }],
        image: { ref: 'img:1', command: 'node /worker.mjs' },
        volumes: [
          { type: 'local', sizeGB: 5, mountPath: '/scratch' },
          { type: 'network', storageId: 'models', mountPath: '/models' },
        ],
      },
    });
    const gpus = simulatedInventory([{ productId: 'h100-80g', count: 2, cudaVersion: '12.4' }]);
    const spec = buildWorkerSpec(endpoint, worker, gpus, {
      storagePaths: new Map([['models', '/srv/models']]),
    });
    expect(spec.command).toEqual(['node', '/worker.mjs']);
    expect(spec.env).toEqual({
      MODEL: 'x',
      PORT: '8000',
      CORRAL_ENDPOINT_ID: endpoint.id,
      CORRAL_WORKER_ID: 'w1',
      NVIDIA_VISIBLE_DEVICES: `${gpus[0]?.uuid},${gpus[1]?.uuid}`,
    });
    // The runtime keeps them with the worker (RuntimeWorker.gpuUuids); only real GPUs become device requests.
    expect(spec.gpus).toEqual([
      { index: 0, uuid: gpus[0]?.uuid, simulated: true },
      { index: 1, uuid: gpus[1]?.uuid, simulated: true },
    ]);
    expect(spec.labels).toEqual({
      'corral.dev/managed': 'true',
      'corral.dev/endpoint': endpoint.id,
      'corral.dev/worker': 'w1',
      'corral.dev/revision': '3',
      'corral.dev/owner': 'owner-a',
    });
    expect(spec.volumes).toEqual([
      { type: 'local', name: 'corral-w1-0', sizeGB: 5, mountPath: '/scratch' },
      { type: 'network', hostPath: '/srv/models', mountPath: '/models' },
    ]);
  });

  it.each([
    { gpuCount: 2, memoryGBPerGpu: undefined, bytes: undefined },
    { gpuCount: 0, memoryGBPerGpu: undefined, bytes: undefined },
    { gpuCount: 1, memoryGBPerGpu: 64, bytes: 64 * 1024 ** 3 },
    { gpuCount: 3, memoryGBPerGpu: 64, bytes: 192 * 1024 ** 3 },
    { gpuCount: 0, memoryGBPerGpu: 16, bytes: 16 * 1024 ** 3 },
    { gpuCount: 2, memoryGBPerGpu: 0.5, bytes: 1024 ** 3 },
  ])(
    'memory limit for $gpuCount GPU(s) at $memoryGBPerGpu GiB each: $bytes bytes',
    ({ gpuCount, memoryGBPerGpu, bytes }) => {
      expect(memoryLimitBytes(gpuCount, memoryGBPerGpu)).toBe(bytes);
      const gpus = simulatedInventory([{ productId: 'h100-80g', count: gpuCount, cudaVersion: '12.4' }]);
      const spec = buildWorkerSpec(sampleEndpoint(), worker, gpus, {
        storagePaths: new Map(),
        ...(memoryGBPerGpu === undefined ? {} : { memoryGBPerGpu }),
      });
      expect(spec.memoryBytes).toBe(bytes);
      expect('memoryBytes' in spec).toBe(bytes !== undefined);
    },
  );

  it('requests real GPUs by uuid', () => {
    const real = [
      {
        ...simulatedInventory([{ productId: 'h100-80g', count: 1, cudaVersion: '12.4' }])[0],
        simulated: false,
      },
    ];
    const spec = buildWorkerSpec(sampleEndpoint(), worker, real as never, { storagePaths: new Map() });
    expect(spec.gpus).toEqual([{ index: 0, uuid: real[0]?.uuid }]);
  });
});
