/**
 * PostgreSQL's `DatabaseConnection`: a pg pool reading bigints as numbers, optionally in its own schema. A server
 * that goes away (restart, failover, network cut) never ends the process: a connection's error is listened to
 * (an 'error' event nobody listens to would throw), the broken connection leaves the pool, and the next query
 * opens a new one; a connection that cannot be made gives up after CONNECT_TIMEOUT_MS instead of waiting forever.
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DatabaseConnection } from '../connection.js';
import type { Database } from '../schema.js';
import { channelFor, listenerClient } from './change-feed.js';

const INT8_OID = 20;
/** How long a new connection may take before the query that needed it fails (pg's default: for ever). */
const CONNECT_TIMEOUT_MS = 5_000;

export interface PostgresOptions {
  connectionString: string;
  /** Schema to use instead of `public` (tests isolate themselves this way). */
  schema?: string;
  maxConnections?: number;
  /** Told when a connection breaks outside a query (the server restarted, say); the pool has already dropped it. */
  onConnectionError?: (error: Error) => void;
}

export function connectPostgres(options: PostgresOptions): DatabaseConnection {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // TCP keepalive probes a connection idle for 10 s (the system's default waits two hours), so that one to a server
    // that vanished without closing it (a machine lost) is given up; the system's probe interval and count decide when.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    // Epoch-millisecond columns are bigint; they fit a JS number, so parse them as one on this pool only.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as never,
    },
  });
  const onError = (error: Error) => options.onConnectionError?.(error);
  // Each connection gets a listener of its own for its whole life (checked out between two statements of a
  // transaction, it has none of the pool's); the pool re-emits an idle one's error as its own, said once already.
  pool.on('connect', (client) => client.on('error', onError));
  pool.on('error', () => undefined);
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
