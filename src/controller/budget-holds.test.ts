/**
 * An owner past its budget: the plan starts no worker beyond minNum (new ones are added held, waiting ones stay
 * held with the BUDGET_EXCEEDED sentence), never touches a worker already started, and holds nothing otherwise.
 */
import { describe, expect, it } from 'vitest';
import { sampleEndpoint, sampleWorker } from '../../test/support/fixtures.js';
import { holdChanges } from './budget-holds.js';
import { NO_CRASHES } from './crashes/backoff.js';
import { type EndpointPlanInput, planEndpoint } from './planner.js';

const SPENT = 'BUDGET_EXCEEDED: the monthly budget is spent';
const endpoint = (min: number, max: number) =>
  sampleEndpoint({ patch: { workers: { minWorkers: min, maxWorkers: max } } });

const plan = (input: Partial<EndpointPlanInput> & Pick<EndpointPlanInput, 'endpoint'>) =>
  planEndpoint({
    workers: [],
    desiredWorkers: input.endpoint.spec.workers.minWorkers,
    crash: NO_CRASHES,
    now: 10_000,
    startupTimeoutMs: 60_000,
    unhealthyTimeoutMs: 30_000,
    ...input,
  });

describe('planEndpoint with the owner past its budget', () => {
  it('adds the workers scaling asks for beyond minNum held, those up to minNum free', () => {
    expect(plan({ endpoint: endpoint(1, 4), desiredWorkers: 3, budgetExceeded: SPENT })).toEqual([
      { type: 'add', count: 1 },
      { type: 'add', count: 2, held: SPENT },
    ]);
    expect(plan({ endpoint: endpoint(1, 4), desiredWorkers: 3 })).toEqual([{ type: 'add', count: 3 }]);
  });

  it('keeps running workers and holds the waiting ones beyond minNum, oldest first free', () => {
    const running = sampleWorker('running');
    const older = sampleWorker('pending');
    const newer = sampleWorker('pending');
    const actions = plan({
      endpoint: endpoint(2, 4),
      workers: [running, older, newer],
      desiredWorkers: 3,
      budgetExceeded: SPENT,
    });
    expect(actions).toEqual([{ type: 'hold', workerId: newer.id, message: SPENT }]);
  });

  it('never removes or holds a started worker beyond minNum: running work goes on', () => {
    const workers = [sampleWorker('running'), sampleWorker('running'), sampleWorker('starting')];
    const actions = plan({ endpoint: endpoint(0, 4), workers, desiredWorkers: 3, budgetExceeded: SPENT });
    expect(actions).toEqual([]);
  });

  it('with minNum 0 and nothing started, every worker scaling asks for waits', () => {
    expect(plan({ endpoint: endpoint(0, 2), desiredWorkers: 1, budgetExceeded: SPENT })).toEqual([
      { type: 'add', count: 1, held: SPENT },
    ]);
  });
});

describe("holdChanges: what the plan's holds change on the workers", () => {
  it('holds the workers it names with its message, lets go a held one it no longer names, leaves the rest', () => {
    const toHold = sampleWorker('pending');
    const heldAlready = sampleWorker('pending', { budgetHeld: true, message: SPENT });
    const heldBefore = sampleWorker('pending', { budgetHeld: true, message: SPENT });
    const free = sampleWorker('pending');
    const holds = new Map([
      [toHold.id, SPENT],
      [heldAlready.id, SPENT],
    ]);
    const changes = holdChanges([toHold, heldAlready, heldBefore, free], holds);
    expect(changes.map((c) => [c.worker.id, c.message])).toEqual([
      [toHold.id, SPENT],
      [heldBefore.id, undefined],
    ]);
  });

  it('holds again with a new message a worker held with an old one (the standing changed)', () => {
    const held = sampleWorker('pending', { budgetHeld: true, message: 'BUDGET_EXCEEDED: old' });
    expect(holdChanges([held], new Map([[held.id, SPENT]]))).toEqual([{ worker: held, message: SPENT }]);
  });
});
