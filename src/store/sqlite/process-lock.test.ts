/** The SQLite process lock: a second open is refused at once, in this process and in another; a dead holder frees it. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseInUseError, lockSqliteDatabase } from './process-lock.js';

const LOCK_MODULE = fileURLToPath(new URL('./process-lock.ts', import.meta.url));

/** A child process that takes the lock with the real module and says so on stdout, then holds it until killed. */
function holderProcess(databaseFile: string) {
  const script = `
    const { lockSqliteDatabase } = await import(${JSON.stringify(LOCK_MODULE)});
    lockSqliteDatabase(${JSON.stringify(databaseFile)});
    process.stdout.write('locked\\n');
    // Kept alive until killed (the child's own timer: tiers.test.ts checks this process's waits, not the child's).
    globalThis.setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const locked = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('locked') && resolve());
    child.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, locked, exited };
}

describe('lockSqliteDatabase', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'corral-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a second open of the same database in this process, and allows it once released', () => {
    const file = join(dir, 'corral.db');
    const first = lockSqliteDatabase(file);
    expect(() => lockSqliteDatabase(file)).toThrow(DatabaseInUseError);
    expect(() => lockSqliteDatabase(file)).toThrow(/in use by another corral serve/);
    // Another database beside it is not held.
    lockSqliteDatabase(join(dir, 'other.db')).release();
    first.release();
    first.release();
    lockSqliteDatabase(file).release();
  });

  it('refuses while another process holds it, and takes it once that process is killed with SIGKILL', async () => {
    const file = join(dir, 'corral.db');
    const holder = holderProcess(file);
    try {
      await holder.locked;
      const started = Date.now();
      expect(() => lockSqliteDatabase(file)).toThrow(DatabaseInUseError);
      // Refused at once, not after a busy timeout.
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      holder.child.kill('SIGKILL');
      await holder.exited;
    }
    lockSqliteDatabase(file).release();
  }, 20_000);
});
