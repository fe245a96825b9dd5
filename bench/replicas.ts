/**
 * Replicas benchmark (issue 13), `npm run bench -- replicas`, on the PostgreSQL of CORRAL_TEST_DATABASE_URL (a
 * database of its own, dropped at the end) and the Docker runtime, in one run:
 *
 * 1. Change-feed propagation: a leader's routing table published by `RoutePublisher` and read back by two other
 *    stores' `RouteFeed`s over their own LISTEN connections (in this process, real PostgreSQL); 200 changes of one
 *    endpoint's routable workers, the time from the publication to each replica's view showing it; p50/p99.
 * 2. Gateway throughput, three replicas versus one: `corral serve` processes with the Docker runtime and one test
 *    worker (maxConcurrent 48); `wrk -t1 -c24` for 5 s through the one replica's gateway, then, with three
 *    replicas running (their shares settled), three `wrk -t1 -c8` at once, one per gateway, for 5 s; req/s summed
 *    and the ratio. On a machine of few cores the three replicas share them with wrk and the worker: the ratio says
 *    what three event loops give here, not on three machines. As a control, one gateway of the three then takes
 *    `wrk -t1 -c16` alone (16: its share of the worker's 48 slots): against the one replica, what belonging to a
 *    cluster of three costs a gateway. Each run also prints the gateways' CPU time per request (all `corral serve`
 *    processes' user + system time from /proc, over the run's requests).
 * 3. Failover: kill -9 of the leader of the three; the time until another replica's `GET cluster` names a new
 *    leader (polled every 50 ms).
 *
 * Every process and container started here is stopped at the end, also on failure.
 */

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RoutableWorker } from '../src/ports/routing-view.js';
import { connectPostgres } from '../src/store/postgres/connect.js';
import { Store } from '../src/store/store.js';
import { sampleEndpoint } from '../test/support/fixtures.js';
import { callApi, type ServeProcess, startServe } from '../test/support/process.js';
import { followRoutes, publishRoutes, type RouteFollower } from '../test/support/route-follower.js';
import { ScratchDatabases } from '../test/support/scratch-databases.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../test/support/test-image.js';
import { loadAverage, table } from './support.js';
import { buildDist, ensureTools, parseWrk, runWrk } from './tools.js';

const _silent = { warn: () => undefined, info: () => undefined };
const KEY = `op-${randomBytes(16).toString('hex')}`;

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

async function propagation(databaseUrl: string): Promise<{ p50: number; p99: number; count: number }> {
  const stores = [0, 1, 2].map(
    () => new Store({ connection: connectPostgres({ connectionString: databaseUrl, maxConnections: 4 }) }),
  );
  const [leaderStore, ...followerStores] = stores as [Store, Store, Store];
  await leaderStore.migrate();
  const listener = leaderStore.listener;
  if (!listener) throw new Error('no listener');
  const channel = listener.channel('routes');
  const { table, publisher } = await publishRoutes(leaderStore, channel, 'bench-routes');
  const followers: RouteFollower[] = [];
  for (const store of followerStores) followers.push(await followRoutes(store, channel));
  const views = followers.map((f) => f.view);
  const endpoint = sampleEndpoint();
  table.publish([endpoint], new Map());
  await sleep(200);
  const delays: number[] = [];
  for (let i = 0; i < 200; i++) {
    const workers: RoutableWorker[] =
      i % 2 === 0 ? [{ id: `w${i}`, address: { host: '127.0.0.1', port: 9000 } }] : [];
    const expected = workers.map((w) => w.id).join();
    const arrivals = views.map(
      (view) =>
        new Promise<number>((resolve) => {
          const stop = view.onChange(() => {
            if (
              view
                .routableWorkers(endpoint.id)
                .map((w) => w.id)
                .join() !== expected
            )
              return;
            stop();
            resolve(performance.now());
          });
        }),
    );
    const sent = performance.now();
    table.publishRoutable(endpoint.id, workers);
    for (const at of await Promise.all(arrivals)) delays.push(at - sent);
  }
  publisher.end();
  for (const follower of followers) await follower.close();
  for (const store of stores) await store.close();
  delays.sort((a, b) => a - b);
  return { p50: quantile(delays, 0.5), p99: quantile(delays, 0.99), count: delays.length };
}

