/**
 * The history across replicas' store cost (`npm run bench -- cluster-history`), on the PostgreSQL of
 * CORRAL_TEST_DATABASE_URL (a database of its own, dropped at the end): three replicas (three stores, each its own
 * pool, as three `corral serve` would have), each a real `GatewayMetrics`, `TrafficHistory` and `ClusterHistory`
 * over 500 endpoints with traffic on every one, the first leading (its rows carry the workers). An hour and ten
 * minutes of intervals (420 slots of 10 s) are published as fast as they go, the three replicas' writes at once per
 * slot, so that the leader's pruning runs at the steady state (360 slots kept). Measured: the time of one replica's
 * write of its 500 rows (one INSERT) with the leader's prune, the rows and payload bytes per second at the real
 * cadence (what each slot writes, over 10 s), the table's size at the steady state (heap, TOAST and indexes), and
 * the time of a history read (`of`: 360 slots x 3 replicas' rows of one endpoint, merged) and of `recent`.
 */
import pg from 'pg';
import { Registry } from 'prom-client';
import { GatewayMetrics } from '../src/gateway/metrics.js';
import { ClusterHistory } from '../src/history/cluster-history.js';
import { TrafficHistory } from '../src/history/history.js';
import { systemTimers } from '../src/ports/clock.js';
import type { EndpointWorker } from '../src/ports/traffic.js';
import { connectPostgres } from '../src/store/postgres/connect.js';
import { Store } from '../src/store/store.js';
import { ScratchDatabases } from '../test/support/scratch-databases.js';
import { loadAverage, summarize, table } from './support.js';

const ENDPOINTS = 500;
const REPLICAS = 3;
const INTERVAL_S = 10;
const CAPACITY = 360;
const SLOTS = 420;
const REQUESTS_PER_INTERVAL = 5;

