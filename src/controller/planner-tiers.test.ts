import { describe, expect, it } from 'vitest';
import { sampleEndpoint, sampleWorker } from '../../test/support/fixtures.js';
import type { WorkerState } from '../domain/worker.js';
import { NO_CRASHES } from './crashes/backoff.js';
import { type EndpointPlanInput, type PlanAction, planEndpoint } from './planner.js';
import type { ManagedWorker } from './workers/managed-worker.js';

const NOW = 1_000_000;

const endpoint = (keepFrozenSeconds: number, keepSuspendedSeconds = 0, revision = 1) => ({
  ...sampleEndpoint({
    patch: { workers: { minWorkers: 0, maxWorkers: 2, keepFrozenSeconds, keepSuspendedSeconds } },
  }),
  revision,
});

/** The planner's fixture worker with a name of its own, holding a GPU. */
const worker = (id: string, state: WorkerState, extra: Partial<ManagedWorker> = {}): ManagedWorker =>
  sampleWorker(state, { id, gpuUuids: ['g0'], ...extra });

const BOTH = { freeze: true, suspend: true };
const FREEZE_ONLY = { freeze: true, suspend: false };

const plan = (input: Partial<EndpointPlanInput> & Pick<EndpointPlanInput, 'endpoint'>): PlanAction[] =>
  planEndpoint({
    workers: [],
    desiredWorkers: 0,
    crash: NO_CRASHES,
    now: NOW,
    startupTimeoutMs: 60_000,
    unhealthyTimeoutMs: 30_000,
    ...input,
  });

