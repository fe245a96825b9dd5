/**
 * The controller with an owner past its budget (the budget service over a ledger in memory, the fake runtime):
 * the worker scaling asks for beyond minNum stays pending, unplaced, its state message (in the store too) saying
 * BUDGET_EXCEEDED, while minNum's worker runs; once the budget allows again, the held worker starts.
 */
import { afterEach, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import type { UsageReader, UsageTotals } from '../ports/usage.js';
import { BudgetService } from '../service/budget-service.js';
import type { ScalingAdvisor } from './controller-options.js';

let h: ControllerHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The month's totals of every owner, set by the test. */
function ledger(): UsageReader & { gpuSeconds: number } {
  const reader = {
    gpuSeconds: 0,
    query: async () => [],
    totals: async (): Promise<UsageTotals> => ({
      gpuSeconds: {
        downloading: 0,
        starting: 0,
        active: reader.gpuSeconds,
        idle: 0,
        frozen: 0,
        suspended: 0,
      },
      timeBilledMs: reader.gpuSeconds * 1000,
      amount: 0,
      currency: 'USD',
    }),
  };
  return reader;
}

const wantsTwo: ScalingAdvisor = {
  advise: () => ({ desired: 2, victims: [] }),
  retain: () => {},
  onRescale: () => () => {},
};

it('holds the worker beyond minNum with BUDGET_EXCEEDED while minNum runs, and starts it once the budget allows', async () => {
  const usage = ledger();
  usage.gpuSeconds = 10;
  let now = 0;
  const budgets = new BudgetService({
    usage,
    settings: { owners: { 'owner-a': { gpuHoursPerMonth: 0.001 } } },
    clock: () => now,
    isOperator: async () => false,
  });
  h = await controllerHarness({ budgets, scaling: wantsTwo });
  const harness = h;
  now = harness.timers.now;
  const endpoint = await harness.create({ workers: { minWorkers: 1, maxWorkers: 3, gpusPerWorker: 1 } });
  expect(endpoint.ownerId).toBe('owner-a');
  expect((await budgets.read('owner-a'))?.state).toBe('exceeded');
  harness.controller.start();

  await harness.eventually(() => {
    const workers = harness.controller.workersOf(endpoint.id);
    expect(workers.filter((w) => w.state === 'running')).toHaveLength(1);
    expect(workers.filter((w) => w.state === 'pending')).toEqual([
      expect.objectContaining({ budgetHeld: true, message: expect.stringMatching(/^BUDGET_EXCEEDED: /) }),
    ]);
  });
  const held = harness.controller.workersOf(endpoint.id).find((w) => w.state === 'pending');
  await harness.eventually(async () => {
    const rows = await harness.store.workers.listByEndpoint(endpoint.id);
    expect(rows.find((row) => row.id === held?.id)?.status.message).toMatch(/GPU-hour budget .* resets at/);
  });
  // The requests it would serve wait, saying why (the gateway's QUEUE_TIMEOUT names it).
  expect(harness.routes.conditionOf(endpoint.id)).toEqual({ waitingFor: held?.message });

  // A new month: the use counts from 0, the next read lets the held worker start.
  usage.gpuSeconds = 0;
  await harness.eventually(() => {
    now = harness.timers.now + 60_000;
    expect(harness.controller.workersOf(endpoint.id).filter((w) => w.state === 'running')).toHaveLength(2);
  });
});
