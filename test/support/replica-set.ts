/**
 * Replicas of `corral serve` as real processes on one scratch PostgreSQL database of their own, for the e2e suites
 * of several replicas: registers the suite's hooks (the database and a directory made before, every server's log
 * printed when a test fails, every server stopped and both removed after) and starts replicas with a shared config.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, vi } from 'vitest';
import { integrationAvailable } from './integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from './process.js';
import { ScratchDatabases } from './scratch-databases.js';

const baseUrl = process.env.CORRAL_TEST_DATABASE_URL;

/** Whether PostgreSQL is there for these suites (said once when it is not). */
export const withPostgres = integrationAvailable(
  'PostgreSQL',
  Boolean(baseUrl),
  'set CORRAL_TEST_DATABASE_URL (scripts/provision.sh prints it)',
);

export interface ReplicaSetOptions {
  /** The scratch directory's name prefix. */
  prefix: string;
  /** corral.yaml, shared by every replica. */
  configYaml: string;
  /** The runtime's flags (`--runtime fake --gpus h100-80g:2`). */
  runtimeArgs: string[];
  /** CORRAL_API_KEY, CORRAL_SECRET_KEY and the like, the same for every replica. */
  env: NodeJS.ProcessEnv;
  /** Lines of each server's log printed when a test fails. */
  logLines?: number;
}

export interface ReplicaSet {
  /** Starts one more replica with a data directory of its own. */
  start(): Promise<ServeProcess>;
  /**
   * Starts two replicas, the second once the first leads, and answers both once each sees the other alive and the
   * first leading (asked with `apiKey`, an admin key, through `GET cluster`).
   */
  leaderAndFollower(apiKey: string): Promise<{ leader: ServeProcess; follower: ServeProcess }>;
  readonly servers: readonly ServeProcess[];
}

/** What `GET cluster` says of the replicas. */
export interface ClusterView {
  self: string;
  leader: { replica: string; since: string; token: number } | null;
  replicas: { id: string; alive: boolean; leader: boolean }[];
}

export const clusterOf = async (server: ServeProcess, apiKey: string): Promise<ClusterView> =>
  (await callApi(server, apiKey, 'cluster')).body as ClusterView;

const settled = (check: () => Promise<void>) => vi.waitFor(check, { timeout: 15_000, interval: 100 });

/** Call inside a describe: its hooks are that describe's. */
export function replicaSet(options: ReplicaSetOptions): ReplicaSet {
  let databases: ScratchDatabases;
  let databaseUrl = '';
  let dir = '';
  const servers: ServeProcess[] = [];

  beforeAll(async () => {
    databases = await ScratchDatabases.connect(baseUrl ?? '');
    databaseUrl = await databases.create('corral_e2e');
    dir = mkdtempSync(join(tmpdir(), options.prefix));
    writeFileSync(join(dir, 'corral.yaml'), options.configYaml);
  });
  afterEach(async (context) => {
    if (context.task.result?.state === 'fail')
      for (const server of servers) printServeLog(server, options.logLines ?? 60);
  });
  afterAll(async () => {
    for (const server of servers) if (server.child.exitCode === null) await server.stop();
    await databases.dropAll();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async () => {
    const dataDir = mkdtempSync(join(dir, 'data-'));
    const server = await startServe(
      [...options.runtimeArgs, '--config', join(dir, 'corral.yaml'), '--database-url', databaseUrl],
      { ...options.env, CORRAL_DATA_DIR: dataDir },
    );
    servers.push(server);
    return server;
  };
  return {
    servers,
    start,
    async leaderAndFollower(apiKey) {
      const leader = await start();
      await settled(async () => {
        const seen = await clusterOf(leader, apiKey);
        expect(seen.leader?.replica).toBe(seen.self);
      });
      const follower = await start();
      await settled(async () => {
        const seen = await clusterOf(follower, apiKey);
        expect(seen.replicas.filter((r) => r.alive)).toHaveLength(2);
        expect(seen.leader?.replica).not.toBe(seen.self);
      });
      return { leader, follower };
    },
  };
}
