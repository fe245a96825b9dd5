import { describe, expect, it } from 'vitest';
import { sampleEndpoint, sampleWorker } from '../../test/support/fixtures.js';
import type { EndpointState } from '../domain/endpoint.js';
import type { WorkerState } from '../domain/worker.js';
import { DEFAULT_BACKOFF, NO_CRASHES, recordFailure } from './crashes/backoff.js';
import { endpointStatus } from './endpoint-status.js';
import type { ManagedWorker } from './workers/managed-worker.js';

const endpoint = (min: number, was: EndpointState) => ({
  ...sampleEndpoint({ patch: { workers: { minWorkers: min, maxWorkers: 2 } } }),
  status: { state: was, error: '', message: '' },
});

const worker = (state: WorkerState): ManagedWorker => sampleWorker(state, { id: `w-${state}`, createdAt: 0 });

const failures = (n: number) => {
  let crash = NO_CRASHES;
  for (let i = 0; i < n; i++) {
    crash = recordFailure(
      crash,
      { code: 'RUNTIME_ERROR', message: 'worker ran out of memory: limit 256 MiB (exit code 137)', at: i },
      DEFAULT_BACKOFF,
    );
  }
  return crash;
};

describe('endpointStatus during a run of worker failures', () => {
  it.each([
    {
      why: 'no failures, a worker replaced',
      min: 1,
      was: 'serving',
      crashes: 0,
      workers: ['pending'],
      state: 'deploying',
    },
    {
      why: 'a failure, the replacement pending',
      min: 1,
      was: 'serving',
      crashes: 1,
      workers: ['pending'],
      state: 'serving',
    },
    {
      why: 'failures, the replacement starting',
      min: 1,
      was: 'serving',
      crashes: 4,
      workers: ['starting'],
      state: 'serving',
    },
    {
      why: 'failures, waiting out the backoff',
      min: 1,
      was: 'serving',
      crashes: 2,
      workers: [],
      state: 'serving',
    },
    {
      why: 'scaled to zero endpoint, failures, waking',
      min: 0,
      was: 'serving',
      crashes: 2,
      workers: ['pending'],
      state: 'serving',
    },
    {
      why: 'failures while rolling out',
      min: 1,
      was: 'updating',
      crashes: 1,
      workers: ['pending'],
      state: 'updating',
    },
    {
      why: 'never served: still deploying',
      min: 1,
      was: 'deploying',
      crashes: 2,
      workers: ['pending'],
      state: 'deploying',
    },
    {
      why: 'minNum 0, never served, its first worker failed: no flip to scaled to zero',
      min: 0,
      was: 'deploying',
      crashes: 1,
      workers: [],
      state: 'deploying',
    },
    {
      why: 'minNum 0, its worker scaled down (no failure): scaled to zero',
      min: 0,
      was: 'deploying',
      crashes: 0,
      workers: [],
      state: 'serving',
    },
    { why: 'a crash loop', min: 1, was: 'serving', crashes: 5, workers: ['pending'], state: 'failed' },
    {
      why: 'a crash loop, a worker healthy again (not for long)',
      min: 1,
      was: 'failed',
      crashes: 5,
      workers: ['running'],
      state: 'failed',
    },
  ] as const)('$why: $was -> $state', ({ min, was, crashes, workers, state }) => {
    const status = endpointStatus(
      endpoint(min, was),
      workers.map(worker),
      failures(crashes),
      DEFAULT_BACKOFF,
      undefined,
    );
    expect(status.state).toBe(state);
  });

  it.each([
    [[], 'scaled to zero; a request wakes it'],
    [['frozen'], 'scaled to zero, 1 frozen; a request wakes one'],
    [['frozen', 'frozen', 'suspended'], 'scaled to zero, 2 frozen, 1 suspended; a request wakes one'],
  ] as const)('scaled to zero with %j workers resting in a tier: serving, and says so', (states, message) => {
    const workers = states.map((state, i) => ({ ...worker(state), id: `w${i}` }));
    expect(endpointStatus(endpoint(0, 'serving'), workers, NO_CRASHES, DEFAULT_BACKOFF, undefined)).toEqual({
      state: 'serving',
      error: '',
      message,
    });
  });

  it('a crash loop with a worker serving meanwhile stays failed and says so', () => {
    const status = endpointStatus(
      endpoint(1, 'failed'),
      [worker('running')],
      failures(5),
      DEFAULT_BACKOFF,
      undefined,
    );
    expect(status).toEqual({
      state: 'failed',
      error: 'CRASH_LOOP',
      message:
        '5 workers failed in a row; last: worker ran out of memory: limit 256 MiB (exit code 137); serving meanwhile: 1 running',
    });
  });

  it('says which worker failed and how, while it keeps its state', () => {
    const status = endpointStatus(
      endpoint(1, 'serving'),
      [worker('pending')],
      failures(2),
      DEFAULT_BACKOFF,
      undefined,
    );
    expect(status.message).toBe(
      'replacing a failed worker (2 failed in a row, last: worker ran out of memory: limit 256 MiB (exit code 137)): 1 pending',
    );
  });
});

it('a minNum 0 endpoint between a failed worker and the next says why it has none', () => {
  const status = endpointStatus(endpoint(0, 'deploying'), [], failures(1), DEFAULT_BACKOFF, undefined);
  expect(status).toEqual({
    state: 'deploying',
    error: '',
    message:
      'a worker failed (1 failed in a row, last: worker ran out of memory: limit 256 MiB (exit code 137)); scaled to zero: a request starts a new one',
  });
});

describe('an endpoint that serves while a scale-up waits for a GPU', () => {
  const waiting = () => ({ ...worker('pending'), message: 'needs 1 GPU of one product, free: h200-141g 0' });

  it('stays serving with a ready worker, the wait said as a note after what serves', () => {
    const status = endpointStatus(
      endpoint(1, 'serving'),
      [worker('running'), waiting()],
      NO_CRASHES,
      DEFAULT_BACKOFF,
      undefined,
    );
    expect(status).toEqual({
      state: 'serving',
      error: '',
      message: '1 running; on the way: 1 pending (needs 1 GPU of one product, free: h200-141g 0)',
    });
  });

  it.each(['frozen', 'suspended'] as const)(
    'stays serving while its %s worker wakes and the extra worker waits',
    (resting) => {
      const status = endpointStatus(
        endpoint(0, 'serving'),
        [worker(resting), waiting()],
        NO_CRASHES,
        DEFAULT_BACKOFF,
        undefined,
      );
      expect(status).toEqual({
        state: 'serving',
        error: '',
        message: `1 ${resting}; on the way: 1 pending (needs 1 GPU of one product, free: h200-141g 0)`,
      });
    },
  );

  it('a first deployment with a worker waiting is still deploying', () => {
    const status = endpointStatus(
      endpoint(1, 'deploying'),
      [waiting()],
      NO_CRASHES,
      DEFAULT_BACKOFF,
      undefined,
    );
    expect(status.state).toBe('deploying');
  });
});
