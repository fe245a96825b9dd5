/** The stores each store suite runs on: SQLite always, PostgreSQL in a throwaway schema when it is configured. */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe } from 'vitest';
import { connectPostgres } from '../../src/store/postgres/connect.js';
import type { Database } from '../../src/store/schema.js';
import { connectSqlite } from '../../src/store/sqlite/connect.js';
import { Store } from '../../src/store/store.js';
import { integrationAvailable } from './integration.js';
import { STORES_ENV, type StoresChoice } from './tiers.js';

export interface StoreTarget {
  name: 'sqlite' | 'sqlite-thread' | 'postgres';
  /** A fresh, migrated, empty store and its database (for tests of what lies below the store); `dispose` drops
   * what it created. */
  open(): Promise<{
    store: Store;
    db: Kysely<Database>;
    dispose(): Promise<void>;
    /** Another store on the same database, as another replica opens it (SQLite: the same store, one process). */
    sibling(): Store;
  }>;
}

const postgresUrl = process.env.CORRAL_TEST_DATABASE_URL;

const sqlite: StoreTarget = {
  name: 'sqlite',
  async open() {
    const connection = connectSqlite(':memory:');
    const store = new Store({ connection });
    await store.migrate();
    return { store, db: connection.db, dispose: () => store.close(), sibling: () => store };
  },
};

/**
 * A migrated SQLite database's bytes, made once per test process (the first time a test opens `sqliteThread`) and
 * written out for each test, instead of running every migration again for every test.
 */
let migratedSqlite: Promise<Buffer> | undefined;
function migratedSqliteBytes(): Promise<Buffer> {
  migratedSqlite ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-store-template-'));
    try {
      const file = join(dir, 'corral.db');
      const store = new Store({ connection: connectSqlite(file, { queryThread: true }) });
      await store.migrate();
      await store.close();
      // Closed, the database is whole in its file: no write-ahead log is left beside it.
      if (existsSync(`${file}-wal`)) throw new Error('the migrated SQLite template kept a write-ahead log');
      return readFileSync(file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  return migratedSqlite;
}

/** SQLite as `corral serve` opens it: a file, its queries on a thread of their own (store/sqlite/query-thread.ts). */
const sqliteThread: StoreTarget = {
  name: 'sqlite-thread',
  async open() {
    const migrated = await migratedSqliteBytes();
    const dir = mkdtempSync(join(tmpdir(), 'corral-store-'));
    const file = join(dir, 'corral.db');
    writeFileSync(file, migrated);
    const connection = connectSqlite(file, { queryThread: true });
    const store = new Store({ connection });
    return {
      store,
      db: connection.db,
      sibling: () => store,
      async dispose() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgres = (connectionString: string): StoreTarget => ({
  name: 'postgres',
  async open() {
    // Each store gets its own schema so that suites can run in parallel on one database.
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    const connection = connectPostgres({ connectionString, schema, maxConnections: 4 });
    const store = new Store({ connection });
    // Kysely's migrator lists the tables of every schema, and a parallel suite's drop fails that look: the migration
    // tries again then (src/store/migrations/index.ts), so the schemas are made and dropped without a lock between
    // suites (one was taken until 2026-11-30: the store rerun took 66 s and 73 s without it, 77 s with it).
    await store.migrate();
    const siblings: Store[] = [];
    return {
      store,
      db: connection.db,
      sibling() {
        const sibling = new Store({
          connection: connectPostgres({ connectionString, schema, maxConnections: 4 }),
        });
        siblings.push(sibling);
        return sibling;
      },
      async dispose() {
        for (const sibling of siblings) await sibling.close();
        await store.close();
        await admin.query(`drop schema ${schema} cascade`);
        await admin.end();
      },
    };
  },
});

/**
 * The stores a suite runs on. By default SQLite always and PostgreSQL when CORRAL_TEST_DATABASE_URL is set (required
 * in CI); a Vitest project narrows it by CORRAL_TEST_STORES (test/support/tiers.ts): SQLite in memory alone in the
 * unit tier; PostgreSQL and SQLite through its query thread in the integration tier's rerun of the per-store suites.
 */
export function storeTargets(): StoreTarget[] {
  const choice = process.env[STORES_ENV] as StoresChoice | undefined;
  if (choice === 'sqlite') return [sqlite];
  const withPostgres = integrationAvailable(
    'PostgreSQL',
    Boolean(postgresUrl),
    'set CORRAL_TEST_DATABASE_URL (scripts/provision.sh prints it)',
  );
  const postgresTargets = withPostgres && postgresUrl ? [postgres(postgresUrl)] : [];
  return choice === 'rerun' ? [sqliteThread, ...postgresTargets] : [sqlite, ...postgresTargets];
}

/** Whether this run is the integration tier's rerun of a unit-tier file that runs suites per store. */
export function storeRerun(): boolean {
  return process.env[STORES_ENV] === 'rerun';
}

/**
 * `describe` for the tests of a per-store file that do not run per store: they ran in the unit tier already, so the
 * rerun skips them and each runs once.
 */
export const describeOnce = describe.skipIf(storeRerun());

/** Opens a fresh store (and its sibling, as another replica opens it) before each test of the suite, hands both to
 * `use`, and disposes of them after the test. */
export function freshStoreEachTest(
  target: StoreTarget,
  use: (opened: { store: Store; sibling: Store }) => void,
): void {
  let dispose: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    use({ store: opened.store, sibling: opened.sibling() });
  });
  afterEach(async () => {
    await dispose?.();
  });
}