export async function runReplicasBench(): Promise<void> {
  console.log('\n== Replicas (issue 13) ==');
  console.log('command: npm run bench -- replicas');
  const baseUrl = process.env.CORRAL_TEST_DATABASE_URL;
  if (!baseUrl || !dockerAvailable()) {
    console.log('skipped: needs CORRAL_TEST_DATABASE_URL (PostgreSQL) and a Docker engine');
    return;
  }
  const tools = ensureTools();
  if (!tools.wrk) throw new Error('wrk is needed');
  buildDist();
  console.log(`load average at the start ${loadAverage()}`);
  const databases = await ScratchDatabases.connect(baseUrl);
  const databaseUrl = await databases.create('corral_bench');
  const servers: ServeProcess[] = [];
  const dirs: string[] = [];
  try {
    const feed = await propagation(databaseUrl);
    const image = await ensureTestImage();
    const env = { CORRAL_API_KEY: KEY, CORRAL_SECRET_KEY: randomBytes(32).toString('base64') };
    const replica = async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-replica-'));
      dirs.push(dataDir);
      const server = await startServe(
        ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--database-url', databaseUrl],
        {
          ...env,
          CORRAL_DATA_DIR: dataDir,
        },
      );
      servers.push(server);
      return server;
    };
    const one = await replica();
    const created = await callApi(one, KEY, 'endpoint/create', {
      endpoint: {
        ...testWorkerEndpoint(image),
        workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1, maxConcurrent: 48 },
      },
    });
    if (created.status !== 200) throw new Error(`endpoint/create: ${JSON.stringify(created.body)}`);
    const id = created.body.id as string;
    const path = `/e/${id}/work?ms=0`;
    const serving = async (server: ServeProcess) => {
      const started = performance.now();
      for (;;) {
        const answer = await fetch(`${server.gatewayUrl}${path}`, {
          headers: { authorization: `Bearer ${KEY}` },
        }).catch(() => undefined);
        await answer?.arrayBuffer();
        if (answer?.status === 200) return;
        if (performance.now() - started > 120_000) throw new Error('the worker did not become routable');
        await sleep(200);
      }
    };
    const wrk = async (server: ServeProcess, connections: number) =>
      parseWrk(
        await runWrk(tools.wrk as string, {
          threads: 1,
          connections,
          seconds: 5,
          url: `${server.gatewayUrl}${path}`,
          authorization: `Bearer ${KEY}`,
        }),
      );
    await serving(one);
    await wrk(one, 24); // warm-up
    const cpuBefore = cpuSeconds([one]);
    const single = await wrk(one, 24);
    const singleCpu = cpuSeconds([one]) - cpuBefore;
    const others = [await replica(), await replica()];
    const three = [one, ...others];
    for (const server of three) await serving(server);
    // Shares settle within a few seconds of the membership change.
    await sleep(5_000);
    // How many answers came through another replica's gateway (X-Corral-Forwarded-To): a second hop each.
    const forwardedOf = async (server: ServeProcess, count: number) => {
      let forwarded = 0;
      for (let i = 0; i < count; i++) {
        const answer = await fetch(`${server.gatewayUrl}${path}`, {
          headers: { authorization: `Bearer ${KEY}` },
        });
        await answer.arrayBuffer();
        if (answer.headers.has('x-corral-forwarded-to')) forwarded += 1;
      }
      return forwarded;
    };
    const probes = 20;
    const forwardedBefore = await Promise.all(three.map((server) => forwardedOf(server, probes)));
    const load = loadAverage();
    const threeCpuBefore = cpuSeconds(three);
    const parallel = await Promise.all(three.map((server) => wrk(server, 8)));
    const threeCpu = cpuSeconds(three) - threeCpuBefore;
    const forwardedAfter = await Promise.all(three.map((server) => forwardedOf(server, probes)));
    const controlCpuBefore = cpuSeconds(three);
    const control = await wrk(one, 16);
    const controlCpu = cpuSeconds(three) - controlCpuBefore;
    const rate = (f: { requests: number; seconds: number }) => f.requests / f.seconds;
    const singleRate = rate(single);
    const threeRate = parallel.reduce((sum, f) => sum + rate(f), 0);
    const errors = parallel.reduce(
      (sum, f) => sum + f.non2xx + f.socketErrors,
      single.non2xx + single.socketErrors + control.non2xx + control.socketErrors,
    );

    const cluster = async (server: ServeProcess) =>
      (await callApi(server, KEY, 'cluster')).body as { self: string; leader: { replica: string } | null };
    const leaderId = (await cluster(one)).leader?.replica;
    const selves = await Promise.all(three.map(async (s) => (await cluster(s)).self));
    const leader = three[selves.indexOf(leaderId ?? '')];
    if (!leader) throw new Error('no leader');
    const survivor = three.find((s) => s !== leader) as ServeProcess;
    const exited = new Promise<void>((resolve) => leader.child.once('exit', () => resolve()));
    const killedAt = performance.now();
    leader.child.kill('SIGKILL');
    await exited;
    let failover = Number.NaN;
    while (performance.now() - killedAt < 20_000) {
      const now = await cluster(survivor);
      if (now.leader && now.leader.replica !== leaderId) {
        failover = performance.now() - killedAt;
        break;
      }
      await sleep(50);
    }
    console.log(
      table(
        ['figure', 'value'],
        [
          [`change-feed propagation to 2 replicas, p50 (${feed.count} samples)`, `${feed.p50.toFixed(1)} ms`],
          ['change-feed propagation to 2 replicas, p99', `${feed.p99.toFixed(1)} ms`],
          ['gateway throughput, one replica (wrk -c24, 5 s)', `${singleRate.toFixed(0)} req/s`],
          ['gateway throughput, three replicas (3 x wrk -c8, 5 s)', `${threeRate.toFixed(0)} req/s`],
          ['three replicas / one', `${(threeRate / singleRate).toFixed(2)}x`],
          ['control: one gateway of the three alone (wrk -c16, 5 s)', `${rate(control).toFixed(0)} req/s`],
          ['control / one replica', `${(rate(control) / singleRate).toFixed(2)}x`],
          [
            "gateways' CPU per request: one replica / three / control",
            [
              perRequest(singleCpu, single.requests),
              perRequest(
                threeCpu,
                parallel.reduce((n, f) => n + f.requests, 0),
              ),
              perRequest(controlCpu, control.requests),
            ].join(' / '),
          ],
          ['non-2xx answers and socket errors in the three runs', String(errors)],
          [
            `forwarded answers of ${probes} per gateway, before / after the three-replica run`,
            `${forwardedBefore.join('+')} / ${forwardedAfter.join('+')}`,
          ],
          ['failover after kill -9 of the leader', `${(failover / 1000).toFixed(2)} s`],
        ],
      ),
    );
    console.log(`load average before the three-replica run ${load}; at the end ${loadAverage()}`);
  } finally {
    for (const server of servers) {
      if (server.child.exitCode === null && server.child.signalCode === null) await server.stop();
    }
    for (const idOf of new Set(servers.map((s) => s.installationId))) removeInstallationResources(idOf);
    await databases.dropAll();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** The user + system CPU seconds the processes have used so far (Linux /proc; a process gone counts 0). */
function cpuSeconds(servers: readonly ServeProcess[]): number {
  let ticks = 0;
  for (const server of servers) {
    try {
      // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Exited: nothing more to count.
    }
  }
  return ticks / CLOCK_TICKS;
}

function perRequest(cpuSecondsUsed: number, requests: number): string {
  return `${((cpuSecondsUsed * 1000) / requests).toFixed(3)} ms`;
}
