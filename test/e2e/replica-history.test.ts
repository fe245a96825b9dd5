/**
 * The dashboard's history with two `corral serve` replicas on PostgreSQL, as real processes (fake runtime, one
 * sample a second): requests through either replica's gateway show in the history and the last minutes answered by
 * both, and so do the leader's workers; the follower answers the leader's desired count. Each answers its own
 * since-start totals, naming itself in `window.replica`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WireEndpointHistory, WireEndpointMetrics } from '../../src/contract/wire.js';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { ScratchDatabases } from '../support/scratch-databases.js';
import { removeInstallationResources, testWorkerEndpoint } from '../support/test-image.js';

const baseUrl = process.env.CORRAL_TEST_DATABASE_URL;
const withPostgres = integrationAvailable(
  'PostgreSQL',
  Boolean(baseUrl),
  'set CORRAL_TEST_DATABASE_URL (scripts/provision.sh prints it)',
);
const OPERATOR_KEY = `op-${randomBytes(16).toString('hex')}`;

describe.skipIf(!withPostgres)('the history with replicas on PostgreSQL', () => {
  let databases: ScratchDatabases;
  let databaseUrl = '';
  const dirs: string[] = [];
  const servers: ServeProcess[] = [];

  beforeAll(async () => {
    databases = await ScratchDatabases.connect(baseUrl ?? '');
    databaseUrl = await databases.create('corral_hist');
  });
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') for (const server of servers) printServeLog(server, 60);
  });
  afterAll(async () => {
    for (const server of servers) {
      if (server.child.exitCode === null && server.child.signalCode === null) await server.stop();
      removeInstallationResources(server.installationId);
    }
    await databases.dropAll();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const replica = async (): Promise<ServeProcess> => {
    const dataDir = mkdtempSync(join(tmpdir(), 'corral-history-'));
    dirs.push(dataDir);
    const config = join(dataDir, 'corral.yaml');
    writeFileSync(config, 'history: { intervalSeconds: 1 }\n');
    const server = await startServe(
      ['--runtime', 'fake', '--gpus', 'h100-80g:2', '--config', config, '--database-url', databaseUrl],
      {
        CORRAL_API_KEY: OPERATOR_KEY,
        CORRAL_SECRET_KEY: randomBytes(32).toString('base64'),
        CORRAL_DATA_DIR: dataDir,
      },
    );
    servers.push(server);
    return server;
  };
  /** Polls until `check` holds; throws after `withinMs`. */
  const until = async (
    what: string,
    check: () => Promise<boolean>,
    withinMs: number,
    last: () => string = () => '',
  ) => {
    const started = performance.now();
    for (;;) {
      if (await check()) return;
      if (performance.now() - started > withinMs)
        throw new Error(`not within ${withinMs} ms: ${what}; last seen: ${last()}`);
      await sleep(200);
    }
  };
  const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

  it("answers every replica's requests and the leader's workers on both, and the leader's desired count on the follower", async () => {
    const a = await replica();
    const b = await replica();
    let leaderId = '';
    await until(
      'a leader',
      async () => {
        leaderId = (await callApi(a, OPERATOR_KEY, 'cluster')).body?.leader?.replica ?? '';
        return leaderId !== '';
      },
      20_000,
    );
    const self = async (s: ServeProcess) => (await callApi(s, OPERATOR_KEY, 'cluster')).body.self as string;
    const [leader, follower] = (await self(a)) === leaderId ? [a, b] : [b, a];

    const appName = `hist-${randomBytes(3).toString('hex')}`;
    const created = await callApi(leader, OPERATOR_KEY, 'endpoint/create', {
      endpoint: {
        ...testWorkerEndpoint('corral-test-worker:latest'),
        appName,
        workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    // Requests refused at the key check are counted for the endpoint by the gateway that answered them: 15
    // through the leader's gateway, 7 through the follower's.
    const knock = async (server: ServeProcess, n: number) => {
      for (let i = 0; i < n; i++) {
        const answer = await fetch(`${server.gatewayUrl}/e/${appName}/`, {
          headers: { authorization: 'Bearer not-a-key' },
        });
        await answer.arrayBuffer();
        expect(answer.status).toBe(401);
      }
    };
    await knock(leader, 15);
    await knock(follower, 7);

    const history = async (s: ServeProcess) =>
      (await callApi(s, OPERATOR_KEY, `endpoint/metrics/history?id=${id}`)).body as WireEndpointHistory;
    let seen: WireEndpointHistory | undefined;
    const metrics = async (s: ServeProcess) =>
      (await callApi(s, OPERATOR_KEY, `endpoint/metrics?id=${id}`)).body as WireEndpointMetrics;
    await until(
      "both replicas' requests and the leader's worker in the follower's history",
      async () => {
        const h = await history(follower);
        seen = h;
        // The fake runtime's worker never passes its health probe: it stays starting.
        return sum(h.requests.clientErrors) === 22 && (h.workers.starting ?? []).some((n) => n === 1);
      },
      20_000,
      () => JSON.stringify(seen),
    );
    await until(
      'the same in the leader’s history',
      async () => sum((await history(leader)).requests.clientErrors) === 22,
      10_000,
    );
    const [onLeader, onFollower] = [await metrics(leader), await metrics(follower)];
    expect(onLeader.recent?.requests).toBe(22);
    expect(onFollower.recent?.requests).toBe(22);
    // The follower's scaler never decided: the count is the leader's, from its last sample.
    expect(onLeader.desiredWorkers).toBe(1);
    expect(onFollower.desiredWorkers).toBe(1);
    expect((await history(follower)).desiredWorkers).toContain(1);
    // The since-start totals are each replica's own, and say whose; the counts now are every replica's (none here).
    expect(onLeader.window?.replica).toBe(leaderId);
    expect(onFollower.window?.replica).toBe(await self(follower));
    expect(onLeader.requests?.total).toBe(15);
    expect(onFollower.requests?.total).toBe(7);
    expect([onFollower.queueDepth, onFollower.inFlight]).toEqual([0, 0]);
  }, 90_000);
});
