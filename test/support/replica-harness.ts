/**
 * Replicas of `corral serve` on PostgreSQL as real processes, for the files that kill, pause and resume them
 * (test/e2e/replicas.test.ts, replicas-failover-workers.test.ts). Call `replicaHarness` inside a describe: its
 * hooks give the file a scratch database, stop whatever a test left running (resumed first: a paused replica
 * would not exit, and would lead the next test's replicas), print the logs of a failed test's replicas, and
 * remove the installations' containers, the databases and the directories at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { integrationAvailable } from './integration.js';
import { printServeLog, type ServeProcess, startServe } from './process.js';
import { type ClusterView, clusterOf, withPostgres } from './replica-set.js';
import { ScratchDatabases } from './scratch-databases.js';
import { dockerAvailable, removeInstallationResources } from './test-image.js';

const baseUrl = process.env.CORRAL_TEST_DATABASE_URL;

export { withPostgres };
export const withDocker =
  withPostgres &&
  integrationAvailable('Docker', dockerAvailable(), 'start dockerd (scripts/provision.sh does)');

export interface ReplicaHarness {
  /** A replica on `runtime` (default: the fake runtime with two GPUs) and the file's database (or `url`). */
  replica(runtime?: string[], url?: string): Promise<ServeProcess>;
  /** A database of its own for one test (its name starts with `prefix`): dropped at the end. */
  database(prefix: string): Promise<string>;
  /** A directory of its own (its name starts with `prefix`): removed at the end. */
  directory(prefix: string): string;
  /** What `server` says of the cluster. */
  cluster(server: ServeProcess): Promise<ClusterView>;
  /** Polls `server` every 50 ms until `check` holds; returns the milliseconds it took. */
  until(
    what: string,
    server: ServeProcess,
    check: (c: ClusterView) => boolean,
    withinMs: number,
  ): Promise<number>;
  /** Sends `signal` to `server`; resolves once it has exited. */
  killed(server: ServeProcess, signal: NodeJS.Signals): Promise<void>;
}

export function replicaHarness(options: { operatorKey: string }): ReplicaHarness {
  const { operatorKey } = options;
  let databases: ScratchDatabases;
  let databaseUrl = '';
  const dirs: string[] = [];
  const servers: ServeProcess[] = [];
  const env = { CORRAL_API_KEY: operatorKey, CORRAL_SECRET_KEY: randomBytes(32).toString('base64') };
  const stopRunning = async () => {
    for (const server of servers) {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        server.child.kill('SIGCONT');
        await server.stop();
      }
    }
  };

  beforeAll(async () => {
    databases = await ScratchDatabases.connect(baseUrl ?? '');
    databaseUrl = await databases.create('corral_e2e');
  });
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') for (const server of servers) printServeLog(server, 60);
    await stopRunning();
  });
  afterAll(async () => {
    await stopRunning();
    for (const id of new Set(servers.map((server) => server.installationId))) removeInstallationResources(id);
    await databases.dropAll();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const directory = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  const cluster = (server: ServeProcess) => clusterOf(server, operatorKey);
  return {
    directory,
    cluster,
    database: (prefix) => databases.create(prefix),
    async replica(runtime = ['--runtime', 'fake', '--gpus', 'h100-80g:2'], url = databaseUrl) {
      const server = await startServe([...runtime, '--database-url', url], {
        ...env,
        CORRAL_DATA_DIR: directory('corral-replica-'),
      });
      servers.push(server);
      return server;
    },
    async until(what, server, check, withinMs) {
      const started = performance.now();
      for (;;) {
        if (check(await cluster(server))) return performance.now() - started;
        if (performance.now() - started > withinMs) throw new Error(`not within ${withinMs} ms: ${what}`);
        await sleep(50);
      }
    },
    killed: (server, signal) =>
      new Promise<void>((resolve) => {
        server.child.once('exit', () => resolve());
        server.child.kill(signal);
      }),
  };
}
