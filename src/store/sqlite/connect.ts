/** SQLite's `DatabaseConnection` (better-sqlite3): the store of a server given no database URL. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { DatabaseConnection } from '../connection.js';
import type { Database } from '../schema.js';
import { Checkpointer } from './checkpointer.js';
import { SqliteQueryThread } from './query-thread.js';
import { returnFreePages } from './reclaim.js';
import { DEFAULT_STATEMENT_CACHE_SIZE, StatementCache } from './statement-cache.js';
import { ThreadedSqliteDialect } from './thread-dialect.js';

export interface SqliteOptions {
  /**
   * Checkpoint the WAL on a thread of its own (checkpointer.ts) instead of in the commits of this connection: for
   * a server, whose commits share the event loop with every request. Not for a throwaway `:memory:` database.
   */
  backgroundCheckpoints?: { intervalMs: number; onError?: (message: string) => void };
  /**
   * Run the queries on a thread of their own (query-thread.ts) instead of on the event loop: for a server, whose
   * large writes would otherwise hold every other request. Not for a throwaway `:memory:` database (ignored).
   */
  queryThread?: boolean;
  /** Told once when an existing database is converted to incremental auto-vacuum (a VACUUM at open). */
  onVacuumConversion?: (done: { ms: number; bytesBefore: number; bytesAfter: number }) => void;
}

/** Opens (creating when needed) an SQLite database in WAL mode; `:memory:` for a throwaway one. */
export function connectSqlite(path: string, options: SqliteOptions = {}): DatabaseConnection {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SqliteDatabase(path);
  // First: a new file takes the mode only before anything (WAL mode included) writes its header.
  if (path !== ':memory:') useIncrementalVacuum(sqlite, options.onVacuumConversion);
  sqlite.pragma('journal_mode = WAL');
  const background = path === ':memory:' ? undefined : options.backgroundCheckpoints;
  const pragmas = [
    'synchronous = NORMAL',
    'busy_timeout = 5000',
    'foreign_keys = ON',
    ...(background ? ['wal_autocheckpoint = 0'] : []),
  ];
  const checkpointer = background && new Checkpointer({ path, ...background });
  const common = {
    dialect: 'sqlite' as const,
    isUniqueViolation: (error: unknown) =>
      typeof error === 'object' &&
      error !== null &&
      'code' in error &&
      (error.code === 'SQLITE_CONSTRAINT_UNIQUE' || error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'),
    describe: () => `sqlite:${path}`,
  };
  if (options.queryThread && path !== ':memory:') {
    // The file is made and converted here; from now on the thread's connection is the only one that queries it.
    sqlite.close();
    const thread = new SqliteQueryThread({ path, pragmas, maxStatements: DEFAULT_STATEMENT_CACHE_SIZE });
    const db = new Kysely<Database>({ dialect: new ThreadedSqliteDialect({ thread }) });
    return {
      ...common,
      db,
      reclaimFreePages: (maxPages: number) => thread.reclaimFreePages(maxPages),
      close: async () => {
        // The checkpointer's connection first: the last connection to close checkpoints what is left.
        await checkpointer?.stop();
        await db.destroy();
      },
    };
  }
  for (const pragma of pragmas) sqlite.pragma(pragma);
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: new StatementCache({ database: sqlite }) }),
  });
  return {
    ...common,
    db,
    ...(path === ':memory:'
      ? {}
      : { reclaimFreePages: async (maxPages: number) => returnFreePages(sqlite, maxPages) }),
    close: async () => {
      // The thread's connection first: the last connection to close checkpoints what is left and removes the WAL.
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/** SQLite's `auto_vacuum` modes, as `PRAGMA auto_vacuum` reads them. */
const INCREMENTAL = 2;

/**
 * Keeps the file's free pages returnable to the disk (store/sqlite/reclaim.ts returns them, a bounded step at a
 * time, after purges and retention). The mode takes effect before the first table is made: a new database gets it
 * at once; an existing one (made before this) needs one VACUUM, which rewrites the whole file at open (a copy of
 * it in the WAL meanwhile: time and disk in proportion to its size), once.
 */
function useIncrementalVacuum(
  sqlite: SqliteDatabase.Database,
  told?: SqliteOptions['onVacuumConversion'],
): void {
  if (sqlite.pragma('auto_vacuum', { simple: true }) === INCREMENTAL) return;
  sqlite.pragma('auto_vacuum = INCREMENTAL');
  const tables = sqlite.prepare("select count(*) as n from sqlite_master where type = 'table'").get() as {
    n: number;
  };
  if (tables.n === 0) return;
  const size = () =>
    Number(sqlite.pragma('page_count', { simple: true })) *
    Number(sqlite.pragma('page_size', { simple: true }));
  const bytesBefore = size();
  const started = performance.now();
  sqlite.exec('VACUUM');
  told?.({ ms: Math.round(performance.now() - started), bytesBefore, bytesAfter: size() });
}
