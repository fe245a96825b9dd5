import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import { simulatedInventory } from '../../gpu/inventory.js';
import type { ManagedWorker } from './managed-worker.js';
import {
  buildWorkerSpec,
  memoryLimitBytes,
  registryOf,
  splitCommand,
  workerMemoryGBPerGpu,
} from './worker-spec.js';

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

/** The words /bin/sh makes of `command` (no expansion happens in these commands: no unquoted $, `, * or ~). */
function shellWords(command: string): string[] {
  const script = `set -- ${command}\nfor word in "$@"; do printf '%s\\0' "$word"; done`;
  const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
  return out === '' ? [] : out.slice(0, -1).split('\0');
}

describe('splitCommand against /bin/sh', () => {
  it.each([
    String.raw`python -c "print('a\nb')"`,
    String.raw`echo "a\nb" "tab\there" "\q" "\ "`,
    String.raw`echo "a\$b" "a\`b" "a\"b" "a\\b"`,
    String.raw`echo 'a\nb' 'a\\b' a\nb a\\b c\ d`,
    'echo "x\\\ny" a\\\nb "two\nlines"',
    String.raw`run --name "my model" --x='1 2' 'it'\''s' ""`,
    String.raw`echo "a \"b\"" c\ d`,
    '  spaced \t out  ',
  ])('%j', (command) => {
    expect(splitCommand(command)).toEqual(shellWords(command));
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

describe('workerMemoryGBPerGpu', () => {
  const GIB = 1024 ** 3;
  it.each<[string, number | undefined, number, number, number | undefined]>([
    ['configured', 64, 2048 * GIB, 8, 64],
    ['configured 0: no limit', 0, 2048 * GIB, 8, undefined],
    ['unset, 2 TiB and 8 GPUs: 90% / 8', undefined, 2048 * GIB, 8, 230.375],
    ['unset, 23.5 GiB and 4 GPUs', undefined, 23.5 * GIB, 4, 5.25],
    ['unset, no GPUs: one share', undefined, 16 * GIB, 0, 14.375],
    ['unset, a tiny machine: at least 1/8 GiB', undefined, 0.1 * GIB, 8, 0.125],
  ])('%s', (_what, configured, machine, gpus, expected) => {
    expect(workerMemoryGBPerGpu(configured, machine, gpus)).toBe(expected);
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
    healthCause: '',
    gpuUuids: [],
    address: null,
    createdAt: 0,
    startedAt: null,
    readyAt: null,
  };

  it("puts a queue worker's protocol env under the endpoint's own envs, which override it", () => {
    const endpoint = sampleEndpoint({
      patch: {
        type: 'queue',
        env: [
          { key: 'RUNPOD_PING_INTERVAL', value: '1000' },
          { key: 'RUNPOD_POD_ID', value: 'mine' },
        ],
      },
    });
    const spec = buildWorkerSpec(endpoint, worker, [], {
      storagePaths: new Map(),
      protocolEnv: [
        { key: 'RUNPOD_POD_ID', value: 'w1' },
        { key: 'RUNPOD_WEBHOOK_GET_JOB', value: 'http://h/v2/e/job-take/w1?worker=w1' },
      ],
    });
    expect(spec.env).toMatchObject({
      RUNPOD_POD_ID: 'mine',
      RUNPOD_PING_INTERVAL: '1000',
      RUNPOD_WEBHOOK_GET_JOB: 'http://h/v2/e/job-take/w1?worker=w1',
      CORRAL_WORKER_ID: 'w1',
    });
  });

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

  it('mounts a read-only storage read-only, and only that one', () => {
    const endpoint = sampleEndpoint({
      patch: {
        volumes: [
          { type: 'network', storageId: 'models', mountPath: '/models' },
          { type: 'network', storageId: 'scratch', mountPath: '/scratch' },
        ],
      },
    });
    const spec = buildWorkerSpec(endpoint, worker, [], {
      storagePaths: new Map([
        ['models', '/srv/models'],
        ['scratch', '/srv/scratch'],
      ]),
      readOnlyStorages: new Set(['models']),
    });
    expect(spec.volumes).toEqual([
      { type: 'network', hostPath: '/srv/models', mountPath: '/models', readOnly: true },
      { type: 'network', hostPath: '/srv/scratch', mountPath: '/scratch' },
    ]);
  });

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
