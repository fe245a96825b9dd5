/**
 * Worker affinity (issue 35) through a follower: two replicas on PostgreSQL as real processes with the `local`
 * runtime, an endpoint of two workers. Every request goes to the follower, whose gateway routes to the workers the
 * leader's controller started: strict waiting for its busy worker (wherever that worker's one slot is, this
 * replica's or the leader's), strict-resume thawing the frozen worker it names (the leader's
 * controller wakes it, told through the follower's gateway signals), and 404 AFFINITY_WORKER_GONE once the worker
 * was removed (a frozen worker drained by its owner). Its own database.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { callGateway } from '../support/gateway-call.js';
import { callApi } from '../support/process.js';
import { replicaSet, withPostgres } from '../support/replica-set.js';
import { WORKER_SCRIPT } from '../support/test-image.js';

const KEY = `op-${randomBytes(16).toString('hex')}`;
const SECRET = randomBytes(32).toString('base64');
const isRoot = process.getuid?.() === 0;

interface ListedWorker {
  id: string;
  state: { state: string };
  healthy: boolean;
}

describe.skipIf(!withPostgres)('worker affinity through a follower replica', () => {
  const replicas = replicaSet({
    prefix: 'corral-replica-affinity-',
    configYaml:
      'controller: { reconcileIntervalMs: 200 }\ngateway: { queueTimeoutSeconds: 20 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n',
    runtimeArgs: ['--runtime', 'local', '--gpus', 'h100-80g:2', ...(isRoot ? ['--local-allow-root'] : [])],
    env: { CORRAL_API_KEY: KEY, CORRAL_SECRET_KEY: SECRET },
    logLines: 80,
  });
  const until = <T>(check: () => T | Promise<T>, timeoutMs: number) =>
    vi.waitFor(check, { timeout: timeoutMs, interval: 200 });

  it('strict, strict-resume (a thaw) and the 404, each through the follower', async () => {
    const { leader, follower } = await replicas.leaderAndFollower(KEY);

    const created = await callApi(leader, KEY, 'endpoint/create', {
      endpoint: {
        appName: 'affine',
        image: { image: 'plain-worker:local', command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 2, maxNum: 2, maxConcurrent: 1, freeTimeout: 1, keepFrozen: 600, gpuNum: 1 },
        policy: { type: 'queue', value: 1 },
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    const workersOf = async () =>
      (await callApi(leader, KEY, `endpoint?id=${id}`)).body.endpoint.workers as ListedWorker[];
    const call = (path: string, headers: Record<string, string> = {}) =>
      callGateway(follower, KEY, 'affine', path, headers);
    const [a = '', b = ''] = await until(async () => {
      const running = (await workersOf()).filter((w) => w.state.state === 'running' && w.healthy);
      expect(running).toHaveLength(2);
      return running.map((w) => w.id).sort();
    }, 60_000);
    // The follower routes the endpoint once its routes name it. With maxConcurrent 1 and two replicas each worker's
    // one slot is one replica's (cluster/slot-shares.ts): a strict request at the follower for a worker whose slot
    // is the leader's goes there. (Soft affinity is not checked here: at a replica without a slot on its worker a
    // soft request goes to another worker, as it should.)
    await until(async () => expect((await call('/work?ms=1')).status).toBe(200), 30_000);

    // Strict: with a busy (maxConcurrent 1), the next strict request waits for it.
    const holding = call('/work?ms=1500', { 'X-Corral-Worker-Id': `strict ${a}` });
    // Integration tier: a moment for the first to take a's slot (no hook tells when it reached the worker).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [waited, plain] = await Promise.all([
      call('/work?ms=1', { 'X-Runpod-Worker-Id': `strict ${a}` }),
      call('/work?ms=1'),
    ]);
    expect((await holding).headers['x-corral-worker']).toBe(a);
    expect(waited.status, waited.body).toBe(200);
    expect(waited.headers['x-corral-worker']).toBe(a);
    expect(Number(waited.headers['x-corral-queue-ms'])).toBeGreaterThanOrEqual(500);
    // A plain request at the follower is served (by b where the follower holds b's slot, else by a once free).
    expect(plain.status, plain.body).toBe(200);

    // Strict-resume: both workers frozen once idle (minNum 0); a request at the follower naming b thaws b alone.
    expect((await callApi(leader, KEY, 'endpoint/update', { id, workerConfig: { minNum: 0 } })).status).toBe(
      200,
    );
    await until(async () => {
      const workers = await workersOf();
      expect(workers.map((w) => w.id).sort()).toEqual([a, b]);
      expect(workers.every((w) => w.state.state === 'frozen')).toBe(true);
    }, 30_000);
    const woken = await call('/work?ms=1', { 'X-Runpod-Worker-Id': `strict-resume ${b}` });
    expect(woken.status, woken.body).toBe(200);
    expect(woken.headers['x-corral-worker']).toBe(b);
    expect(String(woken.headers['server-timing'])).toMatch(/(^|, )thaw;dur=[\d.]+/);
    expect((await workersOf()).find((w) => w.id === a)?.state.state).toBe('frozen');

    // a removed (drained away): strict to it at the follower is RunPod's 404; soft to it is served by any worker.
    expect((await callApi(leader, KEY, 'endpoint/worker/drain', { workerID: a, drain: true })).status).toBe(
      200,
    );
    await until(async () => expect((await workersOf()).map((w) => w.id)).not.toContain(a), 30_000);
    const gone = await call('/work?ms=1', { 'X-Runpod-Worker-Id': `strict ${a}` });
    expect(gone.status, gone.body).toBe(404);
    expect(JSON.parse(gone.body)).toMatchObject({ code: 404, reason: 'AFFINITY_WORKER_GONE' });
    expect((await call('/work?ms=1', { 'X-Runpod-Worker-Id': a })).status).toBe(200);
  }, 180_000);
});
