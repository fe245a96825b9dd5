/**
 * Kysely's SQLite dialect over a query thread (query-thread.ts): the same SQL compiler, adapter and introspector as
 * `SqliteDialect`, with a driver that sends each statement to the thread instead of running it on the event loop.
 * Like Kysely's own SQLite driver it has one connection, lent to one caller at a time, so a transaction's statements
 * never interleave with another caller's.
 */
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { SqliteQueryThread } from './query-thread.js';

export class ThreadedSqliteDialect implements Dialect {
  readonly #thread: SqliteQueryThread;

  constructor(options: { thread: SqliteQueryThread }) {
    this.#thread = options.thread;
  }

  createDriver(): Driver {
    return new ThreadedSqliteDriver(this.#thread);
  }

  createQueryCompiler(): SqliteQueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): SqliteAdapter {
    return new SqliteAdapter();
  }

  createIntrospector(db: Kysely<any>): SqliteIntrospector {
    return new SqliteIntrospector(db);
  }
}

class ThreadedSqliteDriver implements Driver {
  readonly #connection: ThreadConnection;
  readonly #thread: SqliteQueryThread;
  /** The one connection's current borrower; the next waits for it. */
  #lent: Promise<void> = Promise.resolve();
  #giveBack: (() => void) | undefined;

  constructor(thread: SqliteQueryThread) {
    this.#thread = thread;
    this.#connection = new ThreadConnection(thread);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#lent;
    let giveBack!: () => void;
    this.#lent = new Promise<void>((resolve) => {
      giveBack = resolve;
    });
    await previous;
    this.#giveBack = giveBack;
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    const giveBack = this.#giveBack;
    this.#giveBack = undefined;
    giveBack?.();
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    await this.#thread.close();
  }
}

class ThreadConnection implements DatabaseConnection {
  readonly #thread: SqliteQueryThread;

  constructor(thread: SqliteQueryThread) {
    this.#thread = thread;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const answer = await this.#thread.execute(compiledQuery.sql, compiledQuery.parameters);
    if (answer.rows) return { rows: answer.rows as R[] };
    const { changes, lastInsertRowid } = answer;
    return {
      rows: [],
      ...(changes === undefined || changes === null ? {} : { numAffectedRows: BigInt(changes) }),
      ...(lastInsertRowid === undefined || lastInsertRowid === null
        ? {}
        : { insertId: BigInt(lastInsertRowid) }),
    };
  }

  // biome-ignore lint/correctness/useYield: no query of the store streams; one that did is told so at once.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the threaded SQLite driver does not stream queries');
  }
}
