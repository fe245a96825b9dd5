/**
 * The database's clock, in epoch milliseconds, as an SQL expression: leases and heartbeats of several replicas are
 * timed by the one clock they share, never by each machine's own.
 */
import { type RawBuilder, sql } from 'kysely';
import type { DialectName } from '../schema.js';

/**
 * Now on the database server: when it received the statement (PostgreSQL's statement_timestamp, not the start of
 * its transaction), one value for the whole statement on both engines.
 */
export function databaseNow(dialect: DialectName): RawBuilder<number> {
  return dialect === 'postgres'
    ? sql<number>`(extract(epoch from statement_timestamp()) * 1000)::bigint`
    : sql<number>`cast(unixepoch('subsec') * 1000 as integer)`;
}
