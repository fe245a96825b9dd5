/**
 * An http endpoint's job cancelled at another replica than the one delivering it (issue 22): two replicas on
 * PostgreSQL as real processes with the `local` runtime. The job is run at one replica, which delivers it to the
 * plain test worker's `POST /sleep`; the cancel arrives at the other. The delivering replica reads the stop from the
 * store and aborts its request within about a second: the worker sees its connection close, and the job stays
 * CANCELLED. Its own database.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { callJobs } from '../support/jobs-client.js';
import { callApi, type ServeProcess } from '../support/process.js';
import { clusterOf, replicaSet, withPostgres } from '../support/replica-set.js';
import { localSleeperEndpoint } from '../support/test-image.js';

const KEY = `op-${randomBytes(16).toString('hex')}`;
const SECRET = randomBytes(32).toString('base64');
const isRoot = process.getuid?.() === 0;

describe.skipIf(!withPostgres)('an http job cancelled at another replica', () => {
  const replicas = replicaSet({
    prefix: 'corral-replica-jobs-',
    configYaml: 'controller: { reconcileIntervalMs: 200 }\n',
    runtimeArgs: ['--runtime', 'local', '--gpus', 'h100-80g:1', ...(isRoot ? ['--local-allow-root'] : [])],
    env: { CORRAL_API_KEY: KEY, CORRAL_SECRET_KEY: SECRET },
  });
  const marks = mkdtempSync(join(tmpdir(), 'corral-replica-jobs-marks-'));
  afterAll(() => rmSync(marks, { recursive: true, force: true }));
  const until = <T>(check: () => T | Promise<T>, timeoutMs: number) =>
    vi.waitFor(check, { timeout: timeoutMs, interval: 100 });
  const cluster = (server: ServeProcess) => clusterOf(server, KEY);

  it("is aborted by the delivering replica within about a second: the worker's connection closes, the job stays CANCELLED", async () => {
    const { leader: a, follower: b } = await replicas.leaderAndFollower(KEY);
    const created = await callApi(a, KEY, 'endpoint/create', { endpoint: localSleeperEndpoint('sleeper') });
    expect(created.status, created.text).toBe(200);
    const mark = join(marks, 'sleep');
    const run = await callJobs(a.gatewayUrl, KEY, {
      method: 'POST',
      endpoint: 'sleeper',
      path: 'run',
      body: { input: { ms: 120_000, mark } },
    });
    expect(run.body).toMatchObject({ status: 'IN_QUEUE' });
    await until(() => expect(existsSync(mark)).toBe(true), 60_000);
    // Whichever replica took the job delivers it (as the pseudo worker gateway:{replicaId}): cancel at the other.
    const status = await callJobs(a.gatewayUrl, KEY, {
      method: 'GET',
      endpoint: 'sleeper',
      path: `status/${run.body.id}`,
    });
    const deliverer = String(status.body.workerId).replace(/^gateway:/, '');
    const other = (await cluster(a)).self === deliverer ? b : a;
    expect((await cluster(other)).self).not.toBe(deliverer);
    const cancelledAt = Date.now();
    const cancel = await callJobs(other.gatewayUrl, KEY, {
      method: 'POST',
      endpoint: 'sleeper',
      path: `cancel/${run.body.id}`,
    });
    expect(cancel.body).toMatchObject({ status: 'CANCELLED' });
    await until(() => expect(existsSync(`${mark}.closed`)).toBe(true), 10_000);
    const closedAfterMs = Number(readFileSync(`${mark}.closed`, 'utf8')) - cancelledAt;
    console.log(
      `[replica-jobs-cancel e2e] the worker's connection closed ${closedAfterMs} ms after the cancel`,
    );
    // stopCheckMs (500 ms) and a store read, with room for a loaded machine.
    expect(closedAfterMs).toBeLessThan(3_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const server of [a, b])
      expect(
        (
          await callJobs(server.gatewayUrl, KEY, {
            method: 'GET',
            endpoint: 'sleeper',
            path: `status/${run.body.id}`,
          })
        ).body,
      ).toMatchObject({ status: 'CANCELLED' });
    await callApi(a, KEY, 'endpoint/delete', { id: created.body.id });
  }, 150_000);
});
