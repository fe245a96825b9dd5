/**
 * The history across replicas on a real store (PostgreSQL when CORRAL_TEST_DATABASE_URL is set, as replicas run it;
 * SQLite too, the same SQL): two replicas' real histories publish their samples, and either one answers every
 * replica's requests and the leader's workers and desired count.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import { GatewayMetrics } from '../gateway/metrics.js';
import type { EndpointWorker } from '../ports/traffic.js';
import type { Store } from '../store/store.js';
import { ClusterHistory } from './cluster-history.js';
import { TrafficHistory } from './history.js';

const T = Date.parse('2026-11-26T10:00:00Z');
const silent = { warn: () => undefined };

/** One replica: a real GatewayMetrics and TrafficHistory, its workers and desired counts set by hand. */
function replica(options: {
  id: string;
  store: Store;
  timers: ManualTimers;
  term: () => number | null;
  capacity?: number;
  /** How late this replica's clock reads against the timers' (a busy event loop: the timer fired late). */
  lag?: () => number;
}) {
  const { timers } = options;
  const lag = options.lag ?? (() => 0);
  const metrics = new GatewayMetrics({ registry: new Registry(), clock: () => timers.now });
  const workers: EndpointWorker[] = [];
  const desired = new Map<string, number>();
  const history = new TrafficHistory({
    sources: {
      counters: () => metrics.counters(),
      load: () => [],
      workers: () => workers,
      desired: (id) => desired.get(id),
      exists: () => true,
    },
    clock: () => timers.now,
    timers,
    intervalSeconds: 10,
    samples: options.capacity ?? 360,
    maxEndpoints: 500,
  });
  const cluster = new ClusterHistory({
    replicaId: options.id,
    history,
    samples: options.store.historySamples,
    term: options.term,
    localDesired: (id) => desired.get(id),
    clock: () => timers.now + lag(),
    timers,
    intervalSeconds: 10,
    capacity: options.capacity ?? 360,
    logger: silent,
  });
  return { metrics, workers, desired, history, cluster };
}

