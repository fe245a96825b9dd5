/**
 * SQLite's queries on a thread of their own. better-sqlite3 runs each statement synchronously on the thread that
 * calls it: on the event loop's thread, one insert of a 9.5 MiB job input held every other request of every tenant
 * for 170 to 230 ms (issue 29's tenant-isolation bench, profiled). Here the connection lives in a worker thread and
 * the event loop only posts the statement and its parameters (a copy, milliseconds for megabytes) and awaits the
 * answer, so a large write delays the queries queued behind it, not the server.
 *
 * The thread runs the same statement cache and free-page step as the in-process connection (their own source, so that no
 * separate file has to be found next to the compiled code or under the test runner), and answers what Kysely's
 * SQLite driver would: rows for a reader, changes and the last row id for a writer, the error's message and code.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { returnFreePages } from './reclaim.js';
import { StatementCache } from './statement-cache.js';

/**
 * The thread's program (CommonJS, `eval`). `__name` is what esbuild's keep-names option (tsx's) may call inside a
 * function's source; it is defined so that the class's source runs however this module was compiled.
 */
const THREAD_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
var __name = (target) => target;
const StatementCache = ${StatementCache.toString()};
const returnFreePages = ${returnFreePages.toString()};
const sqlite = new Database(workerData.path);
for (const pragma of workerData.pragmas) sqlite.pragma(pragma);
const statements = new StatementCache({ database: sqlite, maxStatements: workerData.maxStatements });
const asBuffer = (value) => value instanceof Uint8Array && !Buffer.isBuffer(value)
  ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value;
function answer(message) {
  switch (message.kind) {
    case 'query': {
      if (message.begin) sqlite.exec('begin');
      const statement = statements.prepare(message.sql);
      const parameters = message.parameters.map(asBuffer);
      if (statement.reader) return { rows: statement.all(parameters) };
      const { changes, lastInsertRowid } = statement.run(parameters);
      return { changes, lastInsertRowid };
    }
    case 'reclaim':
      return { pages: returnFreePages(sqlite, message.maxPages) };
    case 'close':
      statements.close();
      return {};
  }
  throw new Error('unknown message ' + message.kind);
}
parentPort.on('message', (message) => {
  let reply;
  try {
    reply = { id: message.id, ...answer(message) };
  } catch (error) {
    reply = { id: message.id, error: { name: (error && error.name) || 'Error', message: String((error && error.message) || error), code: error && error.code } };
  }
  parentPort.postMessage(reply);
  if (message.kind === 'close') parentPort.close();
});
`;

export interface QueryThreadOptions {
  /** The database file (already created, in WAL mode). */
  path: string;
  /** Run on the thread's connection before its first query (`synchronous = NORMAL`, ...). */
  pragmas: string[];
  maxStatements: number;
}

/** What a statement answered: rows for a reader, changes and the last row id for a writer. */
export interface ThreadAnswer {
  rows?: unknown[];
  changes?: number;
  lastInsertRowid?: number | bigint;
}

type Reply = ThreadAnswer & {
  id: number;
  pages?: number;
  error?: { name: string; message: string; code?: string };
};

/**
 * The error a statement failed with on the thread, as the in-process connection would have thrown it: its name
 * (`SqliteError`, `TypeError`, ...), message and better-sqlite3's code (store/unavailable.ts reads it).
 */
export class SqliteThreadError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    name = 'SqliteError',
  ) {
    super(message);
    this.name = name;
  }
}

export class SqliteQueryThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve(reply: Reply): void; reject(error: Error): void }>();
  readonly #exited: Promise<void>;
  #nextId = 1;
  /** Set once the thread is gone: every later call fails with it. */
  #gone: Error | undefined;

  constructor(options: QueryThreadOptions) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { driver, ...options } });
    this.#worker.on('message', (reply: Reply) => {
      const waiting = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      waiting?.resolve(reply);
    });
    this.#worker.on('error', (error) => this.#fail(error));
    this.#exited = new Promise((resolve) =>
      this.#worker.once('exit', (code) => {
        this.#fail(
          new SqliteThreadError(`the SQLite thread ended (exit code ${code})`, 'SQLITE_THREAD_ENDED'),
        );
        resolve();
      }),
    );
  }

  /**
   * Runs one statement with its parameters; with `begin`, a transaction is begun on the thread first, in the same
   * message (a transaction's BEGIN costs no round trip of its own).
   */
  async execute(sql: string, parameters: readonly unknown[], begin = false): Promise<ThreadAnswer> {
    const reply = await this.#ask({ kind: 'query', sql, parameters, begin });
    if (reply.rows) reply.rows = reply.rows.map(withBuffers);
    return reply;
  }

  /** Up to `maxPages` free pages returned to the disk; the pages still free, undefined inside a transaction. */
  async reclaimFreePages(maxPages: number): Promise<number | undefined> {
    return (await this.#ask({ kind: 'reclaim', maxPages })).pages;
  }

  /** Closes the connection (the last one to close checkpoints the WAL) and ends the thread. */
  async close(): Promise<void> {
    if (!this.#gone) await this.#ask({ kind: 'close' });
    await this.#exited;
  }

  #ask(message: Record<string, unknown>): Promise<Reply> {
    if (this.#gone) return Promise.reject(this.#gone);
    const id = this.#nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, ...message });
    }).then((reply) => {
      if (reply.error) throw new SqliteThreadError(reply.error.message, reply.error.code, reply.error.name);
      return reply;
    });
  }

  #fail(error: Error): void {
    this.#gone ??= error;
    for (const waiting of this.#pending.values()) waiting.reject(this.#gone);
    this.#pending.clear();
  }
}

/** A row as better-sqlite3 gives it in-process: a BLOB crosses the thread as a Uint8Array and becomes a Buffer again. */
function withBuffers(row: unknown): unknown {
  if (typeof row !== 'object' || row === null) return row;
  const record = row as Record<string, unknown>;
  for (const [key, value] of Object.entries(record))
    if (value instanceof Uint8Array && !Buffer.isBuffer(value))
      record[key] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return record;
}
