/**
 * The PostgreSQL pool when the server goes away, on the real database: a connection the server ends (as a restart
 * does) while idle or between two statements of a transaction raises no uncaught error, is said through
 * onConnectionError, and the next query gets a fresh connection; isDatabaseUnavailable tells those errors (and a
 * server that is not there at all) from statements the database refuses.
 */
import { createServer } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import type { DatabaseConnection } from '../connection.js';
import { isDatabaseUnavailable } from '../unavailable.js';
import { connectPostgres } from './connect.js';

const url = process.env.CORRAL_TEST_DATABASE_URL;
const withPostgres = integrationAvailable(
  'PostgreSQL',
  Boolean(url),
  'set CORRAL_TEST_DATABASE_URL (scripts/provision.sh prints it)',
);

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

describe('isDatabaseUnavailable', () => {
  it('says yes to a server that is not there (ECONNREFUSED through the pool)', async () => {
    const connection = connectPostgres({
      connectionString: `postgres://corral:corral@127.0.0.1:${await closedPort()}/corral`,
    });
    const error = await sql`select 1`.execute(connection.db).then(
      () => undefined,
      (e: unknown) => e,
    );
    await connection.close();
    expect(error).toBeDefined();
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('says no to what is not about reaching the database', () => {
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
    expect(isDatabaseUnavailable('ECONNREFUSED')).toBe(false);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    // A cause chain is followed: a wrapped connection error still counts.
    const wrapped = new Error('write failed', { cause: Object.assign(new Error('x'), { code: '57P01' }) });
    expect(isDatabaseUnavailable(wrapped)).toBe(true);
  });
});

describe.skipIf(!withPostgres)('the PostgreSQL pool when the server ends its connections', () => {
  let admin: pg.Client;
  let connection: DatabaseConnection;
  const told: Error[] = [];

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    // One connection, so that the backend ended below is the one the next statement would use.
    connection = connectPostgres({
      connectionString: url ?? '',
      maxConnections: 1,
      onConnectionError: (error) => told.push(error),
    });
  });
  afterAll(async () => {
    await connection.close();
    await admin.end();
  });

  const backendPid = async (db = connection.db) =>
    Number((await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]?.pid);
  const terminate = (pid: number) => admin.query('select pg_terminate_backend($1)', [pid]);
  /** Lets pg read the server's goodbye and emit what it emits. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

  it('an idle connection ended by the server: said once, no uncaught error, the next query reconnects', async () => {
    told.length = 0;
    const before = await backendPid();
    await terminate(before);
    await settle();
    expect(told.length).toBe(1);
    expect(isDatabaseUnavailable(told[0])).toBe(true);
    const after = await backendPid();
    expect(after).not.toBe(before);
  });

  it('a connection ended between two statements of a transaction: the next statement fails as unavailable, then the pool recovers', async () => {
    told.length = 0;
    const failure = await connection.db
      .transaction()
      .execute(async (trx) => {
        await terminate(await backendPid(trx));
        await settle();
        await sql`select 1`.execute(trx);
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(failure).toBeDefined();
    expect(isDatabaseUnavailable(failure)).toBe(true);
    expect(told.length).toBeGreaterThanOrEqual(1);
    expect(await backendPid()).toBeGreaterThan(0);
  });
});
