/**
 * Which store errors are the database being unavailable (answered 503, "retry") and which are a statement refused
 * (a fault: 500): real SQLite errors from better-sqlite3 on a file locked by another connection and on a broken
 * statement, and the shapes node-postgres gives.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './unavailable.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The error a statement throws, or undefined. */
function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('isDatabaseUnavailable on SQLite', () => {
  it('is true for a write while another connection holds the lock past the busy timeout (SQLITE_BUSY)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-unavailable-'));
    dirs.push(dir);
    const file = join(dir, 'db.sqlite');
    const holder = new Database(file);
    const other = new Database(file, { timeout: 10 });
    try {
      holder.exec('CREATE TABLE t (x INTEGER)');
      holder.exec('BEGIN IMMEDIATE');
      const error = thrown(() => other.prepare('INSERT INTO t VALUES (1)').run());
      expect((error as { code?: string }).code).toMatch(/^SQLITE_BUSY/);
      expect(isDatabaseUnavailable(error)).toBe(true);
      // Wrapped as a cause, as the stores' errors may be.
      expect(isDatabaseUnavailable(new Error('take failed', { cause: error }))).toBe(true);
    } finally {
      holder.exec('ROLLBACK');
      other.close();
      holder.close();
    }
  });

  it('is false for a statement SQLite refuses (a constraint, a syntax error)', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY)');
      db.exec('INSERT INTO t VALUES (1)');
      const duplicate = thrown(() => db.exec('INSERT INTO t VALUES (1)'));
      expect((duplicate as { code?: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
      expect(isDatabaseUnavailable(duplicate)).toBe(false);
      expect(isDatabaseUnavailable(thrown(() => db.exec('SELEC 1')))).toBe(false);
    } finally {
      db.close();
    }
  });
});

describe('isDatabaseUnavailable on PostgreSQL shapes', () => {
  it('is true for a refused connection and a server shutting down, false for a refused statement', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('shutdown'), { code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
  });
});
