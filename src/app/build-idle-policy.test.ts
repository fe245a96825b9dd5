/**
 * The idle policies as `corral serve` builds them, on a real store and manual time: maxWorkers lowered step by step
 * with an `idle-policy` event, never raised by later traffic; with two replicas on one database, a follower's traffic
 * counts and only the leader changes anything; a restart keeps the last traffic written.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sampleEndpoint, storeEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { IdlePolicySettings } from '../domain/idle-policy.js';
import type { Store } from '../store/store.js';
import { buildIdlePolicies, type IdlePolicies, idleIntervalMs } from './build-idle-policy.js';

const MINUTE = 60_000;
/** RunPod's policy in minutes instead of days: 3 minutes to 2 workers, 7 minutes to 0. */
const POLICIES: IdlePolicySettings = {
  defaults: {
    steps: [
      { afterDays: 3 / 1440, maxWorkers: 2 },
      { afterDays: 7 / 1440, maxWorkers: 0 },
    ],
  },
  owners: { calm: 'off' },
};
const T0 = 1_800_000_000_000;
const quiet = { info: () => {}, warn: () => {} };

describe('idleIntervalMs', () => {
  it('is a tenth of the shortest step, within a second and a minute', () => {
    expect(idleIntervalMs(POLICIES)).toBe(18_000);
    expect(idleIntervalMs({ owners: {} })).toBe(60_000);
    expect(idleIntervalMs({ defaults: { steps: [{ afterDays: 3, maxWorkers: 2 }] }, owners: {} })).toBe(
      60_000,
    );
    expect(idleIntervalMs({ owners: { a: { steps: [{ afterDays: 1e-6, maxWorkers: 0 }] } } })).toBe(1000);
  });
});

