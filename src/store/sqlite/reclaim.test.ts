/**
 * Bytes freed by purges and retention go back to the disk on SQLite (issue 29: "a purge frees rows, not SQLite's
 * disk"): a new database is made with incremental auto-vacuum, an existing one is converted once at open, and the
 * jobs' sweep returns free pages a bounded step at a time. Measured on a real file: filled, purged, reclaimed, and
 * refilled to the size it had, not double.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_JOB_POLICY } from '../../domain/job.js';
import { Store } from '../store.js';
import { connectSqlite } from './connect.js';
import { RECLAIM_PAGES_PER_STEP } from './reclaim.js';

const JOBS = 300;
const INPUT = JSON.stringify({ blob: 'x'.repeat(100_000) });

describe('SQLite returns the space of deleted jobs to the disk', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const scratch = () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-reclaim-'));
    dirs.push(dir);
    return join(dir, 'corral.db');
  };

  it('fills, purges and reclaims in bounded steps; refilled, the file grows back to its size, not past it', async () => {
    const path = scratch();
    const connection = connectSqlite(path);
    const store = new Store({ connection });
    await store.migrate();
    const pragma = async (name: string) =>
      Number(Object.values((await sql.raw(`pragma ${name}`).execute(connection.db)).rows[0] as object)[0]);
    expect(await pragma('auto_vacuum')).toBe(2);
    const fill = async (round: number) => {
      for (let i = 0; i < JOBS; i++)
        await store.jobs.enqueue(
          {
            id: `j-${round}-${i}`,
            endpointId: 'ep-1',
            ownerId: 'owner-1',
            input: INPUT,
            webhook: null,
            policy: DEFAULT_JOB_POLICY,
            sync: false,
            createdAt: i,
          },
          60_000,
        );
    };
    const fileBytes = async () => {
      await sql`pragma wal_checkpoint(TRUNCATE)`.execute(connection.db);
      return statSync(path).size;
    };
    await fill(1);
    const filled = await fileBytes();
    expect(await store.jobs.purgeQueue('ep-1')).toBe(JOBS);
    const freed = await pragma('freelist_count');
    // The purge freed pages inside the file; it is as large as before.
    expect(freed).toBeGreaterThan(2 * RECLAIM_PAGES_PER_STEP);
    expect(await fileBytes()).toBe(filled);
    const steps: number[] = [];
    for (let left = freed; left > 0; ) {
      const started = performance.now();
      left = await store.jobs.reclaimSpace();
      steps.push(performance.now() - started);
    }
    // Bounded steps: each returns at most RECLAIM_PAGES_PER_STEP pages.
    expect(steps.length).toBe(Math.ceil(freed / RECLAIM_PAGES_PER_STEP));
    const reclaimed = await fileBytes();
    expect(reclaimed).toBeLessThan(filled / 5);
    // Nothing free: a sweep's step costs nothing more.
    expect(await store.jobs.reclaimSpace()).toBe(0);
    await fill(2);
    const refilled = await fileBytes();
    expect(refilled).toBeLessThanOrEqual(filled * 1.05);
    process.stdout.write(
      `reclaim: ${JOBS} jobs of ${INPUT.length} bytes: file ${filled} bytes filled, ${freed} pages free after the purge, ${reclaimed} bytes after ${steps.length} steps (slowest ${Math.max(...steps).toFixed(1)} ms), ${refilled} bytes refilled\n`,
    );
    await store.close();
  });

  it('converts an existing database to incremental auto-vacuum once, at open, and says so', async () => {
    const path = scratch();
    const old = new SqliteDatabase(path);
    old.pragma('journal_mode = WAL');
    old.exec("create table t (x text); insert into t values ('before')");
    expect(old.pragma('auto_vacuum', { simple: true })).toBe(0);
    old.close();
    const told: object[] = [];
    const connection = connectSqlite(path, { onVacuumConversion: (done) => told.push(done) });
    const { rows } = await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(connection.db);
    expect(rows[0]?.auto_vacuum).toBe(2);
    expect(told).toEqual([
      { ms: expect.any(Number), bytesBefore: expect.any(Number), bytesAfter: expect.any(Number) },
    ]);
    const kept = await sql<{ x: string }>`select x from t`.execute(connection.db);
    expect(kept.rows).toEqual([{ x: 'before' }]);
    await connection.close();
    // Opened again: nothing to convert.
    const again = connectSqlite(path, { onVacuumConversion: (done) => told.push(done) });
    await again.close();
    expect(told).toHaveLength(1);
  });
});
