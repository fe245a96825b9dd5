/**
 * The data directory's modes: it holds the secret key, key hashes and sealed secrets, so the directory is 0700 and
 * the key and the SQLite database (with its -wal and -shm) are 0600. Created so, and tightened at start where an
 * older install or a umask left them readable by others. A directory Corral may not chmod (another user owns it: a
 * Kubernetes emptyDir is root's, 0777) is refused when it would hold those secrets, and used as it is when it holds
 * none (PostgreSQL, and the key from CORRAL_SECRET_KEY): then nothing in it needs hiding.
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
  /** The secret key comes from elsewhere (CORRAL_SECRET_KEY): the directory does not hold it. */
  keyElsewhere?: boolean;
}

/** A directory Corral could not tighten and uses as it is, because it holds no secret. */
export interface OpenDataDir {
  path: string;
  mode: string;
  ownerUid: number;
}

export interface SecuredDataDir {
  tightened: TightenedMode[];
  /** Set when the directory is another user's and left with group or other rights (it holds no secret). */
  leftOpen?: OpenDataDir;
}

/**
 * Creates the data directory 0700 and takes group and other rights away from the directory, the key and the SQLite
 * files where they exist. Returns what was tightened, and the directory when it was left open (see the header).
 */
export function secureDataDir(files: DataDirFiles): SecuredDataDir {
  const tightened: TightenedMode[] = [];
  mkdirSync(files.dataDir, { recursive: true, mode: DATA_DIR_MODE });
  let leftOpen: OpenDataDir | undefined;
  try {
    tighten(files.dataDir, DATA_DIR_MODE, tightened);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    leftOpen = notOurs(files);
  }
  const { databaseFile } = files;
  const candidates = [join(files.dataDir, 'secret.key')];
  if (databaseFile !== undefined) {
    candidates.push(databaseFile, `${databaseFile}-wal`, `${databaseFile}-shm`);
  }
  for (const path of candidates) {
    if (existsSync(path)) tighten(path, DATA_FILE_MODE, tightened);
  }
  return leftOpen === undefined ? { tightened } : { tightened, leftOpen };
}

/**
 * The data directory is another user's and has group or other rights Corral may not take away: usable only when
 * it will hold no secret, else an error that says whose it is and the ways out.
 */
function notOurs(files: DataDirFiles): OpenDataDir {
  const stat = statSync(files.dataDir);
  const open: OpenDataDir = {
    path: files.dataDir,
    mode: (stat.mode & 0o7777).toString(8),
    ownerUid: stat.uid,
  };
  const keyFile = join(files.dataDir, 'secret.key');
  const secrets = [
    ...(files.keyElsewhere === true && !existsSync(keyFile) ? [] : ['the secret key (secret.key)']),
    ...(files.databaseFile === undefined ? [] : ['the SQLite database']),
  ];
  if (secrets.length === 0) return open;
  const uid = process.getuid?.() ?? -1;
  throw new Error(
    `it is owned by uid ${open.ownerUid} with mode ${open.mode}, and Corral (uid ${uid}) may not take group and ` +
      `other rights away from it, yet it would hold ${secrets.join(' and ')}: make uid ${uid} its owner, chmod ` +
      `it 700 as its owner, or name a directory below it (Corral creates that one 0700); with PostgreSQL and ` +
      'CORRAL_SECRET_KEY it holds no secret and may stay as it is',
  );
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
