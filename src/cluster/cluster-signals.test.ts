/**
 * The pure halves of shared queue signals: a gateway's loads as rows, the rows of several replicas summed, and the
 * other replicas' load of one endpoint that `endpoint/metrics` adds (read afresh, on a follower too).
 */
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { ClusterSignals, sumSignals } from './cluster-signals.js';
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
    expect(sums.get('e2')).toEqual({
      queueLength: 0,
      strictWaiting: 0,
      oldestEnqueuedAt: null,
      workers: new Map(),
    });
  });

  it('adds the strict requests each replica has waiting for one worker, strict-resume winning (worker affinity)', () => {
    const sums = sumSignals(
      [
        row('r1', 'e1', {
          queueLength: 3,
          workers: { w1: { inFlight: 1, lastBusyAt: 0, waiting: 2, resume: false } },
        }),
        row('r2', 'e1', {
          queueLength: 1,
          workers: { w1: { inFlight: 1, lastBusyAt: 0, waiting: 1, resume: true } },
        }),
        row('r2', 'e1', {
          queueLength: 1,
          workers: { w3: { inFlight: 0, lastBusyAt: 0, waiting: 1, resume: false } },
        }),
      ],
      0,
      0,
    );
    const e1 = sums.get('e1');
    // The queue the API shows counts them; the scaling queue (queueSignal) leaves them out.
    expect(e1?.queueLength).toBe(5);
    expect(e1?.strictWaiting).toBe(4);
    expect(e1?.workers.get('w1')?.awaited).toBe('resume');
    expect(e1?.workers.get('w3')?.awaited).toBe('strict');
  });

  it('reads a time the database wrote ahead of its read as now', () => {
    const sums = sumSignals([row('r1', 'e1', { queueLength: 1, oldestEnqueuedAt: 60_000 })], 50_000, 1_000);
    expect(sums.get('e1')?.oldestEnqueuedAt).toBe(1_000);
  });
});

describe('ClusterSignals.othersLoad', () => {
  it("sums the live others' rows of the endpoint, read afresh without leading", async () => {
    const timers = new ManualTimers(1_000_000);
    const asked: unknown[] = [];
    const row = (replicaId: string, queueLength: number, workers: Record<string, number>) => ({
      replicaId,
      endpointId: 'e1',
      queueLength,
      oldestEnqueuedAt: null,
      workers: Object.fromEntries(
        Object.entries(workers).map(([id, inFlight]) => [id, { inFlight, lastBusyAt: 50_000 }]),
      ),
      updatedAt: 50_000,
    });
    const signals = new ClusterSignals({
      local: { queueSignal: () => undefined, onQueued: () => () => undefined },
      read: async (ids, endpointId) => {
        asked.push([ids, endpointId]);
        return { rows: [row('r1', 2, { w1: 1, w2: 0 }), row('r2', 1, { w1: 2, w3: 4 })], now: 50_000 };
      },
      others: () => ['r1', 'r2'],
      clock: () => timers.now,
      timers,
      pollMs: 1_000,
      logger: { warn: () => undefined },
    });
    expect(await signals.othersLoad('e1')).toEqual({ queueLength: 3, inFlight: 7 });
    expect(await signals.othersLoad('e2')).toEqual({ queueLength: 0, inFlight: 0 });
    expect(asked).toEqual([
      [['r1', 'r2'], 'e1'],
      [['r1', 'r2'], 'e2'],
    ]);
    // No read left scheduled: it is not the leader's polling.
    expect(timers.count).toBe(0);
  });
});
