/**
 * The usage ledger's month query (issue 32; `npm run bench -- usage-ledger`). For SQLite (a temp file, as `corral
 * serve` opens it) and PostgreSQL (when CORRAL_TEST_DATABASE_URL is set; a fresh schema, dropped after), it seeds
 * 1,000,000 segments (CORRAL_BENCH_LEDGER_SEGMENTS) through `UsageSegmentRepository.apply`, in batches of whole
 * worker lives: 50 owners, 500 endpoints, four GPU products, worker lives in the recorder's states split at each UTC
 * hour as the recorder splits them, over 45 days up to the clock, the workers alive then left open. It then measures,
 * in interleaved rounds, `LedgerReader.query` of one calendar month by endpoint (bucket day, bucket month, and one
 * owner's month by day, what an owner's `corral usage` asks) against a plain count of the segments that overlap the
 * month (the least any month query reads), measured beside them. Target: under 200 ms.
 */
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { DEFAULT_STATE_FACTORS, type UsageQuery, type UsageRow } from '../src/ports/usage.js';
import type { SegmentChange, SegmentHolding } from '../src/store/usage/usage-segments.js';
import { LedgerReader } from '../src/usage/ledger-reader.js';
import {
  eachScratchStore,
  openPostgresScratch,
  openSqliteScratch,
  type ScratchStore,
} from './scratch-store.js';
import {
  type Bounds,
  Figure,
  formatMs,
  formatRatio,
  interleave,
  loadAverage,
  summarize,
  table,
} from './support.js';

const SEGMENTS = Number(process.env.CORRAL_BENCH_LEDGER_SEGMENTS ?? 1_000_000);
const OWNERS = 50;
const ENDPOINTS = 500;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The clock of the whole run: the seeded ledger ends here, with the workers alive then still open. */
const NOW = Date.UTC(2026, 9, 31, 18);
const SEED_DAYS = 45;
/** The month asked: October 2026, of which the ledger holds 30.75 days of its 45 (the rest is September). */
const MONTH_FROM = Date.UTC(2026, 9, 1);
const MONTH_TO = Date.UTC(2026, 10, 1);
/** Changes per `apply` (one transaction each): whole worker lives until at least this many. */
const APPLY_BATCH = 5_000;
const QUERIES: Bounds = { count: 50, maxMs: 30_000 };
const ROUNDS = 10;
const TARGET_MS = 200;

/** GPU products: id, GPUs per worker, host memory per worker; each endpoint takes one. */
const PRODUCTS: readonly [string, number, number][] = [
  ['h100-80g', 1, 128e9],
  ['h100-80g', 8, 1_000e9],
  ['a100-80g', 2, 256e9],
  ['l40s-48g', 1, 64e9],
  ['rtx4090-24g', 1, 32e9],
];

export async function runUsageLedgerBench(): Promise<void> {
  const postgresUrl = process.env.CORRAL_TEST_DATABASE_URL;
  console.log("\n== The usage ledger's month query (issue 32) ==");
  console.log(
    `command: ${postgresUrl ? 'CORRAL_TEST_DATABASE_URL=<url> ' : ''}npm run bench -- usage-ledger` +
      (postgresUrl ? '' : '   (PostgreSQL skipped: set CORRAL_TEST_DATABASE_URL to include it)'),
  );
  console.log(
    `each store: ${SEGMENTS.toLocaleString('en')} segments (CORRAL_BENCH_LEDGER_SEGMENTS), ${OWNERS} owners, ` +
      `${ENDPOINTS} endpoints, ${SEED_DAYS} days up to ${new Date(NOW).toISOString()}; ` +
      `each figure at most ${QUERIES.count} queries and ${QUERIES.maxMs / 1000} s, in ${ROUNDS} interleaved rounds`,
  );
  await eachScratchStore(postgresUrl, { sqlite: openSqliteScratch, postgres: openPostgresScratch }, benchOne);
}

