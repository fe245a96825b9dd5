/**
 * A statement cache under Kysely's SQLite driver: its `SqliteDialect` prepares every query anew
 * (`database.prepare(sql)` per execution); this wrapper of the better-sqlite3 database hands it the statement
 * already prepared for the same SQL text. The cache is bounded (least recently used first out), since queries with
 * `in (?, ?, ...)` lists have a text per list length; a cached statement still iterating (busy) is not shared, a
 * fresh one is prepared for that call.
 */
import type { Database as BetterSqliteDatabase, Statement } from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** How many statements are kept by default: the store's queries, with room for `in` lists of several lengths. */
export const DEFAULT_STATEMENT_CACHE_SIZE = 500;

export class StatementCache implements SqliteDatabase {
  readonly #db: BetterSqliteDatabase;
  readonly #max: number;
  /** Insertion order is recency: a hit moves its statement to the end, the first is the least recently used. */
  readonly #statements = new Map<string, Statement>();

  constructor(options: { database: BetterSqliteDatabase; maxStatements?: number }) {
    this.#db = options.database;
    this.#max = options.maxStatements ?? DEFAULT_STATEMENT_CACHE_SIZE;
  }

  /** How many statements are cached now. */
  get size(): number {
    return this.#statements.size;
  }

  prepare(sql: string): Statement {
    const cached = this.#statements.get(sql);
    if (cached) {
      if (cached.busy) return this.#db.prepare(sql);
      this.#statements.delete(sql);
      this.#statements.set(sql, cached);
      return cached;
    }
    const statement = this.#db.prepare(sql);
    this.#statements.set(sql, statement);
    if (this.#statements.size > this.#max) {
      const oldest = this.#statements.keys().next().value;
      if (oldest !== undefined) this.#statements.delete(oldest);
    }
    return statement;
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }
}
