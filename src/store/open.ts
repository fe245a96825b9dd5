import { join } from 'node:path';
import type { DatabaseConnection } from './connection.js';
import { connectPostgres } from './postgres/connect.js';
import { connectSqlite } from './sqlite/connect.js';
import { Store } from './store.js';

/**
 * `postgres://…` or `postgresql://…` uses PostgreSQL; `sqlite:PATH` (or `sqlite::memory:`) uses SQLite;
 * no URL means SQLite in the data directory.
 */
export function connectDatabase(options: { databaseUrl?: string; dataDir: string }): DatabaseConnection {
  const url = options.databaseUrl;
  if (url === undefined || url === '') return connectSqlite(join(options.dataDir, 'corral.db'));
  if (/^postgres(ql)?:\/\//.test(url)) return connectPostgres({ connectionString: url });
  if (url.startsWith('sqlite:')) return connectSqlite(url.slice('sqlite:'.length));
  throw new Error(
    `database URL must start with postgres://, postgresql:// or sqlite: (got "${url.split(':')[0]}:…")`,
  );
}

/** Connects and migrates. */
export async function openStore(options: { databaseUrl?: string; dataDir: string }): Promise<Store> {
  const store = new Store({ connection: connectDatabase(options) });
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