describe.each(storeTargets())('idle policies on $name', (target) => {
  const opened: { dispose(): Promise<void> }[] = [];
  const built: IdlePolicies[] = [];
  afterEach(async () => {
    for (const b of built.splice(0)) await b.close();
    for (const o of opened.splice(0)) await o.dispose();
  });

  async function setup() {
    const db = await target.open();
    opened.push(db);
    return { ...db, timers: new ManualTimers(T0) };
  }

  function replica(store: Store, timers: ManualTimers, leading: { now: boolean }) {
    const idle = buildIdlePolicies({
      store,
      policies: POLICIES,
      leading: () => leading.now,
      clock: () => timers.now,
      timers,
      logger: quiet,
    });
    idle.start();
    built.push(idle);
    return idle;
  }

  /** Advances the clock tick by tick, letting each replica's pass and writes finish before the next. */
  async function advance(timers: ManualTimers, ms: number, ...replicas: IdlePolicies[]) {
    const end = timers.now + ms;
    while (timers.now < end) {
      timers.advance(Math.min(1000, end - timers.now));
      for (const r of replicas) await r.settled();
    }
  }

  async function endpoint(
    store: Store,
    ownerId = 'owner-a',
    maxWorkers = 5,
    minWorkers = 0,
  ): Promise<Endpoint> {
    const e = sampleEndpoint({ ownerId, at: T0, patch: { workers: { maxWorkers, minWorkers } } });
    await storeEndpoint(store, e, T0);
    return e;
  }

  const maxWorkers = async (store: Store, e: Endpoint) =>
    (await store.endpoints.get(e.ownerId, e.id))?.spec.workers.maxWorkers;
  const idleEvents = async (store: Store, e: Endpoint) =>
    (await store.events.list(e.id, { afterId: 0, limit: 100 })).filter((ev) => ev.type === 'idle-policy');

  it('lowers maxWorkers to 2 after 3 minutes without traffic and to 0 after 7, and traffic does not raise it', async () => {
    const { store, db, timers } = await setup();
    const e = await endpoint(store);
    const calm = await endpoint(store, 'calm');
    const warm = await endpoint(store, 'owner-a', 4, 1);
    const idle = replica(store, timers, { now: true });
    idle.mark(e.id, T0 + MINUTE);
    await advance(timers, 3.5 * MINUTE, idle);
    expect(await maxWorkers(store, e)).toBe(5);
    await advance(timers, 1 * MINUTE, idle);
    expect(await maxWorkers(store, e)).toBe(2);
    const [first] = await idleEvents(store, e);
    expect(first?.message).toBe(
      `idle policy: no traffic since ${new Date(T0 + MINUTE).toISOString()} (3 minutes or more), maxWorkers ` +
        `lowered from 5 to 2 (step 1: 2 after 3 minutes); traffic does not raise it again: ` +
        `corral endpoints update ${e.id} --max-workers 5`,
    );
    expect(first?.data).toMatchObject({ step: 1, from: 5, to: 2, fields: ['workers'] });
    await advance(timers, 4 * MINUTE, idle);
    expect(await maxWorkers(store, e)).toBe(0);
    expect((await idleEvents(store, e)).map((ev) => ev.data.to)).toEqual([2, 0]);
    // The owner whose policy is off keeps its 5; minWorkers 1 stops the lowering at 1.
    expect(await maxWorkers(store, calm)).toBe(5);
    expect(await maxWorkers(store, warm)).toBe(1);
    // Traffic now starts a new idle time but raises nothing.
    idle.mark(e.id, timers.now);
    await advance(timers, 10 * MINUTE, idle);
    expect(await maxWorkers(store, e)).toBe(0);
    expect(await idleEvents(store, e)).toHaveLength(2);
    // maxWorkers alone rolls nothing out (the revision stays), and each change is audited as the idle policy's.
    expect((await store.endpoints.get(e.ownerId, e.id))?.revision).toBe(1);
    const audit = await db
      .selectFrom('audit_log')
      .select(['actor', 'action'])
      .where('target_id', '=', e.id)
      .where('actor', '=', 'idle-policy')
      .execute();
    expect(audit).toEqual([
      { actor: 'idle-policy', action: 'endpoint.idle-policy' },
      { actor: 'idle-policy', action: 'endpoint.idle-policy' },
    ]);
  });

  it("takes an owner's raise after a step as it is until the next step is due", async () => {
    const { store, timers } = await setup();
    const e = await endpoint(store);
    const idle = replica(store, timers, { now: true });
    await advance(timers, 3.5 * MINUTE, idle);
    expect(await maxWorkers(store, e)).toBe(2);
    await store.endpoints.mutate(
      e.ownerId,
      e.id,
      (cur) => ({
        next: { ...cur, spec: { ...cur.spec, workers: { ...cur.spec.workers, maxWorkers: 5 } } },
        events: [],
      }),
      () => ({ at: timers.now, ownerId: e.ownerId, actor: 'k', action: 'endpoint.update', targetId: e.id }),
    );
    await advance(timers, 3 * MINUTE, idle);
    expect(await maxWorkers(store, e)).toBe(5);
    await advance(timers, 1 * MINUTE, idle);
    expect(await maxWorkers(store, e)).toBe(0);
  });

  it("with two replicas, counts the follower's traffic and lets only the leader change the endpoint", async () => {
    const { store, sibling, timers } = await setup();
    const e = await endpoint(store);
    const leads = { now: true };
    const follows = { now: false };
    const leader = replica(store, timers, leads);
    const follower = replica(sibling(), timers, follows);
    // Traffic through the follower's gateway only, 2 minutes in: written by its own flush.
    await advance(timers, 2 * MINUTE, leader, follower);
    follower.mark(e.id, timers.now);
    // 4.5 minutes after its creation, 2.5 after the follower's traffic.
    await advance(timers, 2.5 * MINUTE, leader, follower);
    expect(await maxWorkers(store, e)).toBe(5);
    await advance(timers, 1 * MINUTE, leader, follower);
    expect(await maxWorkers(store, e)).toBe(2);
    expect(await idleEvents(store, e)).toHaveLength(1);
    // The leader's lease lapses and no replica leads: the second step, due 7 minutes after the traffic, waits.
    leads.now = false;
    await advance(timers, 5 * MINUTE, leader, follower);
    expect(await maxWorkers(store, e)).toBe(2);
    // The other replica is elected: its next tick takes the step.
    follows.now = true;
    await advance(timers, 20_000, leader, follower);
    expect(await maxWorkers(store, e)).toBe(0);
    expect((await idleEvents(store, e)).map((ev) => ev.data.to)).toEqual([2, 0]);
  });

  it('keeps the last traffic across a restart: the new process counts from it, not from the creation', async () => {
    const { store, timers } = await setup();
    const e = await endpoint(store);
    const before = replica(store, timers, { now: true });
    await advance(timers, 2 * MINUTE, before);
    before.mark(e.id, timers.now);
    // A stop writes the marks left (the timer had not written this one yet).
    built.splice(built.indexOf(before), 1);
    await before.close();
    const after = replica(store, timers, { now: true });
    await advance(timers, 2.5 * MINUTE, after);
    expect(await maxWorkers(store, e)).toBe(5);
    await advance(timers, 1 * MINUTE, after);
    expect(await maxWorkers(store, e)).toBe(2);
  });
});
