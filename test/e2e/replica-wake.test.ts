/**
 * The wake report on a follower (issue 24): two replicas on PostgreSQL as real processes with the `local` runtime,
 * an endpoint with the freeze tier (`keepFrozen`). Only the leader's controller wakes workers; a request that
 * arrives at the follower waits there, and its answer's `Server-Timing` names what the wake cost as the leader's
 * would: the cold start's phases the first time, `thaw` once the worker froze. Its own database.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { callGateway, type GatewayAnswer } from '../support/gateway-call.js';
import { callApi } from '../support/process.js';
import { replicaSet, withPostgres } from '../support/replica-set.js';
import { WORKER_SCRIPT } from '../support/test-image.js';

const KEY = `op-${randomBytes(16).toString('hex')}`;
const SECRET = randomBytes(32).toString('base64');
const isRoot = process.getuid?.() === 0;

/** The phase names of a Server-Timing value, in order: `queue;dur=3, thaw;dur=2` -> ['queue', 'thaw']. */
function phases(answer: GatewayAnswer): string[] {
  return String(answer.headers['server-timing'] ?? '')
    .split(', ')
    .map((part) => part.split(';')[0] ?? '');
}

describe.skipIf(!withPostgres)("a follower's answers carry the leader's wake report", () => {
  const replicas = replicaSet({
    prefix: 'corral-replica-wake-',
    configYaml: 'controller: { reconcileIntervalMs: 200 }\n',
    runtimeArgs: ['--runtime', 'local', '--gpus', 'h100-80g:1', ...(isRoot ? ['--local-allow-root'] : [])],
    env: { CORRAL_API_KEY: KEY, CORRAL_SECRET_KEY: SECRET },
    logLines: 80,
  });
  const until = <T>(check: () => T | Promise<T>, timeoutMs: number) =>
    vi.waitFor(check, { timeout: timeoutMs, interval: 200 });

  it('a request at the follower shows the cold start the first time, and `thaw` after the worker froze', async () => {
    const { leader, follower } = await replicas.leaderAndFollower(KEY);

    const created = await callApi(leader, KEY, 'endpoint/create', {
      endpoint: {
        appName: 'woken',
        image: { image: 'plain-worker:local', command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 2, freeTimeout: 2, gpuNum: 1, keepFrozen: 600 },
        policy: { type: 'queue', value: 1 },
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    // The follower finds the new endpoint in the store if its routes do not name it yet (gateway/lookup.ts).
    const first = await callGateway(follower, KEY, 'woken', '/work?ms=1');
    expect(first.status, first.body).toBe(200);
    expect(phases(first)).toEqual(['queue', 'placement', 'pull', 'create', 'ready']);

    await until(async () => {
      const workers = (await callApi(leader, KEY, `endpoint?id=${id}`)).body.endpoint.workers as {
        state: { state: string };
      }[];
      expect(workers.map((w) => w.state.state)).toEqual(['frozen']);
    }, 30_000);
    const woken = await callGateway(follower, KEY, 'woken', '/work?ms=1');
    expect(woken.status, woken.body).toBe(200);
    expect(woken.headers['x-corral-worker']).toBe(first.headers['x-corral-worker']);
    expect(String(woken.headers['server-timing'])).toMatch(/^queue;dur=[\d.]+, thaw;dur=[\d.]+$/);
    console.log(
      `[replica-wake e2e] at the follower: cold start ${first.ms} ms (${first.headers['server-timing']}); after a thaw ${woken.ms} ms (${woken.headers['server-timing']})`,
    );
    await callApi(leader, KEY, 'endpoint/delete', { id });
  }, 150_000);
});
