/**
 * What the controller tells the gateway of an endpoint that cannot serve: a table of the pure decision, then the
 * controller publishing it for a pull that fails and taking it back when its owner fixes the image.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import type { EndpointState, StateReport } from '../domain/endpoint.js';
import { endpointCondition, statusDuringOutage } from './endpoint-condition.js';
import type { ManagedWorker } from './workers/managed-worker.js';

const endpoint = sampleEndpoint({ patch: { workers: { minWorkers: 0, maxWorkers: 2 } } });
const noWorkers = sampleEndpoint({ patch: { workers: { minWorkers: 0, maxWorkers: 0 } } });

function worker(state: ManagedWorker['state'], message: string, createdAt: number): ManagedWorker {
  return {
    id: `w${createdAt}`,
    endpointId: endpoint.id,
    ownerId: endpoint.ownerId,
    revision: 1,
    state,
    error: state === 'failed' ? 'RUNTIME_ERROR' : '',
    message,
    healthy: state === 'running',
    healthCause: '',
    gpuUuids: [],
    address: null,
    createdAt,
    startedAt: null,
    readyAt: null,
  };
}

const status = (state: EndpointState, error = '', message = ''): StateReport<EndpointState> => ({
  state,
  error,
  message,
});

describe('endpointCondition with the owner past its budget', () => {
  const SPENT = 'BUDGET_EXCEEDED: the monthly budget is spent; it resets at 2026-12-01T00:00:00.000Z';

  it('refuses with BUDGET_EXCEEDED while no worker of the endpoint is up or on its way', () => {
    const held = { ...worker('pending', SPENT, 1), budgetHeld: true as const };
    for (const workers of [[], [held]]) {
      expect(
        endpointCondition({
          endpoint,
          status: status('deploying'),
          workers,
          runtimeOutage: undefined,
          budgetExceeded: SPENT,
        }),
      ).toEqual({
        refusal: {
          kind: 'budget-exceeded',
          reason: 'BUDGET_EXCEEDED',
          message: SPENT,
          lastWorkerMessage: workers.length > 0 ? SPENT : '',
        },
      });
    }
  });

  it('lets requests wait for a worker that serves or starts, saying what the held one waits for', () => {
    const starting = worker('starting', 'waiting for its health check', 1);
    const held = { ...worker('pending', SPENT, 2), budgetHeld: true as const };
    expect(
      endpointCondition({
        endpoint,
        status: status('deploying'),
        workers: [starting, held],
        runtimeOutage: undefined,
        budgetExceeded: SPENT,
      }),
    ).toEqual({ waitingFor: SPENT });
  });
});

describe('endpointCondition', () => {
  it.each([
    {
      name: 'a failed pull: refused, naming the reason and the last worker',
      input: {
        endpoint,
        status: status('failed', 'IMAGE_PULL_FAILED', 'cannot pull image nope:1: not found'),
        workers: [worker('failed', 'cannot pull image nope:1: not found', 1)],
      },
      expected: {
        refusal: {
          kind: 'failed',
          reason: 'IMAGE_PULL_FAILED',
          message: 'cannot pull image nope:1: not found',
          lastWorkerMessage: 'cannot pull image nope:1: not found',
        },
      },
    },
    {
      name: 'a crash loop: the newest failed worker is the last word',
      input: {
        endpoint,
        status: status('failed', 'CRASH_LOOP', '5 workers failed in a row'),
        workers: [worker('failed', 'exited with code 1', 1), worker('failed', 'exited with code 3', 2)],
      },
      expected: {
        refusal: {
          kind: 'failed',
          reason: 'CRASH_LOOP',
          message: '5 workers failed in a row',
          lastWorkerMessage: 'exited with code 3',
        },
      },
    },
    {
      name: 'never placeable: NO_CAPACITY',
      input: { endpoint, status: status('failed', 'INSUFFICIENT_GPU', 'needs 16 GPUs'), workers: [] },
      expected: {
        refusal: {
          kind: 'no-capacity',
          reason: 'INSUFFICIENT_GPU',
          message: 'needs 16 GPUs',
          lastWorkerMessage: '',
        },
      },
    },
    {
      name: 'maxNum 0',
      input: { endpoint: noWorkers, status: status('serving'), workers: [] },
      expected: { refusal: { kind: 'no-workers', reason: 'NO_WORKERS' } },
    },
    {
      name: 'the runtime unreachable',
      input: {
        endpoint,
        status: status('serving'),
        workers: [],
        runtimeOutage: 'container engine unreachable since 12:01:03 UTC: connect ECONNREFUSED',
      },
      expected: {
        refusal: {
          kind: 'runtime-unavailable',
          reason: 'RUNTIME_UNAVAILABLE',
          message: 'container engine unreachable since 12:01:03 UTC: connect ECONNREFUSED',
        },
      },
    },
    {
      name: 'a worker waiting for a GPU: no refusal (it is retried), but what requests wait for',
      input: {
        endpoint,
        status: status('deploying', '', '1 pending'),
        workers: [worker('pending', 'needs 1 GPU of h100-80g, 0 free', 1)],
      },
      expected: { waitingFor: 'needs 1 GPU of h100-80g, 0 free' },
    },
    {
      name: 'a worker that crashed once and is being replaced: no refusal',
      input: {
        endpoint,
        status: status('deploying', '', 'waiting for workers'),
        workers: [worker('failed', 'exited with code 3', 1)],
      },
      expected: { waitingFor: 'waiting for workers' },
    },
    {
      name: 'serving: nothing to say',
      input: { endpoint, status: status('serving', '', '1 running'), workers: [worker('running', '', 1)] },
      expected: undefined,
    },
    {
      name: 'stopped: the gateway says so itself',
      input: {
        endpoint: { ...endpoint, desired: 'stopped' as const },
        status: status('stopped'),
        workers: [],
      },
      expected: undefined,
    },
  ])('$name', ({ input, expected }) => {
    const condition = endpointCondition({ runtimeOutage: undefined, ...input });
    if (expected === undefined) expect(condition).toBeUndefined();
    else expect(condition).toMatchObject(expected);
  });
});

describe('statusDuringOutage', () => {
  const outage = 'container engine unreachable since 12:01:03 UTC: connect ECONNREFUSED';
  it('an endpoint with a healthy worker still serves and says no new worker can start', () => {
    expect(
      statusDuringOutage(status('serving', '', '1 running'), [worker('running', '', 1)], outage),
    ).toEqual(status('serving', '', `1 running; ${outage}: no new worker can start`));
  });
  it('one without is failed (RUNTIME_UNAVAILABLE); stopped and failed ones keep their reason', () => {
    expect(statusDuringOutage(status('serving', '', 'scaled to zero'), [], outage)).toEqual(
      status('failed', 'RUNTIME_UNAVAILABLE', outage),
    );
    const pull = status('failed', 'IMAGE_PULL_FAILED', 'cannot pull');
    expect(statusDuringOutage(pull, [], outage)).toBe(pull);
    expect(statusDuringOutage(status('stopped'), [], outage)).toEqual(status('stopped'));
  });
});

describe('the controller publishes why an endpoint cannot serve', () => {
  let h: ControllerHarness;
  afterEach(() => h.close());

  it('a pull that fails refuses at once; fixing the image with an update serves again, even at minNum 0', async () => {
    h = await controllerHarness();
    h.runtime.failPull('ghcr.io/nobody/nothing:1');
    const endpoint = await h.create({ image: { ref: 'ghcr.io/nobody/nothing:1' } });
    h.controller.start();
    await h.eventually(() =>
      expect(h.routes.conditionOf(endpoint.id)?.refusal).toMatchObject({
        kind: 'failed',
        reason: 'IMAGE_PULL_FAILED',
        lastWorkerMessage: expect.stringContaining('ghcr.io/nobody/nothing:1'),
      }),
    );
    // The owner fixes the image and goes to minNum 0: the new image is pulled at once, without a request.
    await h.update(endpoint, { image: { ref: 'ghcr.io/somebody/something:1' }, workers: { minWorkers: 0 } });
    await h.eventually(() => expect(h.routes.conditionOf(endpoint.id)?.refusal).toBeUndefined());
    expect((await h.store.endpoints.get('owner-a', endpoint.id))?.status.state).toBe('serving');
  });

  it('maxNum 0 is refused as NO_WORKERS, and the status says why', async () => {
    h = await controllerHarness();
    const endpoint = await h.create({ workers: { minWorkers: 0, maxWorkers: 0, gpusPerWorker: 1 } });
    h.controller.start();
    await h.eventually(() => expect(h.routes.conditionOf(endpoint.id)?.refusal?.kind).toBe('no-workers'));
    expect((await h.store.endpoints.get('owner-a', endpoint.id))?.status.message).toContain('maxNum is 0');
  });
});
