import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { LABELS, type RuntimeWorker } from '../runtime/types.js';
import {
  adoptedRecord,
  awaitsPlacement,
  hasContainer,
  type ManagedWorker,
  pendingRecord,
} from './managed-worker.js';
import { followed, followsRuntime, progressState } from './runtime-wait.js';

const FULL = '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.';
const NOW = 1_700_000_100_000;
const endpoint = sampleEndpoint();

function container(overrides: Partial<RuntimeWorker>): RuntimeWorker {
  return {
    workerId: 'w1',
    endpointId: endpoint.id,
    revision: 1,
    labels: { [LABELS.owner]: 'owner-a' },
    phase: 'running',
    message: '',
    createdAt: NOW - 60_000,
    gpuUuids: [],
    ...overrides,
  };
}

function record(overrides: Partial<ManagedWorker>): ManagedWorker {
  return { ...pendingRecord(endpoint, NOW), ...overrides };
}

describe('progressState', () => {
  it.each([
    [undefined, 'pulling'],
    ['pending', 'pending'],
    ['pulling', 'pulling'],
    ['starting', 'starting'],
  ] as const)('a create reporting %s shows %s', (phase, state) => {
    expect(progressState(phase)).toBe(state);
  });
});

describe('adoptedRecord', () => {
  it.each([
    [
      'a pod the scheduler has no room for: pending with its words, no startup deadline yet',
      container({ phase: 'pending', message: FULL }),
      { state: 'pending', message: FULL, startedAt: null, address: null, inRuntime: true },
    ],
    [
      'a pod being pulled and created: pulling with the kubelet words',
      container({ phase: 'pulling', message: 'ContainerCreating on node gpu-node-1' }),
      { state: 'pulling', message: 'ContainerCreating on node gpu-node-1', startedAt: null, inRuntime: true },
    ],
    [
      'a container that cannot be started: starting with the reason, its deadline from now',
      container({ phase: 'starting', message: 'CreateContainerConfigError: secret "x" not found' }),
      { state: 'starting', message: 'CreateContainerConfigError: secret "x" not found', startedAt: NOW },
    ],
    [
      'a running worker: starting, probed to learn its health',
      container({ phase: 'running', address: { host: '10.0.0.7', port: 8000 } }),
      {
        state: 'starting',
        message: 'adopted after a restart',
        startedAt: NOW,
        address: { host: '10.0.0.7', port: 8000 },
      },
    ],
    [
      'an exited worker: failed',
      container({ phase: 'exited', exitCode: 3 }),
      { state: 'failed', error: 'RUNTIME_ERROR', message: 'exited with code 3', inRuntime: false },
    ],
  ])('%s', (_, found, expected) => {
    expect(adoptedRecord(found, endpoint, NOW)).toMatchObject(expected);
  });

  it('an adopted pending worker waits for the scheduler, not for placement, and has a pod to remove', () => {
    const adopted = adoptedRecord(container({ phase: 'pending', message: FULL }), endpoint, NOW);
    expect(awaitsPlacement(adopted)).toBe(false);
    expect(hasContainer(adopted)).toBe(true);
    const fresh = pendingRecord(endpoint, NOW);
    expect(awaitsPlacement(fresh)).toBe(true);
    expect(hasContainer(fresh)).toBe(false);
  });
});

describe('followed', () => {
  const waiting = record({ state: 'pending', message: FULL, inRuntime: true });

  it.each([
    [
      'still unschedulable, same words: no change',
      waiting,
      container({ phase: 'pending', message: FULL }),
      undefined,
    ],
    [
      'the scheduler says something else',
      waiting,
      container({ phase: 'pending', message: '0/4 nodes are available: 4 Insufficient nvidia.com/gpu.' }),
      {
        type: 'waiting',
        state: 'pending',
        message: '0/4 nodes are available: 4 Insufficient nvidia.com/gpu.',
      },
    ],
    [
      'bound, the image being pulled',
      waiting,
      container({ phase: 'pulling', message: 'ContainerCreating on node gpu-node-1' }),
      { type: 'waiting', state: 'pulling', message: 'ContainerCreating on node gpu-node-1' },
    ],
    [
      'running at its address',
      waiting,
      container({ phase: 'running', address: { host: '10.0.0.7', port: 8000 } }),
      { type: 'started', address: { host: '10.0.0.7', port: 8000 } },
    ],
    ['exited: the caller says it died', waiting, container({ phase: 'exited', exitCode: 1 }), undefined],
    [
      'running without an address: nothing to route to yet',
      waiting,
      container({ phase: 'running' }),
      undefined,
    ],
  ])('%s', (_, before, found, expected) => {
    expect(followed(before, found)).toEqual(expected);
  });
});

describe('followsRuntime', () => {
  it.each([
    ['a worker waiting for placement', record({}), false],
    ['a pending worker the runtime has', record({ inRuntime: true }), true],
    ['a pulling one', record({ state: 'pulling', inRuntime: true }), true],
    ['a starting one without an address', record({ state: 'starting', inRuntime: true }), true],
    [
      'a starting one with its address',
      record({ state: 'starting', inRuntime: true, address: { host: '10.0.0.7', port: 8000 } }),
      false,
    ],
    ['a running one', record({ state: 'running', inRuntime: true }), false],
    ['a draining one', record({ state: 'draining', inRuntime: true }), false],
  ])('%s: %s', (_, worker, expected) => {
    expect(followsRuntime(worker)).toBe(expected);
  });
});
