/**
 * What SQLite's query thread (src/store/sqlite/query-thread.ts) costs and buys, `npm run bench -- sqlite-thread`:
 * the same statements on a file opened in-process (the baseline, as `corral serve` opened it before) and on the
 * thread (as it opens it now), in the same run. Costs: a small read and a small insert, awaited one at a time
 * (µs each, the thread's round trip included). Buys: the event loop's longest stall while one 9.5 MiB row is written
 * (a timer chain that notes its largest gap). CORRAL_BENCH_SQLITE_THREAD_QUERIES (2000) queries of each kind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import { connectSqlite } from '../src/store/sqlite/connect.js';
import { formatRatio, loadAverage, table } from './support.js';

const QUERIES = Number(process.env.CORRAL_BENCH_SQLITE_THREAD_QUERIES ?? 2000);
const LARGE_BYTES = Math.round(9.5 * 1024 * 1024);
const LARGE_ROWS = 3;

interface Figures {
  readUs: number;
  insertUs: number;
  /** The event loop's longest gap while each large row was written, ms. */
  largeStallsMs: number[];
  /** How long each large write took, ms. */
  largeWriteMs: number[];
}

type Scratch = Kysely<any>;

async function measure(queryThread: boolean): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-thread-'));
  const connection = connectSqlite(join(dir, 'corral.db'), { queryThread });
  const db = connection.db as unknown as Scratch;
  try {
    await sql`create table t (id integer primary key, name text, body text)`.execute(db);
    for (let i = 0; i < 100; i++)
      await db
        .insertInto('t')
        .values({ name: `n${i}`, body: 'x' })
        .execute();
    let started = performance.now();
    for (let i = 0; i < QUERIES; i++)
      await db
        .selectFrom('t')
        .selectAll()
        .where('id', '=', (i % 100) + 1)
        .executeTakeFirst();
    const readUs = ((performance.now() - started) * 1000) / QUERIES;
    started = performance.now();
    for (let i = 0; i < QUERIES; i++)
      await db
        .insertInto('t')
        .values({ name: `m${i}`, body: 'y' })
        .execute();
    const insertUs = ((performance.now() - started) * 1000) / QUERIES;
    const largeStallsMs: number[] = [];
    const largeWriteMs: number[] = [];
    for (let i = 0; i < LARGE_ROWS; i++) {
      const body = `{"image":"${String.fromCharCode(97 + i).repeat(LARGE_BYTES)}"}`;
      const watch = stallWatch();
      const writeStart = performance.now();
      await db
        .insertInto('t')
        .values({ name: `large${i}`, body })
        .execute();
      largeWriteMs.push(performance.now() - writeStart);
      largeStallsMs.push(await watch.stop());
    }
    return { readUs, insertUs, largeStallsMs, largeWriteMs };
  } finally {
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A chain of immediate timers; `stop` answers the longest gap between two of them (the event loop's longest stall). */
function stallWatch(): { stop(): Promise<number> } {
  let last = performance.now();
  let longest = 0;
  let running = true;
  let ended!: () => void;
  const done = new Promise<void>((resolve) => {
    ended = resolve;
  });
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(tick);
    else ended();
  };
  setImmediate(tick);
  return {
    async stop() {
      running = false;
      await done;
      return longest;
    },
  };
}

const ms = (values: number[]) => values.map((v) => v.toFixed(1)).join(' ');

export async function runSqliteThreadBench(): Promise<void> {
  console.log(`\n## sqlite-thread: ${QUERIES} small reads and inserts, ${LARGE_ROWS} rows of 9.5 MiB`);
  console.log('command: npm run bench -- sqlite-thread');
  console.log(`load average before: ${loadAverage()}`);
  const inProcess = await measure(false);
  const thread = await measure(true);
  console.log(`load average after: ${loadAverage()}`);
  console.log(
    table(
      ['connection', 'read µs', 'insert µs', '9.5 MiB write ms', 'event loop longest stall ms'],
      [
        [
          'in-process (baseline)',
          inProcess.readUs.toFixed(0),
          inProcess.insertUs.toFixed(0),
          ms(inProcess.largeWriteMs),
          ms(inProcess.largeStallsMs),
        ],
        [
          'query thread',
          thread.readUs.toFixed(0),
          thread.insertUs.toFixed(0),
          ms(thread.largeWriteMs),
          ms(thread.largeStallsMs),
        ],
      ],
    ),
  );
  const worst = (values: number[]) => Math.max(...values);
  console.log(
    `thread / in-process: read ${formatRatio(thread.readUs / inProcess.readUs)}, insert ${formatRatio(thread.insertUs / inProcess.insertUs)}, longest stall ${formatRatio(worst(thread.largeStallsMs) / worst(inProcess.largeStallsMs))}`,
  );
}
