import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DatabaseUnreachableError, openStore } from '../store/open.js';
import { ConfigError } from './settings.js';
import { databaseError, listenError } from './startup.js';

const errno = (code: string) => Object.assign(new Error(`listen ${code}: 127.0.0.1:8080`), { code });

describe('start-up errors name the setting', () => {
  it.each([
    ['EADDRINUSE', 'already in use'],
    ['EACCES', 'permission denied'],
    ['EADDRNOTAVAIL', 'no network interface'],
  ])('%s on listen is a ConfigError naming the address setting and its value', (code, problem) => {
    const api = listenError('apiAddr', { host: '127.0.0.1', port: 8080 }, errno(code));
    expect(api).toBeInstanceOf(ConfigError);
    expect((api as Error).message).toBe(
      `cannot listen on --api-addr (CORRAL_API_ADDR) 127.0.0.1:8080: ${(api as Error).message.split(': ')[1]}`,
    );
    expect((api as Error).message).toContain(problem);
    const gateway = listenError('gatewayAddr', { host: '::1', port: 8000 }, errno(code));
    expect((gateway as Error).message).toMatch(
      /^cannot listen on --gateway-addr \(CORRAL_GATEWAY_ADDR\) \[::1\]:8000: /,
    );
  });

  it('leaves other listen failures as they are', () => {
    const other = errno('EMFILE');
    expect(listenError('apiAddr', { host: '127.0.0.1', port: 1 }, other)).toBe(other);
  });

  it('an unreachable PostgreSQL names --database-url without the password', async () => {
    const url = 'postgres://corral:s3cr%40t@127.0.0.1:1/x';
    const error = await openStore({ databaseUrl: url, dataDir: '/nonexistent' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseUnreachableError);
    const explained = databaseError(error);
    expect(explained).toBeInstanceOf(ConfigError);
    const message = (explained as Error).message;
    expect(message).toMatch(
      /^cannot open the database of --database-url \(CORRAL_DATABASE_URL\) postgres:\/\/corral:\*\*\*@127\.0\.0\.1:1\/x: .*ECONNREFUSED/,
    );
    expect(message).not.toContain('s3cr');
  });

  it('an SQLite file that cannot be opened names --database-url, or --data-dir for the default file', async () => {
    // A directory path under a regular file: it can never be created.
    const dir = mkdtempSync(join(tmpdir(), 'corral-startup-'));
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const fromUrl = await openStore({ databaseUrl: `sqlite:${file}/x.db`, dataDir: '/x' }).catch(
      (e: unknown) => databaseError(e),
    );
    expect(fromUrl).toBeInstanceOf(ConfigError);
    expect((fromUrl as Error).message).toBe(
      `cannot open the database of --database-url (CORRAL_DATABASE_URL) sqlite:${file}/x.db: EEXIST: file already exists, mkdir '${file}'`,
    );
    const fromDataDir = await openStore({ dataDir: file }).catch((e: unknown) => databaseError(e));
    expect((fromDataDir as Error).message).toMatch(
      new RegExp(`^cannot open the database of --data-dir \\(CORRAL_DATA_DIR\\) ${file}/corral\\.db: `),
    );
  });

  it('leaves other failures as they are', () => {
    const other = new Error('database migration failed: boom');
    expect(databaseError(other)).toBe(other);
  });
});
