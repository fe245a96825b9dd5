/**
 * What the controller tells the usage ledger, over the fake runtime: a worker counted from its placement (starting)
 * to ready (idle) to its removal, with its GPU product and count, and a new controller on the same runtime (a
 * restart) going on with the adopted worker's span.
 */
import { describe, expect, it } from 'vitest';
import { controllerHarness } from '../../../test/support/controller-harness.js';
import type { WorkerHolding, WorkerUsageSink, WorkerUsageState } from '../../ports/usage.js';

class Told implements WorkerUsageSink {
  readonly states: string[] = [];
  readonly holdings = new Map<string, WorkerHolding>();
  known: string[] = [];
  workerState(holding: WorkerHolding, state: WorkerUsageState): void {
    if (this.states.at(-1) !== state) this.states.push(state);
    this.holdings.set(holding.workerId, holding);
  }
  workerBusy(): void {}
  workersKnown(workerIds: ReadonlySet<string>): void {
    this.known = [...workerIds];
  }
}

describe('the usage the controller tells', () => {
  it('tells a worker from placement to ready to its removal, with what it holds', async () => {
    const told = new Told();
    const h = await controllerHarness({ usage: told });
    try {
      const endpoint = await h.create();
      h.controller.start();
      await h.eventually(() => expect(told.states).toEqual(['starting', 'idle']));
      const [holding] = told.holdings.values();
      expect(holding).toMatchObject({ endpointId: endpoint.id, gpuProductId: 'h100-80g', gpuCount: 1 });
      await h.eventually(() => expect(told.known).toEqual([holding?.workerId]));
      await h.update(endpoint, { workers: { minWorkers: 0, maxWorkers: 0 } });
      await h.eventually(() => expect(told.states).toEqual(['starting', 'idle', 'closed']));
    } finally {
      await h.close();
    }
  });
});
