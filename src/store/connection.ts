/** `DatabaseConnection`: what the store needs of a database, provided by sqlite/ and postgres/ alike. */
import type { Kysely } from 'kysely';
import type { ListenerClient } from './postgres/change-feed.js';
import type { Database, DialectName } from './schema.js';

/** What each dialect folder provides: the Kysely instance plus the few facts that differ between engines. */
export interface DatabaseConnection {
  db: Kysely<Database>;
  dialect: DialectName;
  /** PostgreSQL schema holding the tables (the migrator must not look at other schemas); undefined for SQLite. */
  schema?: string;
  /** PostgreSQL: a new client for a dedicated LISTEN connection (postgres/change-feed.ts), in the same schema. */
  listener?: { connect(): ListenerClient; channel(name: string): string };
  /**
   * SQLite: returns up to `maxPages` free pages to the disk (sqlite/reclaim.ts); the pages still free, or undefined
   * when it could not run now (a transaction is open). PostgreSQL has none: its autovacuum makes space reusable.
   */
  reclaimFreePages?(maxPages: number): Promise<number | undefined>;
  /** True when the error is a unique-constraint violation, whatever the engine. */
  isUniqueViolation(error: unknown): boolean;
  /** Where the data lives, without credentials, for logs. */
  describe(): string;
  close(): Promise<void>;
}
