/**
 * The data directory's modes: it holds the secret key, key hashes and sealed secrets, so the directory is 0700 and
 * the key and the SQLite database (with its -wal and -shm) are 0600. Created so, and tightened at start where an
 * older install or a umask left them readable by others.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;

/** A mode changed at start: what it was and what it is now (octal, e.g. "644" -> "600"). */
export interface TightenedMode {
  path: string;
  from: string;
  to: string;
}

export interface DataDirFiles {
  dataDir: string;
  /** The SQLite database, when it is a file (not PostgreSQL, not `:memory:`). */
  databaseFile?: string | undefined;
}

/**
 * Creates the data directory 0700 and takes group and other rights away from the directory, the key and the SQLite
 * files where they exist. Returns what was tightened.
 */
export function secureDataDir(files: DataDirFiles): TightenedMode[] {
  const tightened: TightenedMode[] = [];
  mkdirSync(files.dataDir, { recursive: true, mode: DATA_DIR_MODE });
  tighten(files.dataDir, DATA_DIR_MODE, tightened);
  const { databaseFile } = files;
  const candidates = [join(files.dataDir, 'secret.key')];
  if (databaseFile !== undefined) {
    candidates.push(databaseFile, `${databaseFile}-wal`, `${databaseFile}-shm`);
  }
  for (const path of candidates) {
    if (existsSync(path)) tighten(path, DATA_FILE_MODE, tightened);
  }
  return tightened;
}

/**
 * Creates an absent SQLite database file 0600 before SQLite opens it (an empty file is a new database), so that it
 * never exists with the umask's mode; SQLite gives its -wal and -shm the database's mode.
 */
export function createDatabaseFile(databaseFile: string | undefined): void {
  if (databaseFile === undefined || existsSync(databaseFile) || !existsSync(dirname(databaseFile))) return;
  closeSync(openSync(databaseFile, 'a', DATA_FILE_MODE));
}

/** Removes every right beyond `mode` (a 0400 key stays 0400). */
function tighten(path: string, mode: number, tightened: TightenedMode[]): void {
  const current = statSync(path).mode & 0o777;
  const next = current & mode;
  if (next === current) return;
  chmodSync(path, next);
  tightened.push({ path, from: current.toString(8), to: next.toString(8) });
}
