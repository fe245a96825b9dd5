/**
 * Workers and traffic across failovers, with replicas on PostgreSQL as real processes and the Docker runtime (one
 * engine shared by the replicas): two failovers by kill -9 leave the workers' containers exactly as they were, none
 * duplicated, none orphaned. Three gateways share one worker: its cap holds over a burst through all three
 * (WebSockets too), a wake from zero starts through a follower, and a steady stream through the three loses nothing
 * on the survivors of a kill -9 of the leader. Leadership itself: replicas.test.ts. Each run gets a database of its
 * own.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { type IncomingHttpHeaders, request } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { callApi, type ServeProcess } from '../support/process.js';
import { replicaHarness, withDocker, withPostgres } from '../support/replica-harness.js';
import { containersOf, ensureTestImage, testWorkerEndpoint } from '../support/test-image.js';

const OPERATOR_KEY = `op-${randomBytes(16).toString('hex')}`;
/** The reconcile period of the failover test's replicas, and how many of a new leader's passes it watches. */
const PASS_MS = 200;
const FIRST_PASSES = 20;

/** Opens a WebSocket at the test worker's `/ws` through a gateway: the 101's headers and its socket, or the refusal. */
function openSocket(
  gatewayUrl: string,
  endpointId: string,
  key: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; socket: Socket | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(`${gatewayUrl}/e/${endpointId}/ws`, {
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
      },
    });
    req.on('upgrade', (res, socket: Socket) => resolve({ status: 101, headers: res.headers, socket }));
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, socket: undefined });
    });
    req.on('error', reject);
    req.end();
  });
}

