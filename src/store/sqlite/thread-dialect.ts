/**
 * Kysely's SQLite dialect over a query thread (query-thread.ts): the same SQL compiler, adapter and introspector as
 * `SqliteDialect`, with a driver that sends each statement to the thread instead of running it on the event loop.
 * Like Kysely's own SQLite driver it has one connection, lent to one caller at a time, so a transaction's statements
 * never interleave with another caller's. A transaction's BEGIN travels with its first statement and a transaction
 * with none sends nothing: each message to the thread waits for the thread to be scheduled, which a busy machine
 * makes milliseconds (issue 35's time to first token: a streamed chunk's write and read are transactions).
 */
import {
  type CompiledQuery,
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

  async beginTransaction(): Promise<void> {
    this.#connection.beginWithNextStatement();
  }

  async commitTransaction(): Promise<void> {
    await this.#connection.endTransaction('commit');
  }

  async rollbackTransaction(): Promise<void> {
    await this.#connection.endTransaction('rollback');
  }

  async destroy(): Promise<void> {
    await this.#thread.close();
  }
}

class ThreadConnection implements DatabaseConnection {
  readonly #thread: SqliteQueryThread;
  /** A transaction was begun and none of its statements sent yet: the first one carries the BEGIN. */
  #beginPending = false;

  constructor(thread: SqliteQueryThread) {
    this.#thread = thread;
  }

  beginWithNextStatement(): void {
    this.#beginPending = true;
  }

  /** Commits or rolls back; a transaction that sent no statement was never begun on the thread: nothing to end. */
  async endTransaction(end: 'commit' | 'rollback'): Promise<void> {
    if (this.#beginPending) {
      this.#beginPending = false;
      return;
    }
    await this.#thread.execute(end, []);
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const begin = this.#beginPending;
    this.#beginPending = false;
    const answer = await this.#thread.execute(compiledQuery.sql, compiledQuery.parameters, begin);
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
