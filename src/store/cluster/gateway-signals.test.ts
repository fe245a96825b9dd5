/**
 * The gateway signal rows' read, on every store: the rows of the replicas asked (of one endpoint where asked), and a
 * database that cannot answer fails the read, and only it.
 */
import { describe, expect, it } from 'vitest';
import { storeTargets } from '../../../test/support/stores.js';

describe.each(storeTargets())('gateway signals on $name', (target) => {
  it("reads the asked replicas' rows, or only their rows of one endpoint", async () => {
    const { store, dispose } = await target.open();
    try {
      const load = (endpointId: string, queueLength: number) => ({
        endpointId,
        queueLength,
        oldestWaitMs: null,
        workers: { w1: { inFlight: queueLength, idleMs: 0 } },
      });
      await store.gatewaySignals.write('rep-a', [load('e1', 1), load('e2', 2)], []);
      await store.gatewaySignals.write('rep-b', [load('e1', 3)], []);
      await store.gatewaySignals.write('rep-c', [load('e1', 4)], []);
      const rows = async (endpointId?: string) =>
        (await store.gatewaySignals.read(['rep-a', 'rep-b'], endpointId)).rows
          .map((r) => `${r.replicaId}/${r.endpointId}:${r.queueLength}/${r.workers.w1?.inFlight}`)
          .sort();
      expect(await rows()).toEqual(['rep-a/e1:1/1', 'rep-a/e2:2/2', 'rep-b/e1:3/3']);
      expect(await rows('e1')).toEqual(['rep-a/e1:1/1', 'rep-b/e1:3/3']);
      expect(await rows('e3')).toEqual([]);
      // The strict requests waiting for one worker alone (worker affinity) travel with its load.
      await store.gatewaySignals.write(
        'rep-a',
        [{ ...load('e1', 1), workers: { w3: { inFlight: 0, idleMs: 0, waiting: 2, resume: true } } }],
        [],
      );
      const [row] = (await store.gatewaySignals.read(['rep-a'], 'e1')).rows;
      expect(row?.workers.w3).toMatchObject({ inFlight: 0, waiting: 2, resume: true });
    } finally {
      await dispose();
    }
  });

  it('a closed database fails the read with one rejection, none left unhandled to end the process', async () => {
    const { store, dispose } = await target.open();
    await dispose();
    // Both of its queries fail here; before they were awaited together the clock's rejection was unhandled
    // (vitest fails the run on one), which ended every replica when PostgreSQL stopped.
    await expect(store.gatewaySignals.read(['rep-a', 'rep-b'])).rejects.toThrow();
    await new Promise((resolve) => setImmediate(resolve));
  });
});
