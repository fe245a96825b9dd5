/**
 * SQLite's WAL checkpoints on a thread of their own. By default SQLite checkpoints inside the commit that takes the
 * WAL past 1,000 pages, on the thread that commits: copying the pages into the database file and syncing it held
 * Corral's event loop for 25 to 36 ms at a time in the abuse bench (creates of 64 KB specs), in front of every
 * other request. With automatic checkpoints off on the serving connection, a worker thread with a connection of its
 * own checkpoints every `intervalMs` (PASSIVE: it never waits for a writer or a reader, and what it cannot copy yet
 * it copies next time).
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Runs in the worker (CommonJS, `eval`), so that no separate file has to be found next to the compiled code. */
const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface CheckpointerOptions {
  /** The database file (in WAL mode). */
  path: string;
  intervalMs: number;
  /** A checkpoint that failed (the next one is tried all the same). */
  onError?: (message: string) => void;
}

export class Checkpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;

  constructor(options: CheckpointerOptions) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, path: options.path, intervalMs: options.intervalMs },
    });
    this.#worker.on('message', (message: { error?: string }) => {
      if (message.error !== undefined) options.onError?.(message.error);
    });
    this.#worker.on('error', (error) => options.onError?.(error.message));
    this.#exited = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
  }

  /** Stops after the checkpoint in progress, if any, and closes the thread's connection. */
  async stop(): Promise<void> {
    this.#worker.postMessage('stop');
    await this.#exited;
  }
}
