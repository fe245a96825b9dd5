/**
 * Opening the store from a database URL or the data directory: which engine, whether the database answers
 * (`DatabaseUnreachableError`, with no password in it), and migration.
 */
import { join } from 'node:path';
import type { DatabaseConnection } from './connection.js';
import { connectPostgres, redactDatabaseUrl } from './postgres/connect.js';
import { connectSqlite, type SqliteOptions } from './sqlite/connect.js';
import { Store } from './store.js';

export interface StoreLocation {
  databaseUrl?: string | undefined;
  dataDir: string;
  /** SQLite only: checkpoint its WAL on a thread of its own (`corral serve`; see sqlite/checkpointer.ts). */
  sqlite?: SqliteOptions;
  /** PostgreSQL only: told when a connection breaks outside a query (postgres/connect.ts). */
  onConnectionError?: (error: Error) => void;
}

/**
 * The database could not be opened or answered no query: a problem of where it was told to look (the URL, the
 * data directory) or of the database server, not of Corral. `target` and the message never hold a password.
 */
export class DatabaseUnreachableError extends Error {
  override name = 'DatabaseUnreachableError';

  constructor(
    /** Where the database was looked for, without its password. */
    readonly target: string,
    /** Whether a database URL named it (else the default SQLite file in the data directory). */
    readonly fromUrl: boolean,
    /** Why, without the password. */
    readonly reason: string,
  ) {
    super(`cannot open the database ${target}: ${reason}`);
  }
}

/**
 * `postgres://…` or `postgresql://…` uses PostgreSQL; `sqlite:PATH` (or `sqlite::memory:`) uses SQLite;
 * no URL means SQLite in the data directory.
 */
export function connectDatabase(options: StoreLocation): DatabaseConnection {
  const url = options.databaseUrl;
  if (url === undefined || url === '')
    return connectSqlite(join(options.dataDir, 'corral.db'), options.sqlite);
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { onConnectionError } = options;
    return connectPostgres({ connectionString: url, ...(onConnectionError ? { onConnectionError } : {}) });
  }
  if (url.startsWith('sqlite:')) return connectSqlite(url.slice('sqlite:'.length), options.sqlite);
  throw new Error(
    `database URL must start with postgres://, postgresql:// or sqlite: (got "${url.split(':')[0]}:…")`,
  );
}

/** The SQLite database's file, where the location names one (not PostgreSQL, not `sqlite::memory:`). */
export function sqliteFileOf(options: StoreLocation): string | undefined {
  const url = options.databaseUrl;
  if (url === undefined || url === '') return join(options.dataDir, 'corral.db');
  if (!url.startsWith('sqlite:')) return undefined;
  const path = url.slice('sqlite:'.length);
  return path === ':memory:' || path === '' ? undefined : path;
}

/** Connects, checks that the database answers (DatabaseUnreachableError if not), and migrates. */
export async function openStore(options: StoreLocation): Promise<Store> {
  const store = new Store({ connection: reachableConnection(options) });
  try {
    await store.ping();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw unreachable(options, error);
  }
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

function reachableConnection(options: StoreLocation): DatabaseConnection {
  try {
    return connectDatabase(options);
  } catch (error) {
    throw unreachable(options, error);
  }
}

function unreachable(options: StoreLocation, error: unknown): DatabaseUnreachableError {
  const url = options.databaseUrl || undefined;
  const target = url === undefined ? join(options.dataDir, 'corral.db') : redactDatabaseUrl(url);
  const reason = error instanceof Error ? error.message || String(error) : String(error);
  return new DatabaseUnreachableError(target, url !== undefined, withoutPassword(reason, url));
}

/** Drivers may quote the URL in their messages: its password is cut out wherever it appears. */
function withoutPassword(text: string, url: string | undefined): string {
  const password = url === undefined ? '' : passwordOf(url);
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // A malformed %-escape: only the password as written can appear.
  }
  let redacted = text;
  for (const secret of [password, decoded]) {
    if (secret !== '') redacted = redacted.split(secret).join('***');
  }
  return redacted;
}

function passwordOf(url: string): string {
  try {
    return new URL(url).password;
  } catch {
    // Not a URL the WHATWG parser accepts: take what lies between the user's colon and the last '@'.
    return /^[a-z]+:\/\/[^:/@]*:(.*)@[^@]*$/i.exec(url)?.[1] ?? '';
  }
}
