/**
 * The data directory as Kubernetes gives it to a non-root Corral: an emptyDir is root's and 0777 (2777 and the
 * pod's group with an fsGroup), and uid 1000 may not chmod it. Real directories, the check run as uid 1000 in a
 * child process; needs root to make them (skipped otherwise, with that reason).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const UID = 1000;
const isRoot = process.getuid?.() === 0;
const module = fileURLToPath(new URL('./data-dir.ts', import.meta.url));

/** secureDataDir as uid 1000: its answer, or its error's message. */
function secureAsUid(files: Record<string, unknown>): { ok: unknown } | { error: string } {
  const script = `
    const { secureDataDir } = await import(${JSON.stringify(module)});
    try { console.log(JSON.stringify({ ok: secureDataDir(${JSON.stringify(files)}) })); }
    catch (error) { console.log(JSON.stringify({ error: error.message })); }`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    uid: UID,
    gid: UID,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: '/tmp' },
  });
  if (child.status !== 0) throw new Error(`the child failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '') as { ok: unknown } | { error: string };
}

describe.skipIf(!isRoot)('the data directory of a non-root Corral on a volume it does not own', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'corral-volume-'));
    chmodSync(root, 0o755);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** A directory as the kubelet makes an emptyDir: root's, 0777; with an fsGroup, the group's and setgid. */
  const emptyDir = (name: string, fsGroup?: number) => {
    const dir = join(root, name);
    mkdirSync(dir);
    if (fsGroup !== undefined) chownSync(dir, 0, fsGroup);
    chmodSync(dir, fsGroup === undefined ? 0o777 : 0o2777);
    return dir;
  };

  it('uses a root-owned emptyDir as it is when it holds no secret (PostgreSQL, CORRAL_SECRET_KEY)', () => {
    const dataDir = emptyDir('plain');
    expect(secureAsUid({ dataDir, keyElsewhere: true })).toEqual({
      ok: { tightened: [], leftOpen: { path: dataDir, mode: '777', ownerUid: 0 } },
    });
    expect(statSync(dataDir).mode & 0o7777).toBe(0o777);
  });

  it('and one with an fsGroup', () => {
    const dataDir = emptyDir('fs-group', UID);
    expect(secureAsUid({ dataDir, keyElsewhere: true })).toEqual({
      ok: { tightened: [], leftOpen: { path: dataDir, mode: '2777', ownerUid: 0 } },
    });
  });

  it('refuses it, saying whose it is and the ways out, where it would hold the SQLite database or the key', () => {
    const dataDir = emptyDir('sqlite');
    const sqlite = secureAsUid({ dataDir, databaseFile: join(dataDir, 'corral.db'), keyElsewhere: true });
    expect(sqlite).toEqual({ error: expect.stringContaining('owned by uid 0 with mode 777') });
    expect(sqlite).toEqual({ error: expect.stringContaining('would hold the SQLite database:') });
    expect(secureAsUid({ dataDir })).toEqual({
      error: expect.stringContaining('would hold the secret key (secret.key):'),
    });
  });

  it('makes a directory below it 0700, its own', () => {
    const dataDir = join(emptyDir('below'), 'data');
    expect(secureAsUid({ dataDir, databaseFile: join(dataDir, 'corral.db') })).toEqual({
      ok: { tightened: [] },
    });
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(dataDir).uid).toBe(UID);
  });
});
