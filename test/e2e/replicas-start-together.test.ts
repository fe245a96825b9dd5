/**
 * Three replicas of one installation started at the same instant on an empty PostgreSQL database, with the Docker
 * runtime (as a Kubernetes Deployment starts them): all three serve, ten rounds in a row, each on a database of its
 * own. Every start-up step two replicas may run at once is idempotent: the migrations, the installation record, the
 * operator's CORRAL_API_KEY, the server secrets, the worker-facing listener's network on the subnet pool and the
 * host guard's firewall rules.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { withPostgres } from '../support/replica-set.js';
import { ScratchDatabases } from '../support/scratch-databases.js';
import { dockerAvailable, removeInstallationResources } from '../support/test-image.js';

const withDocker =
  withPostgres &&
  integrationAvailable('Docker', dockerAvailable(), 'start dockerd (scripts/provision.sh does)');
const ROUNDS = 10;
const OPERATOR_KEY = `op-${randomBytes(16).toString('hex')}`;

describe.skipIf(!withDocker)('three replicas started together on an empty database', () => {
  let databases: ScratchDatabases;
  const dirs: string[] = [];
  let round: ServeProcess[] = [];
  const env = { CORRAL_API_KEY: OPERATOR_KEY, CORRAL_SECRET_KEY: randomBytes(32).toString('base64') };

  beforeAll(async () => {
    databases = await ScratchDatabases.connect(process.env.CORRAL_TEST_DATABASE_URL ?? '');
  });
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') for (const server of round) printServeLog(server, 40);
    await stopRound();
  });
  afterAll(async () => {
    await databases.dropAll();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const stopRound = async () => {
    const stopping = round;
    round = [];
    await Promise.all(stopping.map((server) => server.stop()));
    for (const id of new Set(stopping.map((server) => server.installationId)))
      removeInstallationResources(id);
  };

  const startReplica = (databaseUrl: string) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'corral-together-'));
    dirs.push(dataDir);
    return startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--database-url', databaseUrl],
      { ...env, CORRAL_DATA_DIR: dataDir },
      // Three node processes starting on a loaded 2-core machine: one alone took 11.6 s there.
      { startTimeoutMs: 60_000 },
    );
  };

  it(`all three serve, ${ROUNDS} rounds in a row`, async () => {
    const started = performance.now();
    for (let n = 1; n <= ROUNDS; n++) {
      const databaseUrl = await databases.create('corral_together');
      const outcomes = await Promise.allSettled([1, 2, 3].map(() => startReplica(databaseUrl)));
      round = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
      const failures = outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []));
      expect(failures, `round ${n}`).toEqual([]);
      expect(new Set(round.map((server) => server.installationId)).size, `round ${n}: one installation`).toBe(
        1,
      );
      for (const server of round) {
        expect((await fetch(`${server.apiUrl}/healthz`)).status, `round ${n}: healthz`).toBe(200);
        const endpoints = await callApi(server, OPERATOR_KEY, 'endpoints');
        expect(endpoints.status, `round ${n}: GET endpoints`).toBe(200);
        expect(server.child.exitCode, `round ${n}: still running`).toBeNull();
      }
      await stopRound();
    }
    process.stdout.write(
      `${ROUNDS} rounds of three replicas: ${Math.round(performance.now() - started)} ms\n`,
    );
  }, 600_000);
});
