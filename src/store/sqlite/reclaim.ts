/**
 * Returning an SQLite file's free pages to the disk after deletes (issue 29: a purge freed rows, not the disk):
 * with `auto_vacuum = INCREMENTAL` (connect.ts), `PRAGMA incremental_vacuum(n)` moves up to n pages and truncates
 * the file. better-sqlite3 runs it on the connection's thread (the event loop's, or the query thread's in `corral
 * serve`), in front of every other query, so it goes a bounded step at a time: `Reclaimer`
 * takes one step per call while pages are free (the jobs' sweep calls it every second), none when there are none.
 */
import type { Database as BetterSqliteDatabase } from 'better-sqlite3';

/** Pages one step returns at most: 8 MiB of 4 KiB pages (reclaim.test.ts measures a step). */
export const RECLAIM_PAGES_PER_STEP = 2048;

export class Reclaimer {
  readonly #reclaim: (maxPages: number) => Promise<number | undefined>;
  readonly #pages: number;
  /** Whether free pages may be left (a delete happened, or the last step did not return them all). */
  #pending = true;

  constructor(options: {
    reclaim: (maxPages: number) => Promise<number | undefined>;
    pagesPerStep?: number;
  }) {
    this.#reclaim = options.reclaim;
    this.#pages = options.pagesPerStep ?? RECLAIM_PAGES_PER_STEP;
  }

  /** Rows were deleted: the next step looks for free pages. */
  deleted(): void {
    this.#pending = true;
  }

  /** Returns up to one step of free pages to the disk; how many pages are still free after it. */
  async step(): Promise<number> {
    if (!this.#pending) return 0;
    const left = await this.#reclaim(this.#pages);
    this.#pending = left === undefined || left > 0;
    return left ?? 0;
  }
}

/**
 * Up to `maxPages` of the file's free pages returned to the disk; the pages still free, or undefined inside an open
 * transaction (left for the next step). `exec`, not a prepared statement: the pragma frees one page per step of its
 * statement, and only exec steps it to the end. Self-contained: the query thread runs it from its source too
 * (query-thread.ts).
 */
export function returnFreePages(sqlite: BetterSqliteDatabase, maxPages: number): number | undefined {
  if (sqlite.inTransaction) return undefined;
  const free = Number(sqlite.pragma('freelist_count', { simple: true }));
  if (free === 0) return 0;
  sqlite.exec(`PRAGMA incremental_vacuum(${Math.min(free, Math.max(1, Math.floor(maxPages)))})`);
  return Number(sqlite.pragma('freelist_count', { simple: true }));
}
