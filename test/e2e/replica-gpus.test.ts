/**
 * What a follower shows of the GPUs, with two replicas on PostgreSQL as real processes (fake runtime, two simulated
 * GPUs): `GET products`' gpusFree and `GET gpus`' holders and waiting workers are the leader's within the stated
 * bound (docs/operations.md: the rows read every second), while an endpoint's worker holds a GPU and another waits
 * for two, and again once both endpoints are deleted. Its own database.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { callApi, type ServeProcess } from '../support/process.js';
import { replicaSet, withPostgres } from '../support/replica-set.js';

const KEY = `op-${randomBytes(16).toString('hex')}`;
const SECRET = randomBytes(32).toString('base64');
/** The follower reads the rows every 1 s; the rest is room for a loaded machine (two processes, load ~10). */
const FOLLOWER_BOUND_MS = 4_000;

/** What a replica shows of the GPUs: products' free count, each GPU's holder, the waiting workers. */
interface GpuView {
  free: number | undefined;
  gpus: { uuid: string; busy: boolean; heldBy: unknown }[];
  waiting: unknown[];
}

describe.skipIf(!withPostgres)('a follower shows the GPUs as the leader does', () => {
  const { start: replica } = replicaSet({
    prefix: 'corral-replica-gpus-',
    // One endpoint waits for two GPUs while another holds one: past the default quota (half the GPUs as minNum).
    configYaml: 'quotas: { minGpus: unlimited, maxGpus: unlimited }\n',
    runtimeArgs: ['--runtime', 'fake', '--gpus', 'h100-80g:2'],
    env: { CORRAL_API_KEY: KEY, CORRAL_SECRET_KEY: SECRET },
  });
  const get = async (server: ServeProcess, path: string) => {
    const answer = await callApi(server, KEY, path);
    expect(answer.status, answer.text).toBe(200);
    return answer.body;
  };
  const view = async (server: ServeProcess): Promise<GpuView> => {
    const products = (await get(server, 'products')).products as { id: string; gpusFree: number }[];
    const gpus = await get(server, 'gpus');
    return {
      free: products.find((p) => p.id === 'h100-80g')?.gpusFree,
      gpus: (gpus.gpus as GpuView['gpus']).map(({ uuid, busy, heldBy }) => ({ uuid, busy, heldBy })),
      waiting: gpus.waiting as unknown[],
    };
  };
  /** Polls every 50 ms until `check` holds of `server`'s view; returns the view and the milliseconds it took. */
  const until = async (
    what: string,
    server: ServeProcess,
    check: (v: GpuView) => boolean,
    withinMs: number,
  ) => {
    const started = performance.now();
    for (;;) {
      const seen = await view(server);
      if (check(seen)) return { seen, ms: performance.now() - started };
      if (performance.now() - started > withinMs) {
        throw new Error(`not within ${withinMs} ms: ${what}; last seen ${JSON.stringify(seen)}`);
      }
      await sleep(50);
    }
  };
  /** Polls `GET products` alone every 50 ms (no `GET gpus`, whose read renews the view kept) until gpusFree is `free`. */
  const untilFree = async (what: string, server: ServeProcess, free: number, withinMs: number) => {
    const started = performance.now();
    for (;;) {
      const products = (await get(server, 'products')).products as { id: string; gpusFree: number }[];
      const seen = products.find((p) => p.id === 'h100-80g')?.gpusFree;
      if (seen === free) return performance.now() - started;
      if (performance.now() - started > withinMs)
        throw new Error(`not within ${withinMs} ms: ${what}; saw ${seen}`);
      await sleep(50);
    }
  };
  const leaderOf = async (server: ServeProcess) =>
    ((await get(server, 'cluster')) as { leader: { replica: string } | null }).leader?.replica;

  it('gpusFree, holders and waiting workers on the follower are the leader’s within the bound, and free again after deletion', async () => {
    const leader = await replica();
    const leaderId = ((await get(leader, 'cluster')) as { self: string }).self;
    const started = performance.now();
    while ((await leaderOf(leader)) !== leaderId) {
      if (performance.now() - started > 10_000) throw new Error('the first replica does not lead');
      await sleep(100);
    }
    const follower = await replica();
    expect(await leaderOf(follower)).toBe(leaderId);
    const idle = await view(follower);
    expect(idle.free).toBe(2);

    const create = async (name: string, gpuNum: number) => {
      const answer = await callApi(follower, KEY, 'endpoint/create', {
        endpoint: {
          name,
          image: { image: 'registry.invalid/corral/worker:1' },
          ports: [{ port: 8000 }],
          workerConfig: { minNum: 1, maxNum: 1, gpuNum },
          products: [{ id: 'h100-80g' }],
        },
      });
      expect(answer.status, answer.text).toBe(200);
      return answer.body.id as string;
    };
    const holder = await create('holds-one', 1);
    const waiter = await create('waits-for-two', 2);

    // The leader: one GPU held by holds-one's worker (the fake runtime's worker stays starting: nothing answers its
    // health check within the 300 s startup timeout), one free, waits-for-two's worker waiting.
    const held = await until(
      'the leader shows one GPU held and one worker waiting',
      leader,
      (v) =>
        v.free === 1 &&
        v.gpus.filter((g) => (g.heldBy as { endpointId?: string } | null)?.endpointId === holder).length ===
          1 &&
        v.waiting.length === 1 &&
        (v.waiting[0] as { endpointId: string }).endpointId === waiter,
      30_000,
    );
    const heldFree = await untilFree('gpusFree 1 on the follower', follower, 1, FOLLOWER_BOUND_MS);
    const heldSeen = await until(
      "the follower shows the leader's holders",
      follower,
      (v) => JSON.stringify(v) === JSON.stringify(held.seen),
      FOLLOWER_BOUND_MS,
    );
    expect(heldSeen.seen.free).toBe(1);
    expect(await view(leader)).toEqual(held.seen);

    const deleted = async (id: string) =>
      expect((await callApi(follower, KEY, 'endpoint/delete', { id })).status).toBe(200);
    await deleted(waiter);
    await deleted(holder);
    const freed = await until(
      'the leader shows both GPUs free and nobody waiting',
      leader,
      (v) => v.free === 2 && v.gpus.every((g) => !g.busy) && v.waiting.length === 0,
      30_000,
    );
    const freedFree = await untilFree('gpusFree 2 on the follower', follower, 2, FOLLOWER_BOUND_MS);
    const freedSeen = await until(
      'the follower shows both GPUs free and nobody waiting',
      follower,
      (v) => JSON.stringify(v) === JSON.stringify(freed.seen),
      FOLLOWER_BOUND_MS,
    );
    process.stdout.write(
      `follower behind the leader (gpusFree, then GET gpus): held ${Math.round(heldFree)} + ${Math.round(heldSeen.ms)} ms, ` +
        `freed ${Math.round(freedFree)} + ${Math.round(freedSeen.ms)} ms\n`,
    );
    await follower.stop();
    await leader.stop();
  }, 90_000);
});