async function benchOne(target: ScratchStore): Promise<void> {
  console.log(`\n${target.describe}; load average before: ${loadAverage()}`);
  const seedStart = performance.now();
  const seeded = await seed(target);
  const seedS = (performance.now() - seedStart) / 1000;
  console.log(
    `seeded ${seeded.segments.toLocaleString('en')} segments of ${seeded.workers.toLocaleString('en')} workers ` +
      `(${seeded.open} left open) through UsageSegmentRepository.apply, ${seeded.batches} batches, ` +
      `in ${seedS.toFixed(1)} s`,
  );
  if (target.name === 'postgres') {
    // Right after a bulk load PostgreSQL has neither statistics nor a visibility map; autovacuum soon gives both.
    await sql`vacuum analyze usage_segments`.execute(target.connection.db);
    console.log('then VACUUM ANALYZE usage_segments (what autovacuum does on its own after a bulk insert)');
  }

  const reader = new LedgerReader({
    segments: target.store.usageSegments,
    prices: {
      currency: 'USD',
      gpuPerHour: { 'h100-80g': 2.5, 'a100-80g': 1.6, 'l40s-48g': 0.9, 'rtx4090-24g': 0.4 },
      stateFactors: DEFAULT_STATE_FACTORS,
      suspendedMemoryGBHour: 0.005,
    },
    clock: () => NOW,
  });
  const month = { from: MONTH_FROM, to: MONTH_TO, grouping: 'endpoint' } as const;
  /** Per figure, what its last answer held: rows of the ledger's answer, or the baseline's count. */
  const answered = new Map<string, number>();
  const ledger = (label: string, query: UsageQuery) =>
    new Figure<UsageRow[]>(
      label,
      QUERIES,
      () => reader.query(query),
      (rows) => {
        answered.set(label, rows.length);
        return rows.length > 0 ? undefined : 'no rows';
      },
    );
  // The segments that overlap the month, counted: the rows any month query must read, and no more.
  const now = Math.min(NOW, MONTH_TO);
  const baselineLabel = "count(*) of the month's segments (baseline)";
  const baseline = new Figure<number>(
    baselineLabel,
    QUERIES,
    async () => {
      const result = await sql<{ n: number | string }>`
        select count(*) as n from usage_segments
        where started_at < ${MONTH_TO} and coalesce(ended_at, ${now}) > ${MONTH_FROM}`.execute(
        target.connection.db,
      );
      return Number(result.rows[0]?.n);
    },
    (n) => {
      answered.set(baselineLabel, n);
      return n > 0 ? undefined : 'no segments';
    },
  );
  const figures = [
    baseline,
    ledger('month by endpoint, bucket day (admin)', { ...month, bucket: 'day' }),
    ledger('month by endpoint, bucket month (admin)', { ...month, bucket: 'month' }),
    ledger("one owner's month by endpoint, bucket day", { ...month, bucket: 'day', ownerId: ownerOf(0) }),
  ];
  // Not measured: the first query of each warms the caches and the JIT.
  for (const figure of figures) await figure.send();
  await interleave(figures, ROUNDS);
  report(target, figures, answered);
}

/** One table: each figure beside the baseline, the rows (or segments) it answered, and the verdicts. */
function report(
  target: ScratchStore,
  figures: Pick<Figure<unknown>, 'label' | 'ms' | 'cut' | 'failures' | 'firstFailure'>[],
  answered: ReadonlyMap<string, number>,
): void {
  const base = figures[0] ? summarize(figures[0].ms) : undefined;
  const rows: string[][] = [];
  const verdicts: string[] = [];
  for (const figure of figures) {
    const s = summarize(figure.ms);
    const isBase = figure === figures[0];
    rows.push([
      figure.label + (figure.cut ? ' (time bound hit)' : ''),
      String(s.n),
      formatMs(s.p50),
      formatMs(s.p99),
      formatMs(s.max),
      base && !isBase ? formatRatio(s.p50 / base.p50) : '',
      base && !isBase ? formatRatio(s.p99 / base.p99) : '',
      String(answered.get(figure.label) ?? '-'),
      String(figure.failures),
    ]);
    if (!isBase) {
      const met = s.p99 < TARGET_MS && figure.failures === 0;
      verdicts.push(
        `target ${target.name}: ${figure.label}, p99 under ${TARGET_MS} ms: ${met ? 'PASS' : 'MISS'} ` +
          `(p99 ${formatMs(s.p99)} ms${figure.failures ? `, ${figure.failures} failed` : ''})`,
      );
    }
  }
  console.log(
    table(['figure', 'n', 'p50 ms', 'p99 ms', 'max ms', 'p50/base', 'p99/base', 'rows', 'failed'], rows),
  );
  for (const figure of figures)
    if (figure.firstFailure) console.log(`  ${figure.label}: first failure: ${figure.firstFailure}`);
  console.log(`load average after: ${loadAverage()}`);
  for (const verdict of verdicts) console.log(verdict);
}

