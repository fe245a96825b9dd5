/**
 * Each endpoint's last traffic and idle step, on every store: a write only moves the traffic time forward (replicas'
 * flushes in any order keep the newest), the step is kept beside it, and deleted endpoints' rows are forgotten; the
 * upgrade that adds the table gives the endpoints then live the upgrade's time as their last traffic.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint, storeEndpoint } from '../../../test/support/fixtures.js';
import { storeTargets } from '../../../test/support/stores.js';

describe.each(storeTargets())('endpoint activity on $name', (target) => {
  it('keeps the newest traffic of any write and the last step, and forgets deleted endpoints', async () => {
    const { store, sibling, dispose } = await target.open();
    try {
      const [a, b] = [sampleEndpoint(), sampleEndpoint()];
      for (const e of [a, b]) if (e) await storeEndpoint(store, e);
      if (!a || !b) throw new Error('no endpoints');
      await store.endpointActivity.recordTraffic(new Map([[a.id, 2000]]));
      // Another replica's older mark, written later, moves nothing; a newer one does.
      await sibling().endpointActivity.recordTraffic(
        new Map([
          [a.id, 1000],
          [b.id, 500],
        ]),
      );
      await store.endpointActivity.recordIdleStep(a.id, 1, 9000);
      expect(await store.endpointActivity.all()).toEqual(
        new Map([
          [a.id, { trafficAt: 2000, idleStep: { index: 1, at: 9000 } }],
          [b.id, { trafficAt: 500, idleStep: null }],
        ]),
      );
      await store.endpointActivity.recordTraffic(new Map([[a.id, 3000]]));
      expect((await store.endpointActivity.all()).get(a.id)).toEqual({
        trafficAt: 3000,
        idleStep: { index: 1, at: 9000 },
      });
      await deleteEndpoint(store, b);
      await store.endpointActivity.forgetDeleted();
      expect([...(await store.endpointActivity.all()).keys()]).toEqual([a.id]);
    } finally {
      await dispose();
    }
  });

  it('gives the live endpoints of an upgraded database the upgrade as their last traffic', async () => {
    const { store, db, dispose } = await target.open();
    try {
      const [live, gone] = [sampleEndpoint(), sampleEndpoint()];
      for (const e of [live, gone]) if (e) await storeEndpoint(store, e);
      if (!live || !gone) throw new Error('no endpoints');
      await deleteEndpoint(store, gone);
      // Back to the schema before migration 0022.
      await db.schema.dropTable('endpoint_activity').execute();
      await sql`delete from kysely_migration where name = '0022-endpoint-activity'`.execute(db);
      const before = Date.now();
      expect(await store.migrate()).toEqual(['0022-endpoint-activity']);
      const rows = await store.endpointActivity.all();
      expect([...rows.keys()]).toEqual([live.id]);
      expect(rows.get(live.id)?.trafficAt).toBeGreaterThanOrEqual(before);
      expect(rows.get(live.id)?.idleStep).toBeNull();
    } finally {
      await dispose();
    }
  });
});
