import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDatabaseFile, secureDataDir } from './data-dir.js';

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('secureDataDir', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'corral-data-dir-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('creates the directory 0700 and the database file 0600, whatever the umask', () => {
    const dataDir = join(root, 'new', 'corral');
    const previous = process.umask(0o000);
    try {
      expect(secureDataDir({ dataDir, databaseFile: join(dataDir, 'corral.db') })).toEqual({ tightened: [] });
      createDatabaseFile(join(dataDir, 'corral.db'));
    } finally {
      process.umask(previous);
    }
    expect(modeOf(dataDir)).toBe('700');
    expect(modeOf(join(dataDir, 'corral.db'))).toBe('600');
  });

  it('tightens what an older install left readable, and says what it changed', () => {
    const dataDir = join(root, 'old');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    for (const name of ['corral.db', 'corral.db-wal', 'corral.db-shm', 'secret.key']) {
      writeFileSync(join(dataDir, name), '');
      chmodSync(join(dataDir, name), 0o644);
    }
    const { tightened } = secureDataDir({ dataDir, databaseFile: join(dataDir, 'corral.db') });
    expect(tightened).toEqual([
      { path: dataDir, from: '755', to: '700' },
      { path: join(dataDir, 'secret.key'), from: '644', to: '600' },
      { path: join(dataDir, 'corral.db'), from: '644', to: '600' },
      { path: join(dataDir, 'corral.db-wal'), from: '644', to: '600' },
      { path: join(dataDir, 'corral.db-shm'), from: '644', to: '600' },
    ]);
    for (const name of ['corral.db', 'corral.db-wal', 'corral.db-shm', 'secret.key']) {
      expect(modeOf(join(dataDir, name))).toBe('600');
    }
    expect(secureDataDir({ dataDir, databaseFile: join(dataDir, 'corral.db') })).toEqual({ tightened: [] });
  });

  it('leaves stricter modes and a PostgreSQL install (no database file) alone', () => {
    const dataDir = join(root, 'strict');
    mkdirSync(dataDir, { mode: 0o700 });
    writeFileSync(join(dataDir, 'secret.key'), '', { mode: 0o400 });
    chmodSync(join(dataDir, 'secret.key'), 0o400);
    expect(secureDataDir({ dataDir })).toEqual({ tightened: [] });
    expect(modeOf(join(dataDir, 'secret.key'))).toBe('400');
  });
});
