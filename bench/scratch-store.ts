/**
 * The stores a benchmark suite measures: SQLite in a temp file (WAL + synchronous=NORMAL, as `corral serve` opens
 * it, its statements run in-process: bench/sqlite-thread.ts measures what the server's query thread adds) and PostgreSQL in a fresh schema of CORRAL_TEST_DATABASE_URL's database, dropped after. Each migrated.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { DatabaseConnection } from '../src/store/connection.js';
import { connectPostgres } from '../src/store/postgres/connect.js';
import { connectSqlite } from '../src/store/sqlite/connect.js';
import { Store } from '../src/store/store.js';

export interface ScratchStore {
  name: 'sqlite' | 'postgres';
  /** The engine and how it was opened, for the suite's output. */
  describe: string;
  store: Store;
  /** The store's own connection (its pool): for a suite's plain SQL beside the store's queries. */
  connection: DatabaseConnection;
  /** A temp directory of its own (the SQLite file's, or for the suite's data), removed by `dispose`. */
  dataDir: string;
  dispose(): Promise<void>;
}

export async function openSqliteScratch(): Promise<ScratchStore> {
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-'));
  const connection = connectSqlite(join(dataDir, 'corral.db'));
  const store = new Store({ connection });
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    name: 'sqlite',
    describe:
      'SQLite, temp file, WAL + synchronous=NORMAL, in-process (corral serve runs them on its query thread: bench/sqlite-thread.ts)',
    store,
    connection,
    dataDir,
    async dispose() {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function openPostgresScratch(connectionString: string): Promise<ScratchStore> {
  const schema = `corral_bench_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-bench-'));
  const admin = new pg.Client({ connectionString });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const dropAll = async () => {
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  };
  // The pool size is the one `corral serve` uses (connectPostgres's default of 10).
  const connection = connectPostgres({ connectionString, schema });
  const store = new Store({ connection });
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    await dropAll();
    throw error;
  }
  const version = await admin.query<{ server_version: string }>('show server_version');
  return {
    name: 'postgres',
    describe: `PostgreSQL ${version.rows[0]?.server_version ?? '?'}, fresh schema ${schema} (dropped after), pool of 10`,
    store,
    connection,
    dataDir,
    async dispose() {
      await store.close();
      await dropAll();
    },
  };
}

/**
 * Runs `bench` on SQLite, then on PostgreSQL where `postgresUrl` is set, each store opened by `open` and disposed
 * after, whatever `bench` did.
 */
export async function eachScratchStore<S extends ScratchStore>(
  postgresUrl: string | undefined,
  open: { sqlite: () => Promise<S>; postgres: (url: string) => Promise<S> },
  bench: (store: S) => Promise<void>,
): Promise<void> {
  const openers = [open.sqlite, ...(postgresUrl ? [() => open.postgres(postgresUrl)] : [])];
  for (const opener of openers) {
    const target = await opener();
    try {
      await bench(target);
    } finally {
      await target.dispose();
    }
  }
}
