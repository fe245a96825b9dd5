/**
 * `GET cluster` (admin only) lists the replicas from their heartbeats and names the leader from the controller's
 * lease; `/healthz` stays liveness and `/readyz` answers 503 when the database does not answer. SQLite and
 * PostgreSQL.
 */
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { describeOnce, storeTargets } from '../../test/support/stores.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { Database } from '../store/schema.js';
import type { Store } from '../store/store.js';

describe.each(storeTargets())('the cluster routes on $name', (target) => {
  let store: Store;
  let db: Kysely<Database>;
  let dispose: () => Promise<void>;
  let api: TestApi;
  let adminKey: string;
  let leading = false;

  beforeEach(async () => {
    ({ store, db, dispose } = await target.open());
    leading = false;
    api = await createTestApi(store, { replica: { id: 'rep-b', leading: () => leading } });
    adminKey = (
      await new ApiKeyService({ store, clock: Date.now }).create({ ownerId: 'ops', name: 'o', admin: true })
    ).key;
  });
  afterEach(async () => {
    await api.app.close();
    await dispose();
  });

  const beat = (id: string, inFlight = 0) =>
    store.replicas.beat({
      id,
      host: `host-${id}`,
      pid: 42,
      apiUrl: `http://${id}:8080`,
      inFlight,
      queued: 1,
    });

  it('lists every replica, which leads and since when; only for admin keys', async () => {
    await beat('rep-a');
    await beat('rep-b', 3);
    const claim = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    const lease = await store.leases.read('controller');

    const answer = await api.call('GET', 'cluster', undefined, adminKey);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      database: target.name === 'postgres' ? 'postgres' : 'sqlite',
      self: 'rep-b',
      leader: {
        replica: 'rep-a',
        since: new Date(lease?.acquiredAt ?? 0).toISOString(),
        token: claim?.token,
      },
    });
    const replicas = answer.body.replicas as Record<string, unknown>[];
    expect(replicas.map((r) => [r.id, r.leader, r.alive, r.inFlight, r.queued, r.host, r.pid])).toEqual([
      ['rep-a', true, true, 0, 1, 'host-rep-a', 42],
      ['rep-b', false, true, 3, 1, 'host-rep-b', 42],
    ]);
    expect(Date.parse(String(replicas[0]?.lastSeenAt))).toBeGreaterThanOrEqual(
      Date.parse(String(replicas[0]?.startedAt)),
    );

    const refused = await api.call('GET', 'cluster', undefined, api.keyA);
    expect(refused.status).toBe(401);
    expect(refused.body.reason).toBe('UNAUTHENTICATED');
    expect(refused.body.message).toContain('admin');
    expect((await api.call('GET', 'cluster', undefined, null)).status).toBe(401);
  });

  it('shows no leader once the lease is released, and a replica as not alive once its beats stop', async () => {
    await beat('rep-a');
    const claim = await store.leases.tryAcquire('controller', 'rep-a', 60_000);
    if (!claim) throw new Error('not acquired');
    await store.leases.release(claim);
    // Heartbeats 6 s old make a replica not alive; its row was written with the database's clock, moved back here.
    await db
      .updateTable('replicas')
      .set((eb) => ({ last_seen_at: eb('last_seen_at', '-', 7_000) }))
      .execute();
    const answer = await api.call('GET', 'cluster', undefined, adminKey);
    expect(answer.body.leader).toBeNull();
    expect(answer.body.replicas).toMatchObject([{ id: 'rep-a', alive: false, leader: false }]);
    // Rows of replicas gone long enough are pruned; a clean stop removes its own.
    await store.replicas.prune(5_000);
    await beat('rep-b');
    await store.replicas.remove('rep-b');
    expect((await store.replicas.list()).replicas).toEqual([]);
  });

  it('/healthz is liveness as before; /readyz is 200 while the database answers and says who leads', async () => {
    const health = await api.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok', ready: true });
    leading = true;
    const ready = await api.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({
      status: 'ok',
      ready: true,
      database: 'ok',
      replica: 'rep-b',
      leader: true,
    });
  });

  it('/readyz answers 503 once the database cannot be reached, while /healthz stays 200', async () => {
    await store.close();
    const ready = await api.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({
      status: 'unavailable',
      ready: false,
      reason: 'the database did not answer within 2 s',
      database: 'unreachable',
      replica: 'rep-b',
      leader: false,
    });
    expect((await api.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});

describeOnce('/healthz while the database does not take the heartbeat', () => {
  it('stays 200 (liveness) and says the database is out, without a query of its own; as before once it is back', async () => {
    const opened = await (storeTargets()[0] as NonNullable<ReturnType<typeof storeTargets>[0]>).open();
    let accepted = false;
    const api = await createTestApi(opened.store, { databaseTookLastBeat: () => accepted });
    try {
      const out = await api.app.inject({ method: 'GET', url: '/healthz' });
      expect(out.statusCode).toBe(200);
      expect(out.json()).toEqual({
        status: 'ok',
        ready: false,
        reason: "the database did not take this replica's last heartbeat",
        database: 'unreachable',
      });
      accepted = true;
      expect((await api.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({
        status: 'ok',
        ready: true,
      });
    } finally {
      await api.app.close();
      await opened.dispose();
    }
  });
});
