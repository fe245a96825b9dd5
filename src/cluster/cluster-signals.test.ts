/** The pure halves of shared queue signals: a gateway's loads as rows, and the rows of several replicas summed. */
import { describe, expect, it } from 'vitest';
import { sumSignals } from './cluster-signals.js';
import { signalRows } from './signal-publisher.js';

describe('signalRows', () => {
  it('writes ages, not times: the oldest wait and each idle worker since when it was last busy', () => {
    const rows = signalRows(
      [
        {
          endpointId: 'e1',
          queueLength: 2,
          oldestEnqueuedAt: 9_000,
          workers: [
            { id: 'w1', inFlight: 3, lastBusyAt: 1_000 },
            { id: 'w2', inFlight: 0, lastBusyAt: 4_000 },
          ],
        },
        { endpointId: 'e2', queueLength: 0, oldestEnqueuedAt: null, workers: [] },
      ],
      10_000,
    );
    expect(rows).toEqual([
      {
        endpointId: 'e1',
        queueLength: 2,
        oldestWaitMs: 1_000,
        workers: { w1: { inFlight: 3, idleMs: 0 }, w2: { inFlight: 0, idleMs: 6_000 } },
      },
      { endpointId: 'e2', queueLength: 0, oldestWaitMs: null, workers: {} },
    ]);
  });
});

describe('sumSignals', () => {
  const row = (
    replicaId: string,
    endpointId: string,
    fields: Partial<Parameters<typeof sumSignals>[0][number]>,
  ) => ({
    replicaId,
    endpointId,
    queueLength: 0,
    oldestEnqueuedAt: null,
    workers: {},
    updatedAt: 0,
    ...fields,
  });

  it('adds queues and in-flight counts, keeps the oldest wait and the latest busy time, in the reader clock', () => {
    // The database's clock reads 50_000 while the reader's reads 1_000_000.
    const sums = sumSignals(
      [
        row('r1', 'e1', {
          queueLength: 2,
          oldestEnqueuedAt: 49_000,
          workers: { w1: { inFlight: 1, lastBusyAt: 50_000 }, w2: { inFlight: 0, lastBusyAt: 40_000 } },
        }),
        row('r2', 'e1', {
          queueLength: 1,
          oldestEnqueuedAt: 45_000,
          workers: { w1: { inFlight: 2, lastBusyAt: 50_000 }, w2: { inFlight: 0, lastBusyAt: 42_000 } },
        }),
        row('r2', 'e2', {}),
      ],
      50_000,
      1_000_000,
    );
    const e1 = sums.get('e1');
    expect(e1?.queueLength).toBe(3);
    expect(e1?.oldestEnqueuedAt).toBe(995_000);
    expect(e1?.workers.get('w1')).toEqual({ inFlight: 3, lastBusyAt: 1_000_000 });
    expect(e1?.workers.get('w2')).toEqual({ inFlight: 0, lastBusyAt: 992_000 });
    expect(sums.get('e2')).toEqual({ queueLength: 0, oldestEnqueuedAt: null, workers: new Map() });
  });

  it('reads a time the database wrote ahead of its read as now', () => {
    const sums = sumSignals([row('r1', 'e1', { queueLength: 1, oldestEnqueuedAt: 60_000 })], 50_000, 1_000);
    expect(sums.get('e1')?.oldestEnqueuedAt).toBe(1_000);
  });
});
