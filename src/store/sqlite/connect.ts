/** SQLite's `DatabaseConnection` (better-sqlite3): the store of a server given no database URL. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import type { DatabaseConnection } from '../connection.js';
import type { Database } from '../schema.js';
import { Checkpointer } from './checkpointer.js';
import { StatementCache } from './statement-cache.js';

export interface SqliteOptions {
  /**
   * Checkpoint the WAL on a thread of its own (checkpointer.ts) instead of in the commits of this connection: for
   * a server, whose commits share the event loop with every request. Not for a throwaway `:memory:` database.
   */
  backgroundCheckpoints?: { intervalMs: number; onError?: (message: string) => void };
}

/** Opens (creating when needed) an SQLite database in WAL mode; `:memory:` for a throwaway one. */
export function connectSqlite(path: string, options: SqliteOptions = {}): DatabaseConnection {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const background = path === ':memory:' ? undefined : options.backgroundCheckpoints;
  if (background) sqlite.pragma('wal_autocheckpoint = 0');
  const checkpointer = background && new Checkpointer({ path, ...background });
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: new StatementCache({ database: sqlite }) }),
  });
  return {
    db,
    dialect: 'sqlite',
    isUniqueViolation: (error) =>
      typeof error === 'object' &&
      error !== null &&
      'code' in error &&
      (error.code === 'SQLITE_CONSTRAINT_UNIQUE' || error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'),
    describe: () => `sqlite:${path}`,
    close: async () => {
      // The thread's connection first: the last connection to close checkpoints what is left and removes the WAL.
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}