describe('planEndpoint with idle tiers (pure, on a given time)', () => {
  /** [what, input, the actions] */
  const CASES: [string, Partial<EndpointPlanInput> & Pick<EndpointPlanInput, 'endpoint'>, PlanAction[]][] = [
    [
      'keepFrozen 0: an idle worker is removed, as before',
      { endpoint: endpoint(0), workers: [worker('a', 'running')], tiers: BOTH },
      [{ type: 'remove', workerId: 'a', reason: 'scaled down' }],
    ],
    [
      'keepFrozen set, on a runtime without tiers: removed',
      { endpoint: endpoint(60), workers: [worker('a', 'running')] },
      [{ type: 'remove', workerId: 'a', reason: 'scaled down' }],
    ],
    [
      'keepFrozen set: an idle serving worker is frozen',
      { endpoint: endpoint(60), workers: [worker('a', 'running')], tiers: FREEZE_ONLY },
      [{ type: 'freeze', workerId: 'a' }],
    ],
    [
      'a worker not serving yet is removed, never frozen',
      { endpoint: endpoint(60), workers: [worker('a', 'unhealthy', { readyAt: 1 })], tiers: BOTH },
      [{ type: 'remove', workerId: 'a', reason: 'scaled down' }],
    ],
    [
      'strict-resume requests wait for a suspended worker: it is restored before the warmer frozen one, beyond the target',
      {
        endpoint: endpoint(60, 600),
        desiredWorkers: 1,
        workers: [
          worker('r', 'running'),
          worker('f', 'frozen', { tierSince: NOW - 1_000 }),
          worker('s', 'suspended', { tierSince: NOW - 1_000 }),
        ],
        busyWorkers: ['r', 's'],
        wakeWorkers: ['s'],
        tiers: BOTH,
      },
      [{ type: 'restore', workerId: 's' }],
    ],
    [
      'strict requests wait for a frozen worker past keepFrozen: it stays frozen, and a busy running one is not scaled down',
      {
        endpoint: endpoint(60, 600),
        desiredWorkers: 0,
        workers: [worker('r', 'running'), worker('f', 'frozen', { tierSince: NOW - 120_000 })],
        busyWorkers: ['r', 'f'],
        tiers: BOTH,
      },
      [],
    ],
    [
      'a request: the frozen worker is thawed rather than a new one started',
      {
        endpoint: endpoint(60),
        desiredWorkers: 1,
        workers: [worker('a', 'frozen', { tierSince: NOW - 1_000 })],
        tiers: FREEZE_ONLY,
      },
      [{ type: 'thaw', workerId: 'a' }],
    ],
    [
      'frozen before suspended, the most recently frozen first; the rest of the need is new workers',
      {
        endpoint: {
          ...endpoint(600, 600),
          spec: {
            ...endpoint(600, 600).spec,
            workers: { ...endpoint(600, 600).spec.workers, maxWorkers: 4 },
          },
        },
        desiredWorkers: 4,
        workers: [
          worker('s', 'suspended', { tierSince: NOW - 10 }),
          worker('old', 'frozen', { tierSince: NOW - 500 }),
          worker('new', 'frozen', { tierSince: NOW - 100 }),
        ],
        tiers: BOTH,
      },
      [
        { type: 'thaw', workerId: 'new' },
        { type: 'thaw', workerId: 'old' },
        { type: 'restore', workerId: 's' },
        { type: 'add', count: 1 },
      ],
    ],
    [
      'a wake under way counts as capacity: nothing more is asked',
      {
        endpoint: endpoint(60),
        desiredWorkers: 1,
        workers: [worker('a', 'frozen', { tierSince: NOW - 1_000, tierCall: 'thaw' })],
        tiers: FREEZE_ONLY,
      },
      [],
    ],
    [
      'frozen for keepFrozen, where it can be suspended and keepSuspended is set: suspended',
      {
        endpoint: endpoint(60, 600),
        workers: [worker('a', 'frozen', { tierSince: NOW - 60_000 })],
        tiers: BOTH,
      },
      [{ type: 'suspend', workerId: 'a', reason: 'frozen for 60 s' }],
    ],
    [
      'frozen for keepFrozen where it cannot be suspended: removed',
      {
        endpoint: endpoint(60, 600),
        workers: [worker('a', 'frozen', { tierSince: NOW - 60_000 })],
        tiers: FREEZE_ONLY,
      },
      [{ type: 'remove', workerId: 'a', reason: 'frozen for 60 s' }],
    ],
    [
      'frozen for less than keepFrozen: kept',
      {
        endpoint: endpoint(60, 600),
        workers: [worker('a', 'frozen', { tierSince: NOW - 59_999 })],
        tiers: BOTH,
      },
      [],
    ],
    [
      'suspended for keepSuspended: removed',
      {
        endpoint: endpoint(60, 600),
        workers: [worker('a', 'suspended', { tierSince: NOW - 600_000, gpuUuids: [] })],
        tiers: BOTH,
      },
      [{ type: 'remove', workerId: 'a', reason: 'suspended for 600 s' }],
    ],
    [
      'a resting worker of an old revision goes',
      {
        endpoint: endpoint(600, 600, 2),
        workers: [worker('a', 'frozen', { tierSince: NOW - 1 })],
        tiers: BOTH,
      },
      [{ type: 'remove', workerId: 'a', reason: 'replaced by a new revision' }],
    ],
    [
      'a request while its freeze is under way: no new worker (the next pass thaws it)',
      {
        endpoint: endpoint(60),
        desiredWorkers: 1,
        workers: [worker('a', 'frozen', { tierSince: NOW, tierCall: 'freeze' })],
        tiers: FREEZE_ONLY,
      },
      [],
    ],
    [
      'a runtime call under way (freezing) is left alone',
      {
        endpoint: endpoint(60),
        workers: [worker('a', 'frozen', { tierSince: NOW - 120_000, tierCall: 'freeze' })],
        tiers: BOTH,
      },
      [],
    ],
  ];

  it.each(CASES)('%s', (_what, input, actions) => {
    expect(plan(input)).toEqual(actions);
  });

  it('a stopped endpoint removes its resting workers too', () => {
    const stopped = { ...endpoint(600), desired: 'stopped' as const };
    expect(
      plan({ endpoint: stopped, workers: [worker('a', 'frozen', { tierSince: NOW })], tiers: BOTH }),
    ).toEqual([{ type: 'remove', workerId: 'a', reason: 'endpoint stopped' }]);
  });
});
