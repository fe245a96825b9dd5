import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { makeCredentialsCommand } from './credentials.js';

const PREFIX = '/gpu-instance/openapi/v1/';
const saved = { 'POST repository/auth/save': { body: { id: 'cred-1' } } };

afterEach(() => {
  process.exitCode = undefined;
});

describe('corral credentials save', () => {
  it('reads the password from stdin, dropping the trailing newline', async () => {
    const h = makeHarness({ routes: saved, stdin: 'pa ss\n', env: { CORRAL_API_KEY: 'sk_k' } });
    await runCommand(makeCredentialsCommand(h.deps), [
      'save',
      '--name',
      'ghcr',
      '--username',
      'bob',
      '--password-stdin',
    ]);
    expect(h.err()).toBe('');
    expect(h.out()).toBe('saved credentials cred-1 (use it as image.authId)\n');
    expect(h.requests[0]).toMatchObject({
      method: 'POST',
      path: `${PREFIX}repository/auth/save`,
      body: { name: 'ghcr', username: 'bob', password: 'pa ss' },
    });
  });

  it('falls back to CORRAL_REGISTRY_PASSWORD and never prints the password', async () => {
    const h = makeHarness({
      routes: saved,
      env: { CORRAL_API_KEY: 'sk_k', CORRAL_REGISTRY_PASSWORD: 'hunter2' },
    });
    await runCommand(makeCredentialsCommand(h.deps), [
      'save',
      '--name',
      'hub',
      '--username',
      'bob',
      '--json',
    ]);
    expect(JSON.parse(h.out())).toEqual({ id: 'cred-1' });
    expect(h.requests[0]?.body).toEqual({ name: 'hub', username: 'bob', password: 'hunter2' });
    expect(h.out() + h.err()).not.toContain('hunter2');
  });

  it('fails without a password and sends nothing', async () => {
    const h = makeHarness({ routes: saved, env: { CORRAL_API_KEY: 'sk_k' } });
    await runCommand(makeCredentialsCommand(h.deps), ['save', '--name', 'hub', '--username', 'bob']);
    expect(h.err()).toBe('error: no password: pass --password-stdin or set CORRAL_REGISTRY_PASSWORD\n');
    expect(process.exitCode).toBe(1);
    expect(h.requests).toEqual([]);
  });

  it('has no --password flag', async () => {
    const h = makeHarness({ routes: saved });
    await expect(
      runCommand(makeCredentialsCommand(h.deps), [
        'save',
        '--name',
        'a',
        '--username',
        'b',
        '--password',
        'x',
      ]),
    ).rejects.toThrow(/unknown option/);
    expect(h.requests).toEqual([]);
  });
});

describe('corral credentials list|delete', () => {
  const auths = [
    { id: 'cred-1', name: 'ghcr', username: 'bob', createdAt: '2025-01-01T00:00:00.000Z' },
    { id: 'cred-22', name: 'dockerhub', username: 'alice', createdAt: '2025-02-01T00:00:00.000Z' },
  ];

  it('lists as a table and as JSON', async () => {
    const h = makeHarness({ routes: { 'GET repository/auths': { body: { auths } } } });
    await runCommand(makeCredentialsCommand(h.deps), ['list']);
    expect(h.out()).toBe(
      [
        'ID       NAME       USERNAME  CREATED',
        'cred-1   ghcr       bob       2025-01-01T00:00:00.000Z',
        'cred-22  dockerhub  alice     2025-02-01T00:00:00.000Z',
        '',
      ].join('\n'),
    );
    const json = makeHarness({ routes: { 'GET repository/auths': { body: { auths } } } });
    await runCommand(makeCredentialsCommand(json.deps), ['list', '--json']);
    expect(JSON.parse(json.out())).toEqual({ auths });
  });

  it('deletes by id', async () => {
    const h = makeHarness({ routes: { 'POST repository/auth/delete': { body: {} } } });
    await runCommand(makeCredentialsCommand(h.deps), ['delete', 'cred-1']);
    expect(h.out()).toBe('deleted credentials cred-1\n');
    expect(h.requests[0]?.body).toEqual({ id: 'cred-1' });
  });
});
