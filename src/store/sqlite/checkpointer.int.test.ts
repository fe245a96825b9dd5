/**
 * SQLite's checkpoints off the serving connection: its commits leave the WAL alone however large it grows, and the
 * checkpointer's thread copies it into the database file within an interval; closing stops the thread.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DatabaseConnection } from '../connection.js';
import { connectSqlite } from './connect.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** 8 MB in one transaction: twice what makes SQLite checkpoint inside the commit by default. */
async function fill(connection: DatabaseConnection): Promise<void> {
  await sql`create table t (id integer primary key, body text)`.execute(connection.db);
  await connection.db.transaction().execute(async (trx) => {
    for (let i = 0; i < 1000; i++) await sql`insert into t (body) values (${'x'.repeat(8000)})`.execute(trx);
  });
}

function fileOf(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'corral-checkpoint-'));
  dirs.push(dir);
  return join(dir, name);
}

describe('SQLite checkpoints on a thread of their own', () => {
  it("leaves the WAL to the thread: a commit past SQLite's threshold does not checkpoint", async () => {
    const path = fileOf('a.db');
    const connection = connectSqlite(path, { backgroundCheckpoints: { intervalMs: 60_000 } });
    try {
      await fill(connection);
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(8_000_000);
      expect(statSync(path).size).toBeLessThan(1_000_000);
    } finally {
      await connection.close();
    }
  });

  it('copies the WAL into the database file within its interval', async () => {
    const path = fileOf('b.db');
    const errors: string[] = [];
    const connection = connectSqlite(path, {
      backgroundCheckpoints: { intervalMs: 200, onError: (e) => errors.push(e) },
    });
    try {
      await fill(connection);
      await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(8_000_000), {
        timeout: 5_000,
        interval: 50,
      });
      expect(errors).toEqual([]);
    } finally {
      await connection.close();
    }
  });

  it('without it, the commit checkpoints, as SQLite does by default', async () => {
    const path = fileOf('d.db');
    const connection = connectSqlite(path);
    try {
      await fill(connection);
      expect(statSync(path).size).toBeGreaterThan(8_000_000);
    } finally {
      await connection.close();
    }
  });
});