describe.skipIf(!withPostgres)('replicas on PostgreSQL, their workers across failovers', () => {
  const harness = replicaHarness({ operatorKey: OPERATOR_KEY });
  const { replica, cluster, until, killed } = harness;

  it.runIf(withDocker)(
    'Docker runtime: two failovers by kill -9 leave the containers as they were, none duplicated, none orphaned',
    async () => {
      const image = await ensureTestImage();
      // A pass every 200 ms (the default is 1 s): a new leader's first passes, which would act on a wrong view of
      // the containers, come five times as fast, so the watch below sees more of them in less time.
      const configDir = harness.directory('corral-replicas-config-');
      writeFileSync(join(configDir, 'corral.yaml'), `controller: { reconcileIntervalMs: ${PASS_MS} }\n`);
      const docker = [
        '--runtime',
        'docker',
        '--gpus',
        'h100-80g:4',
        '--config',
        join(configDir, 'corral.yaml'),
      ];
      const replicas = [await replica(docker), await replica(docker), await replica(docker)];
      const first = replicas[0] as ServeProcess;
      const installationId = first.installationId;
      // One installation: every replica labels and adopts the same workers.
      expect(new Set(replicas.map((r) => r.installationId)).size).toBe(1);
      const created = await callApi(first, OPERATOR_KEY, 'endpoint/create', {
        endpoint: { ...testWorkerEndpoint(image), workerConfig: { minNum: 2, maxNum: 2, gpuNum: 1 } },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id = created.body.id as string;
      const runningWorkers = async (server: ServeProcess) => {
        const { body } = await callApi(server, OPERATOR_KEY, `endpoint?id=${id}`);
        return (body.endpoint.workers as { id: string; state: { state: string }; healthy: boolean }[])
          .filter((w) => w.state.state === 'running' && w.healthy)
          .map((w) => w.id)
          .sort();
      };
      const started = performance.now();
      while ((await runningWorkers(first)).length < 2 || containersOf(installationId).length !== 2) {
        if (performance.now() - started > 90_000) throw new Error('two workers did not start');
        await sleep(250);
      }
      const containers = containersOf(installationId);
      const workers = await runningWorkers(first);

      let alive = replicas;
      for (const round of [1, 2]) {
        const leaderId = (await cluster(alive[0] as ServeProcess)).leader?.replica;
        const leader = await Promise.all(alive.map(async (r) => [r, (await cluster(r)).self] as const)).then(
          (pairs) => pairs.find(([, self]) => self === leaderId)?.[0],
        );
        if (!leader) throw new Error('no leader');
        alive = alive.filter((r) => r !== leader);
        const observer = alive[0] as ServeProcess;
        await killed(leader, 'SIGKILL');
        // Through the failover and the new leader's first passes (FIRST_PASSES of them, until it reports the same
        // workers running and healthy), the containers never change.
        const failover = performance.now();
        let newLeader: string | undefined;
        let electedAt = 0;
        while (performance.now() - failover < 15_000) {
          expect(containersOf(installationId), `round ${round}`).toEqual(containers);
          if (
            newLeader &&
            performance.now() - electedAt >= FIRST_PASSES * PASS_MS &&
            isDeepStrictEqual(await runningWorkers(observer), workers)
          )
            break;
          const now = await cluster(observer);
          if (now.leader && now.leader.replica !== leaderId && !newLeader) {
            newLeader = now.leader.replica;
            electedAt = performance.now();
          }
          await sleep(250);
        }
        expect(newLeader, `round ${round}: a new leader`).toBeDefined();
        expect(await runningWorkers(observer)).toEqual(workers);
        // The new leader's gateway serves the endpoint with the adopted workers.
        const newLeaderProcess = await Promise.all(
          alive.map(async (r) => [r, (await cluster(r)).self] as const),
        ).then((pairs) => pairs.find(([, self]) => self === newLeader)?.[0]);
        const answer = await fetch(`${newLeaderProcess?.gatewayUrl}/e/${id}/health`, {
          headers: { authorization: `Bearer ${OPERATOR_KEY}` },
        });
        expect(answer.status).toBe(200);
        await answer.arrayBuffer();
      }
      for (const server of alive) await server.stop();
    },
    240_000,
  );
  it.runIf(withDocker)(
    'Docker runtime: three gateways share the workers: the cap holds over a burst on all three, a wake from zero ' +
      'through a follower, and a steady stream through all three loses nothing on the survivors of a kill -9 of the leader',
    async () => {
      const image = await ensureTestImage();
      const docker = ['--runtime', 'docker', '--gpus', 'h100-80g:4'];
      // A database of its own: the endpoints of the tests before stay out of this one's GPUs and quota.
      const own = await harness.database('corral_e2e_gw');
      const replicas = [await replica(docker, own), await replica(docker, own), await replica(docker, own)];
      const first = replicas[0] as ServeProcess;
      const installationId = first.installationId;
      const ids = await Promise.all(replicas.map(async (r) => (await cluster(r)).self));
      await until(
        'three alive replicas',
        first,
        (x) => x.replicas.filter((r) => r.alive).length === 3,
        10_000,
      );
      const leaderId = (await cluster(first)).leader?.replica;
      const leader = replicas[ids.indexOf(leaderId ?? '')];
      const followers = replicas.filter((r) => r !== leader);
      if (!leader) throw new Error('no leader');
      const auth = { authorization: `Bearer ${OPERATOR_KEY}` };
      /** An endpoint of one warm worker taking `maxConcurrent` requests at a time, created through `server`. */
      const oneWorker = async (server: ServeProcess, maxConcurrent: number) => {
        const created = await callApi(server, OPERATOR_KEY, 'endpoint/create', {
          endpoint: {
            ...testWorkerEndpoint(image),
            workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1, maxConcurrent },
          },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        return created.body.id as string;
      };
      // One worker that takes 3 requests at a time; another endpoint with none until a request comes.
      const capped = await oneWorker(first, 3);
      // maxConcurrent at least the number of replicas: each gateway owns a slot of the one worker (operations.md).
      const sleepyBody = {
        endpoint: {
          ...testWorkerEndpoint(image),
          workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1, maxConcurrent: 3 },
        },
      };
      const sleepy = await callApi(followers[0] as ServeProcess, OPERATOR_KEY, 'endpoint/create', sleepyBody);
      expect(sleepy.status, JSON.stringify(sleepy.body)).toBe(200);
      const sleepyId = sleepy.body.id as string;
      const baseline = await callApi(leader, OPERATOR_KEY, 'endpoint/create', sleepyBody);
      expect(baseline.status, JSON.stringify(baseline.body)).toBe(200);
      const baselineId = baseline.body.id as string;
      const work = (server: ServeProcess, endpointId: string, ms: number) =>
        fetch(`${server.gatewayUrl}/e/${endpointId}/work?ms=${ms}`, { headers: auth });
      /** Waits until every gateway answers the endpoint as `served` says, 90 s at most; how long that took. */
      const servedEverywhere = async (endpointId: string, served: (answer: Response) => boolean) => {
        const since = performance.now();
        for (const server of replicas) {
          for (;;) {
            const answer = await work(server, endpointId, 0).catch(() => undefined);
            if (answer && served(answer)) break;
            await answer?.arrayBuffer();
            if (performance.now() - since > 90_000)
              throw new Error(`endpoint ${endpointId} is not served through every gateway`);
            await sleep(200);
          }
        }
        return Math.round(performance.now() - since);
      };
      /** `perGateway` requests of `ms` through each gateway at once: all must be 200; the worker's peak in flight. */
      const burstPeak = async (endpointId: string, perGateway: number, ms: number) => {
        const burst = await Promise.all(
          replicas.flatMap((server) =>
            Array.from({ length: perGateway }, async () => {
              const answer = await work(server, endpointId, ms);
              return { status: answer.status, body: (await answer.json()) as { inFlight?: number } };
            }),
          ),
        );
        expect(burst.map((b) => b.status)).toEqual(burst.map(() => 200));
        return Math.max(...burst.map((b) => b.body.inFlight ?? 0));
      };

      // Routable on every gateway, each with its own share of the worker's slots (until then it forwards to a
      // replica that has one, and the answer says so).
      const routableAfter = await servedEverywhere(
        capped,
        (answer) => answer.status === 200 && !answer.headers.has('x-corral-forwarded-to'),
      );
      process.stdout.write(`routable through all three gateways after ${routableAfter} ms\n`);

      // A burst of 30 requests of 300 ms, 10 through each gateway at once: the worker never holds more than 3.
      const peak = await burstPeak(capped, 10, 300);
      process.stdout.write(`burst of 30 over three gateways: peak in flight on the worker ${peak} (cap 3)\n`);
      expect(peak).toBeLessThanOrEqual(3);
      expect(peak).toBeGreaterThanOrEqual(2);

      // One slot (maxConcurrent 1, the default) for three replicas: the two gateways without it forward to the one
      // with it (operations.md), so every gateway answers 200 and the worker still holds one request at a time.
      const singleId = await oneWorker(leader, 1);
      await servedEverywhere(singleId, (answer) => answer.status === 200);
      const onePeak = await burstPeak(singleId, 4, 200);
      process.stdout.write(`12 requests over three gateways, maxConcurrent 1: peak in flight ${onePeak}\n`);
      expect(onePeak).toBe(1);

      // A WebSocket through each gateway at once, on the same one slot: the two gateways without it forward theirs
      // to the one with it, where they wait their turn; each is echoed, then closed, which lets the next one open.
      const sockets = await Promise.all(
        replicas.map(async (server) => {
          const opened = await openSocket(server.gatewayUrl, singleId, OPERATOR_KEY);
          const socket = opened.socket;
          if (!socket) return { status: opened.status, open: 0, forwarded: false, echoed: '' };
          const message = `hello from ${server.gatewayUrl}`;
          socket.write(message);
          let echoed = '';
          while (echoed.length < message.length)
            echoed += String(((await once(socket, 'data')) as [Buffer])[0]);
          socket.destroy();
          return {
            status: opened.status,
            open: Number(opened.headers['x-open-sockets']),
            forwarded: opened.headers['x-corral-forwarded-to'] !== undefined,
            echoed,
          };
        }),
      );
      expect(sockets.map((s) => s.status)).toEqual([101, 101, 101]);
      expect(sockets.map((s) => s.echoed)).toEqual(replicas.map((r) => `hello from ${r.gatewayUrl}`));
      expect(sockets.filter((s) => s.forwarded)).toHaveLength(2);
      const socketPeak = Math.max(...sockets.map((s) => s.open));
      process.stdout.write(`3 WebSockets over three gateways, maxConcurrent 1: peak open ${socketPeak}\n`);
      expect(socketPeak).toBe(1);

      // A wake from zero through a follower (its queued request tells the leader at once) costs about what one
      // through the leader's own gateway costs.
      const wakeThrough = async (server: ServeProcess, endpointId: string) => {
        const started = performance.now();
        const woken = await work(server, endpointId, 0);
        expect(woken.status).toBe(200);
        await woken.arrayBuffer();
        return performance.now() - started;
      };
      const throughLeader = await wakeThrough(leader, baselineId);
      const throughFollower = await wakeThrough(followers[1] as ServeProcess, sleepyId);
      process.stdout.write(
        `wake from zero: ${Math.round(throughFollower)} ms through a follower, ${Math.round(throughLeader)} ms through the leader\n`,
      );
      expect(throughFollower).toBeLessThan(throughLeader + 1_500);

      // A steady stream through the three gateways in turn; the leader is killed in the middle of it.
      // The capped endpoint's (the woken ones may be scaled down meanwhile, which is no concern here).
      const containers = containersOf(installationId, capped);
      expect(containers).toHaveLength(1);
      const failed = new Map<ServeProcess, number>(replicas.map((r) => [r, 0]));
      const served = new Map<ServeProcess, number>(replicas.map((r) => [r, 0]));
      let streaming = true;
      const stream = (async () => {
        for (let i = 0; streaming; i++) {
          const server = replicas[i % 3] as ServeProcess;
          try {
            const answer = await work(server, capped, 10);
            await answer.arrayBuffer();
            (answer.status === 200 ? served : failed).set(
              server,
              ((answer.status === 200 ? served : failed).get(server) ?? 0) + 1,
            );
          } catch {
            failed.set(server, (failed.get(server) ?? 0) + 1);
          }
          await sleep(20);
        }
      })();
      await sleep(2_000);
      await killed(leader, 'SIGKILL');
      const killedAt = performance.now();
      const observer = followers[0] as ServeProcess;
      const failover = await until(
        'a new leader',
        observer,
        (x) => x.leader !== null && x.leader.replica !== leaderId,
        10_000,
      );
      process.stdout.write(`new leader after the kill: ${Math.round(failover)} ms\n`);
      // Past the dead replica's lease and membership (6 s), the survivors' shares grow; the stream goes on: until both
      // survivors count the killed one out and each has served 20 more requests since.
      const deadId = leaderId ?? '';
      for (const server of followers)
        await until(
          'the killed one not alive',
          server,
          (x) => x.replicas.every((r) => r.id !== deadId || !r.alive),
          15_000,
        );
      const servedBefore = followers.map((server) => served.get(server) ?? 0);
      const streamedOn = performance.now();
      while (followers.some((server, i) => (served.get(server) ?? 0) < (servedBefore[i] ?? 0) + 20)) {
        if (performance.now() - streamedOn > 30_000)
          throw new Error('the survivors stopped serving the stream');
        await sleep(100);
      }
      process.stdout.write(
        `the killed one counted out ${Math.round(streamedOn - killedAt)} ms after the kill; 20 more served on each survivor in ${Math.round(performance.now() - streamedOn)} ms\n`,
      );
      streaming = false;
      await stream;
      for (const server of followers) {
        expect(failed.get(server), 'failed requests on a surviving gateway').toBe(0);
        expect(served.get(server)).toBeGreaterThan(20);
      }
      process.stdout.write(
        `stream: ${followers.map((f) => served.get(f)).join(' + ')} served on the survivors, ` +
          `${failed.get(leader)} failed on the killed one\n`,
      );
      expect(containersOf(installationId, capped)).toEqual(containers);
      for (const server of followers) await server.stop();
    },
    180_000,
  );
});