export async function runClusterHistoryBench(): Promise<void> {
  const baseUrl = process.env.CORRAL_TEST_DATABASE_URL;
  if (!baseUrl)
    throw new Error('set CORRAL_TEST_DATABASE_URL: the benchmark makes a database of its own there');
  const databases = await ScratchDatabases.connect(baseUrl);
  const databaseUrl = await databases.create('corral_bench_hist');
  const stores = Array.from(
    { length: REPLICAS },
    () => new Store({ connection: connectPostgres({ connectionString: databaseUrl, maxConnections: 4 }) }),
  );
  try {
    await (stores[0] as Store).migrate();
    console.log(
      `\ncluster-history: ${REPLICAS} replicas x ${ENDPOINTS} endpoints, ${SLOTS} slots of ${INTERVAL_S} s ` +
        `(${CAPACITY} kept), load average before: ${loadAverage()}`,
    );
    const ids = Array.from({ length: ENDPOINTS }, (_, i) => `ep${String(i).padStart(6, '0')}`);
    const start = Math.ceil(Date.now() / 10_000) * 10_000;
    let now = start;
    const replicas = stores.map((store, r) => {
      const metrics = new GatewayMetrics({ registry: new Registry(), clock: () => now });
      const workers: EndpointWorker[] =
        r === 0 ? ids.flatMap((endpointId) => [{ endpointId, state: 'running' }]) : [];
      const history = new TrafficHistory({
        sources: {
          counters: () => metrics.counters(),
          load: () => ids.map((endpointId) => ({ endpointId, queueLength: 1, inFlight: 2 })),
          workers: () => workers,
          desired: () => (r === 0 ? 1 : undefined),
          exists: () => true,
        },
        clock: () => now,
        timers: systemTimers,
        intervalSeconds: INTERVAL_S,
        samples: CAPACITY,
        maxEndpoints: ENDPOINTS,
      });
      const cluster = new ClusterHistory({
        replicaId: `replica-${r}`,
        history,
        samples: store.historySamples,
        term: () => (r === 0 ? 1 : null),
        localDesired: () => 1,
        clock: () => now,
        timers: systemTimers,
        intervalSeconds: INTERVAL_S,
        capacity: CAPACITY,
        logger: { warn: (fields) => console.error('write failed', fields) },
      });
      return { metrics, cluster };
    });
    const writeMs: number[] = [];
    const began = performance.now();
    for (let s = 1; s <= SLOTS; s++) {
      for (const { metrics } of replicas)
        for (const id of ids)
          for (let i = 0; i < REQUESTS_PER_INTERVAL; i++)
            metrics.observeRequest(id, i === 0 ? 503 : 200, 5 + Math.random() * 400, 0);
      now = start + s * INTERVAL_S * 1000;
      await Promise.all(
        replicas.map(async ({ cluster }) => {
          const t = performance.now();
          await cluster.publish();
          writeMs.push(performance.now() - t);
        }),
      );
    }
    const totalS = (performance.now() - began) / 1000;
    // The sizes, read in the benchmark's database.
    const inDb = new pg.Client({ connectionString: databaseUrl });
    await inDb.connect();
    const measured = (
      await inDb.query(
        `select (select count(*) from history_samples)::int as rows,
                (select coalesce(avg(length(payload)) filter (where term is not null), 0) from history_samples)::float as leader,
                (select coalesce(avg(length(payload)) filter (where term is null), 0) from history_samples)::float as follower,
                pg_total_relation_size('history_samples')::bigint as total,
                pg_indexes_size('history_samples')::bigint as indexes`,
      )
    ).rows[0] as { rows: number; leader: number; follower: number; total: string; indexes: string };
    await inDb.end();
    const reader = replicas[1]?.cluster as ClusterHistory;
    now += 2_000;
    const readMs: number[] = [];
    const recentMs: number[] = [];
    let answered = 0;
    for (let i = 0; i < 50; i++) {
      const id = ids[(i * 37) % ids.length] as string;
      let t = performance.now();
      answered = (await reader.of(id)).at.length;
      readMs.push(performance.now() - t);
      t = performance.now();
      await reader.recent(id);
      recentMs.push(performance.now() - t);
    }
    const rowsPerSlot = ENDPOINTS * REPLICAS;
    const payloadPerSlot = ENDPOINTS * (measured.leader + (REPLICAS - 1) * measured.follower);
    const w = summarize(writeMs);
    const r = summarize(readMs);
    const q = summarize(recentMs);
    const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
    console.log(
      table(
        ['figure', 'value'],
        [
          [
            'rows written per 10 s slot (all replicas)',
            `${rowsPerSlot} (${rowsPerSlot / INTERVAL_S} rows/s)`,
          ],
          [
            'payload bytes per row: leader / follower',
            `${measured.leader.toFixed(0)} / ${measured.follower.toFixed(0)}`,
          ],
          ['payload bytes per second (all replicas)', `${(payloadPerSlot / INTERVAL_S).toFixed(0)}`],
          [
            "one replica's write of 500 rows (+ the leader's prune), ms",
            `p50 ${w.p50.toFixed(1)}, p99 ${w.p99.toFixed(1)}, max ${w.max.toFixed(1)}`,
          ],
          [
            'rows kept at the steady state',
            `${measured.rows} (${CAPACITY + 1} slots x ${rowsPerSlot}: ${(CAPACITY + 1) * rowsPerSlot})`,
          ],
          [
            'table size at the steady state, MiB (of it indexes)',
            `${mib(Number(measured.total))} (${mib(Number(measured.indexes))})`,
          ],
          [
            `history read of one endpoint (${answered} slots x ${REPLICAS} rows, merged), ms`,
            `p50 ${r.p50.toFixed(1)}, p99 ${r.p99.toFixed(1)}`,
          ],
          ['recent (30 slots) of one endpoint, ms', `p50 ${q.p50.toFixed(1)}, p99 ${q.p99.toFixed(1)}`],
          ['whole run', `${totalS.toFixed(1)} s for ${SLOTS} slots`],
        ],
      ),
    );
    console.log(`load average after: ${loadAverage()}`);
  } finally {
    for (const store of stores) await store.close();
    await databases.dropAll();
  }
}