describe.each(storeTargets())('the history across replicas ($name)', (target) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups.length = 0;
  });

  async function twoReplicas(capacity?: number) {
    const opened = await target.open();
    cleanups.push(() => opened.dispose());
    const timers = new ManualTimers(T);
    const a = replica({
      id: 'a',
      store: opened.store,
      timers,
      term: () => 7,
      ...(capacity ? { capacity } : {}),
    });
    const b = replica({
      id: 'b',
      store: opened.sibling(),
      timers,
      term: () => null,
      ...(capacity ? { capacity } : {}),
    });
    /** Both sample at the boundary `seconds` after T and write. */
    const publishAt = async (seconds: number) => {
      timers.now = T + seconds * 1000;
      await Promise.all([a.cluster.publish(), b.cluster.publish()]);
    };
    return { timers, a, b, publishAt, store: opened.store };
  }

  it("answers the requests through every replica and the leader's workers and desired count, on any replica", async () => {
    const { timers, a, b, publishAt } = await twoReplicas();
    // The leader (a): 40 fast requests, two running workers, three wanted. The follower (b): 10 slow ones.
    for (let i = 0; i < 40; i++) a.metrics.observeRequest('ep', 200, 7, 0);
    for (let i = 0; i < 9; i++) b.metrics.observeRequest('ep', 200, 2_000, 0);
    b.metrics.observeRequest('ep', 503, 2_000, 0);
    a.workers.push({ endpointId: 'ep', state: 'running' }, { endpointId: 'ep', state: 'running' });
    a.desired.set('ep', 3);
    b.desired.set('ep', 9);
    await publishAt(10);

    // Before the slot settles (2 s), neither answers it: both answer the same, whichever wrote first.
    timers.now = T + 11_000;
    expect((await b.cluster.of('ep')).at).toEqual([]);
    timers.now = T + 12_000;
    const onB = await b.cluster.of('ep');
    expect(onB.at).toEqual([T + 10_000]);
    expect(onB.requests).toEqual({ ok: [49], clientErrors: [0], serverErrors: [1] });
    // 40 of 50 at 7 ms: the median is a's; the p99 is in b's 1-2.5 s bucket, within b's largest latency.
    expect(onB.latencyMs.p50[0]).toBeLessThanOrEqual(10);
    expect(onB.latencyMs.p99[0]).toBe(2_000);
    // The leader's workers and desired count, not the follower's (b's controller and scaler do not lead).
    expect(onB.workers.running).toEqual([2]);
    expect(onB.desiredWorkers).toEqual([3]);
    expect(await a.cluster.of('ep')).toEqual(onB);
    // The last minutes, as the Endpoints list shows them: every replica's.
    const recent = await b.cluster.recent('ep');
    expect(recent?.requests).toBe(50);
    expect(recent?.seconds).toBe(10);
    expect(await a.cluster.recent('ep')).toEqual(recent);
    // Their own history (one process's answer) has only their own gateway's requests.
    expect(b.history.of('ep').requests.ok).toEqual([9]);

    // The next interval: traffic through b alone; a's row still carries its workers.
    b.metrics.observeRequest('ep', 200, 30, 0);
    a.desired.set('ep', 2);
    await publishAt(20);
    timers.now = T + 22_000;
    const next = await a.cluster.of('ep');
    expect(next.requests.ok).toEqual([49, 1]);
    expect(next.workers.running).toEqual([2, 2]);
    expect(next.desiredWorkers).toEqual([3, 2]);

    // Desired on the follower: the leader's last sample; on the leader: its scaler now.
    a.desired.set('ep', 4);
    expect(await b.cluster.desired('ep')).toBe(2);
    expect(await a.cluster.desired('ep')).toBe(4);
    // No sample of the leader's for more than two intervals: the follower does not know.
    timers.now = T + 50_000;
    expect(await b.cluster.desired('ep')).toBeUndefined();
    expect(await b.cluster.recent('nope')).toBeUndefined();
  });

  it("samples at the interval's boundaries once started, whenever it started, and no more once stopped", async () => {
    const { a, timers, store } = await twoReplicas();
    a.metrics.observeRequest('ep', 200, 5, 0);
    timers.now = T + 3_500;
    a.cluster.start();
    await timers.advanceSettling(6_500);
    a.metrics.observeRequest('ep', 200, 5, 0);
    await timers.advanceSettling(10_000);
    await a.cluster.stop();
    expect(timers.count).toBe(0);
    await timers.advanceSettling(30_000);
    const rows = await store.historySamples.read('ep', 0, T + 100_000);
    expect(rows.map((r) => [r.replicaId, r.slot - T, r.term])).toEqual([
      ['a', 10_000, 7],
      ['a', 20_000, 7],
    ]);
  });

  it('labels a late sample with the boundary it was set for, never the next one', async () => {
    const opened = await target.open();
    cleanups.push(() => opened.dispose());
    const timers = new ManualTimers(T + 3_500);
    let late = 0;
    const a = replica({ id: 'a', store: opened.store, timers, term: () => null, lag: () => late });
    a.metrics.observeRequest('ep', 200, 5, 0);
    a.cluster.start();
    // The boundary at 10 s: the sample runs 6 s late (its clock reads 16 s), the slot is still 10 s's.
    late = 6_000;
    await timers.advanceSettling(6_500);
    late = 0;
    a.metrics.observeRequest('ep', 200, 5, 0);
    // The next is set for the boundary at least half an interval after: 30 s (20 s is not sampled).
    await timers.advanceSettling(20_000);
    await a.cluster.stop();
    const rows = await opened.store.historySamples.read('ep', 0, T + 100_000);
    expect(rows.map((r) => r.slot - T)).toEqual([10_000, 30_000]);
  });

  it('the leader prunes every replica’s rows past the history’s length', async () => {
    const { a, b, publishAt, timers, store } = await twoReplicas(3);
    for (let s = 1; s <= 5; s++) {
      a.metrics.observeRequest('ep', 200, 5, 0);
      b.metrics.observeRequest('ep', 200, 5, 0);
      await publishAt(s * 10);
    }
    timers.now = T + 52_000;
    const history = await b.cluster.of('ep');
    expect(history.at).toEqual([T + 30_000, T + 40_000, T + 50_000]);
    expect(history.requests.ok).toEqual([2, 2, 2]);
    // At 50 s the leader pruned the slots before 50 s - 3 intervals, both replicas' (the merge does not read them).
    const rows = await store.historySamples.read('ep', 0, T + 100_000);
    expect(new Set(rows.map((r) => r.slot - T))).toEqual(new Set([20_000, 30_000, 40_000, 50_000]));
    expect(new Set(rows.map((r) => r.replicaId))).toEqual(new Set(['a', 'b']));
  });
});
