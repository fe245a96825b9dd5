/**
 * A leader that stepped down ends its last reconcile pass quietly: the LeaseLostError its fence throws is expected
 * then, and is logged once at info without a stack, never at error. The controller harness (SQLite store, fake
 * runtime, manual timers) with a pino logger whose lines are captured.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { LeaseLostError } from '../store/cluster/leases.js';

let h: ControllerHarness | undefined;
afterEach(async () => {
  await h?.close();
});

it('logs the lease lost on a step-down at info, once and without a stack, and nothing at error', async () => {
  const lines: { level: number; msg: string; err?: unknown; lease?: string; token?: number }[] = [];
  const claim = { name: 'controller', holder: 'rep-a', token: 7 };
  h = await controllerHarness({
    logger: pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) }),
    // The elector's fence after a graceful step-down: the term is over, so every write's claim throws.
    fence: {
      claim: () => {
        throw new LeaseLostError(claim);
      },
    },
  });
  await h.create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } });
  h.controller.start();
  // Several passes, each ended by the lease: said once while it repeats.
  for (let pass = 0; pass < 5; pass++) {
    await h.flush();
    await h.timers.advanceSettling(20);
  }

  const leaseLines = lines.filter((line) => line.lease === 'controller');
  expect(leaseLines).toEqual([
    expect.objectContaining({
      level: 30,
      msg: 'reconcile pass stopped: the lease is no longer held',
      token: 7,
    }),
  ]);
  expect(leaseLines[0]).not.toHaveProperty('err');
  expect(lines.filter((line) => line.level >= 50)).toEqual([]);
  expect(JSON.stringify(lines)).not.toContain('LeaseLostError');
});
