/** PostgreSQL's `DatabaseConnection`: a pg pool reading bigints as numbers, optionally in its own schema. */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DatabaseConnection } from '../connection.js';
import type { Database } from '../schema.js';
import { channelFor, listenerClient } from './change-feed.js';

const INT8_OID = 20;

export interface PostgresOptions {
  connectionString: string;
  /** Schema to use instead of `public` (tests isolate themselves this way). */
  schema?: string;
  maxConnections?: number;
}

export function connectPostgres(options: PostgresOptions): DatabaseConnection {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    // Epoch-millisecond columns are bigint; they fit a JS number, so parse them as one on this pool only.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as never,
    },
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    schema: options.schema ?? 'public',
    listener: {
      connect: listenerClient(options.connectionString, options.schema),
      channel: (name) => channelFor(options.schema ?? 'public', name),
    },
    isUniqueViolation: (error) =>
      typeof error === 'object' && error !== null && 'code' in error && error.code === '23505',
    describe: () => redactDatabaseUrl(options.connectionString),
    close: () => db.destroy(),
  };
}

/** The URL without its password, for logs and error messages. */
export function redactDatabaseUrl(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return 'postgres';
  }
}
