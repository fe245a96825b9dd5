/**
 * One `corral serve` per SQLite database. The lock is SQLite's own: an exclusive transaction held open on a small
 * lock database beside the data (`corral.db.lock`), which SQLite takes with an fcntl lock. The kernel drops that
 * lock when the process dies, also by SIGKILL, so no stale lock file is ever left behind, and SQLite also refuses
 * a second open in the same process. The data file itself is not locked: `corral keys` and the sqlite3 shell
 * may still read and write it while the server runs.
 */
import SqliteDatabase from 'better-sqlite3';

/** Another process (or another open in this one) holds the database. */
export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError';
  readonly code = 'DATABASE_IN_USE';

  constructor(
    /** The SQLite database file. */
    readonly databaseFile: string,
  ) {
    super(
      `the SQLite database ${databaseFile} is in use by another corral serve (SQLite serves one process; ` +
        'run several replicas on PostgreSQL: docs/operations.md)',
    );
  }
}

/** A lock held until `release` (or the process's end). */
export interface ProcessLock {
  /** The lock database's file. */
  readonly path: string;
  release(): void;
}

/** The lock database beside `databaseFile`. */
export function lockFileOf(databaseFile: string): string {
  return `${databaseFile}.lock`;
}

/** Takes the database's lock now, or throws DatabaseInUseError at once (it never waits). */
export function lockSqliteDatabase(databaseFile: string): ProcessLock {
  const path = lockFileOf(databaseFile);
  const lock = new SqliteDatabase(path, { timeout: 0 });
  try {
    // A rollback journal (not WAL): an exclusive transaction then keeps every other connection out, readers too.
    lock.pragma('journal_mode = DELETE');
    lock.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    lock.close();
    if (isBusy(error)) throw new DatabaseInUseError(databaseFile);
    throw error;
  }
  return {
    path,
    release: () => {
      if (!lock.open) return;
      lock.exec('ROLLBACK');
      lock.close();
    },
  };
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}
