/**
 * Whether an error says the database cannot be reached now (down, restarting, the network cut, the pool unable to
 * connect in time; SQLite locked past its busy timeout, or its disk full or failing), as opposed to a statement it
 * refused. The API answers the former 503 DATABASE_UNAVAILABLE, the jobs routes 503 JOBS_UNAVAILABLE.
 */

/** Node's socket errors when the server is down, restarting or cut off. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL's SQLSTATEs for a server that is going away or not there yet: class 08 (connection exception),
 * 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, recovering).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123])$/;

/**
 * SQLite's (better-sqlite3's `SqliteError.code`, extended codes included) for a database that cannot take the
 * statement now: another connection holds the lock past the busy timeout, the disk is full or failing, the file
 * cannot be opened. A retry later may succeed; the statement itself was not refused.
 */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|PROTOCOL)(_[A-Z_]+)?$/;

/** What node-postgres says, without a code, when a connection dies or cannot be made in time. */
const DRIVER_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection terminated due to connection timeout',
];

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let cause = error, depth = 0; cause !== undefined && depth < 5; depth++) {
    if (typeof cause !== 'object' || cause === null) return false;
    const { code, message } = cause as { code?: unknown; message?: unknown };
    if (
      typeof code === 'string' &&
      (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code) || SQLITE_UNAVAILABLE.test(code))
    )
      return true;
    if (typeof message === 'string' && DRIVER_MESSAGES.some((m) => message.startsWith(m))) return true;
    if (cause instanceof AggregateError && cause.errors.some((e) => isDatabaseUnavailable(e))) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}