function ownerOf(endpoint: number): string {
  return `owner-${String(endpoint % OWNERS).padStart(2, '0')}`;
}

function holdingOf(endpoint: number, worker: number): SegmentHolding {
  const [gpuProductId, gpuCount, hostMemoryBytes] = PRODUCTS[endpoint % PRODUCTS.length] as [
    string,
    number,
    number,
  ];
  return {
    workerId: `w-${worker}`,
    ownerId: ownerOf(endpoint),
    endpointId: `ep-${String(endpoint).padStart(3, '0')}`,
    gpuProductId,
    gpuCount,
    hostMemoryBytes,
  };
}

interface Seeded {
  segments: number;
  workers: number;
  open: number;
  batches: number;
}

/** Writes worker lives through the repository, a batch of whole lives per `apply` (one transaction each). */
async function seed(target: ScratchStore): Promise<Seeded> {
  const random = mulberry32(32);
  const seeded: Seeded = { segments: 0, workers: 0, open: 0, batches: 0 };
  let batch: SegmentChange[] = [];
  const flush = async () => {
    await target.store.usageSegments.apply(batch);
    seeded.batches += 1;
    batch = [];
  };
  while (seeded.segments < SEGMENTS) {
    // Some endpoints are far busier than others.
    const endpoint = Math.floor(random() ** 2 * ENDPOINTS);
    const start = NOW - SEED_DAYS * DAY + Math.floor(random() * SEED_DAYS * DAY);
    const life = workerLife(holdingOf(endpoint, seeded.workers), start, random, SEGMENTS - seeded.segments);
    seeded.workers += 1;
    seeded.segments += life.filter((c) => c.state !== null).length;
    if (life.length > 0 && life.at(-1)?.state !== null) seeded.open += 1;
    batch.push(...life);
    if (batch.length >= APPLY_BATCH) await flush();
  }
  if (batch.length > 0) await flush();
  return seeded;
}

/**
 * One worker's changes, as the recorder writes them: starting, then active and idle turns (now and then frozen,
 * and a frozen one now and then suspended, each thawed through starting), split at each UTC hour; it ends (state
 * null) after its life, or is left open at NOW; at most `maxSpans` spans.
 */
function workerLife(
  holding: SegmentHolding,
  start: number,
  random: () => number,
  maxSpans: number,
): SegmentChange[] {
  const between = (lowS: number, highS: number) => Math.floor((lowS + random() * (highS - lowS)) * 1000);
  const end = start + Math.floor(-Math.log(1 - random()) * 10 * HOUR);
  const changes: SegmentChange[] = [];
  let at = start;
  let state = 'starting';
  let spans = 0;
  while (at < end && at < NOW && spans < maxSpans) {
    const span =
      state === 'starting'
        ? between(5, 240)
        : state === 'active'
          ? between(1, 900)
          : state === 'idle'
            ? between(5, 1800)
            : state === 'frozen'
              ? between(300, 3 * 3600)
              : between(600, 6 * 3600);
    const next = Math.min(at + span, end);
    // The recorder closes every open span at each UTC hour and opens the next in the same state.
    for (let t = at; t < next && t < NOW && spans < maxSpans; t = t - (t % HOUR) + HOUR) {
      changes.push({ holding, at: t, state });
      spans += 1;
    }
    at = next;
    const roll = random();
    state =
      state === 'idle'
        ? roll < 0.06
          ? 'frozen'
          : 'active'
        : state === 'frozen'
          ? roll < 0.3
            ? 'suspended'
            : 'starting'
          : state === 'suspended'
            ? 'starting'
            : state === 'starting'
              ? 'idle'
              : 'idle';
  }
  // Ended before the clock: its last span closes; else the worker is alive and its last span open.
  const last = changes.at(-1);
  if (last && at < NOW) changes.push({ holding, at: Math.min(at, NOW), state: null });
  return changes;
}

/** A small seeded generator: the same ledger on every run and store. */
function mulberry32(seedValue: number): () => number {
  let a = seedValue;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
