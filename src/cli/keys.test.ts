import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCommand } from '../../test/support/cli-harness.js';
import { makeKeysCommand } from './keys.js';

let dir: string | undefined;
afterEach(async () => {
  process.exitCode = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

function io(env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  return {
    io: { stdout: (t: string) => (out += t), stderr: (t: string) => (err += t), env },
    out: () => out,
    err: () => err,
  };
}

describe('corral keys', () => {
  it('refuses to create a database that is not there, naming it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'corral-keys-'));
    const file = join(dir, 'corral.db');
    const t = io();
    await expect(runCommand(makeKeysCommand(t.io), ['list', '--data-dir', dir])).rejects.toThrow(
      `no database at ${file}: pass the --data-dir or --database-url that corral serve uses`,
    );
    expect(existsSync(file)).toBe(false);
  });

  it('creates it with --create-database, and names the database it opens each time', async () => {
    dir = await mkdtemp(join(tmpdir(), 'corral-keys-'));
    const file = join(dir, 'corral.db');
    const t = io();
    await runCommand(makeKeysCommand(t.io), [
      'create',
      '--data-dir',
      dir,
      '--owner',
      'bob',
      '--create-database',
    ]);
    expect(existsSync(file)).toBe(true);
    expect(t.out()).toMatch(/^sk_\S+\n$/);
    await runCommand(makeKeysCommand(t.io), ['list', '--data-dir', dir, '--json']);
    const lines = t.err().split('\n');
    expect(lines[0]).toBe(`database: ${file}`);
    expect(lines[1]).toMatch(/^created key \S+ for owner "bob"/);
    expect(lines[2]).toBe(`database: ${file}`);
  });

  it('ignores serve-only settings exported in the shell, and still reads where the store is from them', async () => {
    dir = await mkdtemp(join(tmpdir(), 'corral-keys-'));
    // CORRAL_WEBHOOK_ALLOW_PRIVATE alone stops `corral serve` (it wants the config file's key too); a bad
    // CORRAL_GPUS would stop it as well. Neither is a setting of `corral keys`.
    const t = io({
      CORRAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      CORRAL_GPUS: 'not-a-gpu-list',
      CORRAL_DATA_DIR: dir,
    });
    await runCommand(makeKeysCommand(t.io), ['create', '--owner', 'ops', '--create-database']);
    expect(t.out()).toMatch(/^sk_\S+\n$/);
    expect(t.err()).toContain(`database: ${join(dir, 'corral.db')}`);
  });
});
