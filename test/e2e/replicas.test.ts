/**
 * Leadership among replicas on PostgreSQL as real processes: with the fake runtime, one leads; kill -9 of the leader
 * and another leads within 10 s; SIGTERM hands over at once; a leader paused with SIGSTOP past its lease does not
 * lead when resumed. With the Docker runtime (one engine shared by the replicas), a leader paused for 30 s, while the
 * new one changed the containers, acts on none of them when resumed. The workers through failovers:
 * replicas-failover-workers.test.ts. Each run gets a database of its own.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { callApi, runCorral } from '../support/process.js';
import { replicaHarness, withDocker, withPostgres } from '../support/replica-harness.js';
import { containersOf, ensureTestImage, testWorkerEndpoint } from '../support/test-image.js';

const OPERATOR_KEY = `op-${randomBytes(16).toString('hex')}`;

describe.skipIf(!withPostgres)('replicas on PostgreSQL', () => {
  const harness = replicaHarness({ operatorKey: OPERATOR_KEY });
  const { replica, cluster, until, killed } = harness;

  it('one leads; kill -9 of it and another leads within 10 s; SIGTERM hands over at once', async () => {
    const a = await replica();
    const idA = (await cluster(a)).self;
    await until('a leads', a, (c) => c.leader?.replica === idA, 5_000);
    const b = await replica();
    const c = await replica();
    const idB = (await cluster(b)).self;
    const idC = (await cluster(c)).self;
    await until('three alive replicas', a, (x) => x.replicas.filter((r) => r.alive).length === 3, 5_000);
    const before = await cluster(c);
    expect(before.leader?.replica).toBe(idA);
    expect(before.replicas.filter((r) => r.leader).map((r) => r.id)).toEqual([idA]);
    // corral status lists them and names the leader.
    const status = await runCorral(['status', '--api-url', c.apiUrl], { CORRAL_API_KEY: OPERATOR_KEY });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`leader: ${idA} since`);
    for (const id of [idA, idB, idC]) expect(status.stdout).toContain(id);
    expect(status.stdout).toContain(`${idC} *`);
    // Followers say so in /readyz.
    const readyB = await fetch(`${b.apiUrl}/readyz`);
    expect(readyB.status).toBe(200);
    expect(await readyB.json()).toMatchObject({ ready: true, replica: idB, leader: false });

    await killed(a, 'SIGKILL');
    const failover = await until(
      'b or c leads',
      b,
      (x) => x.leader !== null && x.leader.replica !== idA,
      10_000,
    );
    const after = await cluster(b);
    expect([idB, idC]).toContain(after.leader?.replica);
    expect(after.leader?.token).toBe((before.leader?.token ?? 0) + 1);
    process.stdout.write(`failover after SIGKILL: ${Math.round(failover)} ms\n`);
    expect(failover).toBeLessThan(10_000);

    const [leader, follower, followerId] = after.leader?.replica === idB ? [b, c, idC] : [c, b, idB];
    const stopped = performance.now();
    expect(await leader.stop()).toBe(0);
    const handover = await until(
      'the last one leads',
      follower,
      (x) => x.leader?.replica === followerId,
      5_000,
    );
    const sinceStop = performance.now() - stopped;
    process.stdout.write(`hand-over after SIGTERM: ${Math.round(sinceStop)} ms from the signal\n`);
    // Released at the stop: the next tick takes it (1 s), never the lease's 5 s expiry.
    expect(sinceStop).toBeLessThan(3_000);
    expect(handover).toBeLessThan(2_000);
    // The stopped one took its heartbeat row with it; the killed one is not alive.
    await until(
      'the killed one not alive',
      follower,
      (x) => x.replicas.some((r) => r.id === idA && !r.alive),
      10_000,
    );
    const last = await cluster(follower);
    expect(last.replicas.map((r) => [r.id, r.alive, r.leader])).toEqual([
      [idA, false, false],
      [followerId, true, true],
    ]);
    await follower.stop();
  }, 90_000);

  it('a leader paused with SIGSTOP past its lease is a follower when resumed', async () => {
    const a = await replica();
    const idA = (await cluster(a)).self;
    await until('a leads', a, (c) => c.leader?.replica === idA, 8_000);
    const b = await replica();
    const idB = (await cluster(b)).self;
    a.child.kill('SIGSTOP');
    await until('b leads', b, (c) => c.leader?.replica === idB, 10_000);
    await sleep(1_000);
    a.child.kill('SIGCONT');
    // Its first act on waking is to step down; it never claims the lease back while b renews it.
    const resumed = performance.now();
    for (;;) {
      const readyA = (await (await fetch(`${a.apiUrl}/readyz`)).json()) as { leader: boolean };
      expect(readyA.leader).toBe(false);
      if (performance.now() - resumed > 3_000) break;
      await sleep(100);
    }
    expect((await cluster(a)).leader?.replica).toBe(idB);
    expect(a.stdout()).toContain('no longer the leader: the controller stops here');
    expect(a.stdout().match(/elected: this replica runs the controller/g)).toHaveLength(1);
    await a.stop();
    await b.stop();
  }, 90_000);

  it.runIf(withDocker)(
    'Docker runtime: a leader paused with SIGSTOP for 30 s acts on no container when resumed',
    async () => {
      const image = await ensureTestImage();
      const docker = ['--runtime', 'docker', '--gpus', 'h100-80g:4'];
      // A database of its own: the endpoints of the tests before stay out of the containers compared here.
      const own = await harness.database('corral_e2e_pause');
      const a = await replica(docker, own);
      const idA = (await cluster(a)).self;
      await until('a leads', a, (c) => c.leader?.replica === idA, 8_000);
      const installationId = a.installationId;
      const endpoint = testWorkerEndpoint(image);
      const before = await callApi(a, OPERATOR_KEY, 'endpoint/create', {
        endpoint: { ...endpoint, name: 'before-pause' },
      });
      expect(before.status, JSON.stringify(before.body)).toBe(200);
      const beforeId = before.body.id as string;
      const containersWithin = async (what: string, endpointId: string, count: number, withinMs: number) => {
        const started = performance.now();
        while (containersOf(installationId, endpointId).length !== count) {
          if (performance.now() - started > withinMs) throw new Error(`not within ${withinMs} ms: ${what}`);
          await sleep(250);
        }
      };
      await containersWithin('the first endpoint has its container', beforeId, 1, 90_000);
      const b = await replica(docker, own);
      const idB = (await cluster(b)).self;
      await until('b is alive beside a', b, (c) => c.replicas.filter((r) => r.alive).length === 2, 10_000);

      a.child.kill('SIGSTOP');
      const paused = performance.now();
      await until('b leads', b, (c) => c.leader?.replica === idB, 10_000);
      // While a sleeps, b removes the container a started and starts one a never knew of: a resumed a that acted
      // on its stale view would start the first again or remove the second as an orphan.
      const deleted = await callApi(b, OPERATOR_KEY, 'endpoint/delete', { id: beforeId });
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      const during = await callApi(b, OPERATOR_KEY, 'endpoint/create', {
        endpoint: { ...endpoint, name: 'during-pause' },
      });
      expect(during.status, JSON.stringify(during.body)).toBe(200);
      const duringId = during.body.id as string;
      await containersWithin("b removes a's container", beforeId, 0, 30_000);
      await containersWithin('b starts the new endpoint', duringId, 1, 60_000);
      const containers = containersOf(installationId);
      const left = 30_000 - (performance.now() - paused);
      expect(left, 'the steps while paused took under 30 s').toBeGreaterThan(0);
      await sleep(left);
      a.child.kill('SIGCONT');

      const resumed = performance.now();
      while (performance.now() - resumed < 8_000) {
        expect(containersOf(installationId)).toEqual(containers);
        const readyA = (await (await fetch(`${a.apiUrl}/readyz`)).json()) as { leader: boolean };
        expect(readyA.leader).toBe(false);
        await sleep(200);
      }
      expect((await cluster(a)).leader?.replica).toBe(idB);
      expect(a.stdout()).toContain('no longer the leader: the controller stops here');
      expect(a.stdout().match(/elected: this replica runs the controller/g)).toHaveLength(1);
      await a.stop();
      // b goes on leading: the endpoint created while a was paused keeps its one container.
      expect(containersOf(installationId, duringId)).toHaveLength(1);
      await b.stop();
    },
    240_000,
  );
});
