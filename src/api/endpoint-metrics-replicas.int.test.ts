/**
 * `GET endpoint/metrics` with several replicas on PostgreSQL: the queue depth and in-flight requests now are every
 * live replica's. Replica A's real dispatcher holds requests in flight and queued, its real SignalPublisher writes
 * them to `gateway_signals`; replica B's real API answers them added to its own gateway's, through ClusterSignals'
 * read, and names itself in `window.replica`. A row of a replica no longer live is not counted.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody } from '../../test/support/api.js';
import { endpointGateway } from '../../test/support/endpoint-gateway.js';
import { storeTargets } from '../../test/support/stores.js';
import { ClusterSignals } from '../cluster/cluster-signals.js';
import { DEFAULT_SHARED_TIMING } from '../cluster/shared-traffic.js';
import { SignalPublisher } from '../cluster/signal-publisher.js';
import { GatewayMetrics } from '../gateway/metrics.js';
import { systemTimers } from '../ports/clock.js';

const postgres = storeTargets().find((t) => t.name === 'postgres');
const silent = { warn: () => undefined, info: () => undefined };
const W1 = { id: 'w1', address: { host: '127.0.0.1', port: 9 } };

/** One replica's gateway of one endpoint (one slot per worker), and its metrics. */
function gatewayOf(endpointId: string) {
  const { dispatcher, loads, signals } = endpointGateway(endpointId, 1);
  const metrics = new GatewayMetrics({
    registry: new Registry(),
    load: () =>
      loads().map((l) => ({
        endpointId: l.endpointId,
        queueLength: l.queueLength,
        inFlight: l.workers.reduce((n, w) => n + w.inFlight, 0),
      })),
  });
  return { dispatcher, loads, signals, metrics };
}

describe.skipIf(!postgres)('GET endpoint/metrics across replicas on PostgreSQL', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups.length = 0;
  });

  it("adds the other live replicas' queued and in-flight requests to this one's, and names this replica", async () => {
    const opened = await (postgres as NonNullable<typeof postgres>).open();
    cleanups.push(() => opened.dispose());
    const storeA = opened.store;
    const storeB = opened.sibling();

    // Replica B: its API over its own gateway, the others' rows read as its ClusterSignals reads them.
    const b: { gateway?: ReturnType<typeof gatewayOf>; signals?: ClusterSignals } = {};
    const api = await createTestApi(storeB, {
      traffic: (id) => (b.gateway as ReturnType<typeof gatewayOf>).metrics.summary(id),
      otherReplicas: { replicaId: 'rep-b', load: (id) => (b.signals as ClusterSignals).othersLoad(id) },
    });
    cleanups.push(() => api.app.close());
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(created.status).toBe(200);
    const endpointId = created.body.id as string;
    b.gateway = gatewayOf(endpointId);
    b.signals = new ClusterSignals({
      local: b.gateway.signals,
      read: (ids, endpoint) => storeB.gatewaySignals.read(ids, endpoint),
      others: () => ['rep-a'],
      clock: Date.now,
      timers: systemTimers,
      pollMs: DEFAULT_SHARED_TIMING.signalsMs,
      logger: silent,
    });
    b.gateway.dispatcher.setWorkers([W1]);
    const leaseB = await b.gateway.dispatcher.acquire();

    // Replica A: one request in flight and one queued behind it, written by its publisher as `corral serve` does.
    const a = gatewayOf(endpointId);
    a.dispatcher.setWorkers([W1]);
    const publisher = new SignalPublisher({
      replicaId: 'rep-a',
      loads: a.loads,
      onQueued: a.signals.onQueued,
      signals: storeA.gatewaySignals,
      notifyLeader: async () => undefined,
      clock: Date.now,
      timers: systemTimers,
      everyMs: DEFAULT_SHARED_TIMING.signalsMs,
      minGapMs: DEFAULT_SHARED_TIMING.signalsMinGapMs,
      logger: silent,
    });
    publisher.start();
    cleanups.push(() => publisher.close());
    // A replica gone from the membership left a row: it is not counted.
    await storeA.gatewaySignals.write(
      'rep-gone',
      [{ endpointId, queueLength: 5, oldestWaitMs: 10, workers: { w1: { inFlight: 3, idleMs: 0 } } }],
      [],
    );

    const metricsOf = async () => (await api.call('GET', `endpoint/metrics?id=${endpointId}`)).body;
    const until = async (want: { queueDepth: number; inFlight: number }) => {
      const sent = performance.now();
      const deadline = Date.now() + 5_000;
      let body = await metricsOf();
      while (
        (body.queueDepth !== want.queueDepth || body.inFlight !== want.inFlight) &&
        Date.now() < deadline
      ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        body = await metricsOf();
      }
      return { body, ms: performance.now() - sent };
    };

    const leaseA = await a.dispatcher.acquire();
    const queuedA = a.dispatcher.acquire();
    const busy = await until({ queueDepth: 1, inFlight: 2 });
    process.stdout.write(`replica B's metrics showed A's requests within ${busy.ms.toFixed(0)} ms\n`);
    expect(busy.body).toMatchObject({ queueDepth: 1, inFlight: 2 });
    expect(busy.body.window.replica).toBe('rep-b');
    // The since-start totals stay B's own (no request ended there).
    expect(busy.body.requests.total).toBe(0);

    // A's queue empties and its requests end: B's answer follows within a write or so.
    leaseA.release();
    (await queuedA).release();
    const idle = await until({ queueDepth: 0, inFlight: 1 });
    process.stdout.write(`replica B's metrics showed A idle within ${idle.ms.toFixed(0)} ms\n`);
    expect(idle.body).toMatchObject({ queueDepth: 0, inFlight: 1 });
    expect(idle.ms).toBeLessThan(5_000);
    leaseB.release();
  });
});
