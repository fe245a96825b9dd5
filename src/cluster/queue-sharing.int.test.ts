/**
 * Queues across replicas on PostgreSQL: a request queued on a follower's gateway reaches the leader's autoscaler
 * at once (the follower writes its row and notifies; the leader reads and tells its scaler, as a wake from zero
 * needs), and the leader's sum holds the follower's queue and worker load. Real dispatchers, store and feed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { endpointGateway } from '../../test/support/endpoint-gateway.js';
import { storeTargets } from '../../test/support/stores.js';
import { systemTimers } from '../ports/clock.js';
import { ChangeFeed } from '../store/postgres/change-feed.js';
import { ClusterSignals } from './cluster-signals.js';
import { SignalPublisher } from './signal-publisher.js';

const postgres = storeTargets().find((t) => t.name === 'postgres');
const silent = { warn: () => undefined, info: () => undefined };

/** One gateway of one endpoint: two slots per worker. */
const gatewayOf = (endpointId: string) => endpointGateway(endpointId, 2);

describe.skipIf(!postgres)('queues across replicas on PostgreSQL', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups.length = 0;
  });

  it("a request queued on a follower reaches the leader's scaler at once, and the sum holds its queue and load", async () => {
    const opened = await (postgres as NonNullable<typeof postgres>).open();
    cleanups.push(() => opened.dispose());
    const leaderStore = opened.store;
    const followerStore = opened.sibling();
    const listener = leaderStore.listener;
    if (!listener) throw new Error('no listener');
    const channel = listener.channel('leader');

    const follower = gatewayOf('e1');
    const publisher = new SignalPublisher({
      replicaId: 'follower',
      loads: follower.loads,
      onQueued: follower.onQueued,
      signals: followerStore.gatewaySignals,
      notifyLeader: (endpointId) => followerStore.notify(channel, `queued:${endpointId}`),
      clock: Date.now,
      timers: systemTimers,
      everyMs: 100,
      minGapMs: 20,
      logger: silent,
    });
    publisher.start();
    cleanups.push(() => publisher.close());

    const leader = gatewayOf('e1');
    const sum = new ClusterSignals({
      local: leader.signals,
      read: (ids) => leaderStore.gatewaySignals.read(ids),
      others: () => ['follower'],
      clock: Date.now,
      timers: systemTimers,
      pollMs: 100,
      logger: silent,
    });
    await sum.start();
    cleanups.push(async () => sum.stop());
    let up: () => void = () => undefined;
    const listening = new Promise<void>((resolve) => {
      up = resolve;
    });
    const feed = new ChangeFeed({
      connect: listener.connect,
      channels: [channel],
      onNotification: (_, payload) => void sum.remoteQueued(payload.slice('queued:'.length)),
      onState: (isUp) => isUp && up(),
      timers: systemTimers,
      logger: silent,
    });
    feed.start();
    cleanups.push(() => feed.close());
    await listening;

    const heard = new Promise<{ endpointId: string; at: number }>((resolve) => {
      sum.onQueued((endpointId) => resolve({ endpointId, at: performance.now() }));
    });
    const sent = performance.now();
    // No worker routable on the follower: the request waits there (a wake from zero).
    const waiting = follower.dispatcher.acquire();
    const { endpointId, at } = await heard;
    process.stdout.write(
      `a request queued on a follower reached the leader's scaler in ${(at - sent).toFixed(1)} ms\n`,
    );
    expect(endpointId).toBe('e1');
    expect(at - sent).toBeLessThan(1_000);
    const queued = sum.queueSignal('e1', () => true);
    expect(queued?.queueLength).toBe(1);
    expect(Math.abs((queued?.oldestEnqueuedAt ?? 0) - Date.now())).toBeLessThan(2_000);

    // A worker comes: the follower serves the request; the leader's sum sees it in flight there.
    follower.dispatcher.setWorkers([{ id: 'w1', address: { host: '127.0.0.1', port: 9 } }]);
    const lease = await waiting;
    const deadline = Date.now() + 3_000;
    while (sum.queueSignal('e1', () => true)?.inFlight('w1') !== 1 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const busy = sum.queueSignal('e1', () => true);
    expect(busy?.queueLength).toBe(0);
    expect(busy?.inFlight('w1')).toBe(1);
    expect(busy?.lastBusyAt('w1')).toBeGreaterThan(Date.now() - 2_000);
    // The leader's drain of w1 before its removal waits for the follower's request.
    let drained = false;
    const drain = sum.awaitDrained('e1', 'w1', 10_000).then(() => {
      drained = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(drained).toBe(false);
    const released = performance.now();
    lease.release();
    await drain;
    process.stdout.write(
      `the leader saw the follower's worker drained ${(performance.now() - released).toFixed(0)} ms after\n`,
    );
    expect(performance.now() - released).toBeLessThan(3_000);
  });
});
