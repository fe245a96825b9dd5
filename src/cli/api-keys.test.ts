// `corral api-keys`: what each command sends, and what it prints (the key once, on stdout alone).
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { makeApiKeysCommand } from './api-keys.js';

const PREFIX = '/gpu-instance/openapi/v1/';
const KEY = 'sk_q0w4vd1x9k2m_Yb1uGm0Qw8ZpTf3LkR7sNc2VdXe9Ja4H';
const info = {
  id: 'q0w4vd1x9k2m',
  name: 'ci',
  ownerId: 'team-a',
  admin: false,
  createdAt: '2026-11-26T05:10:00.000Z',
  lastUsedAt: null,
  revokedAt: null,
};

afterEach(() => {
  process.exitCode = undefined;
});

describe('corral api-keys', () => {
  it('create sends the name, owner and admin flag, and prints only the key on stdout', async () => {
    const h = makeHarness({
      routes: { 'POST apikey/create': { body: { ...info, key: KEY } } },
      env: { CORRAL_API_KEY: 'sk_admin' },
    });
    await runCommand(makeApiKeysCommand(h.deps), ['create', '--name', 'ci', '--owner', 'team-a']);
    expect(h.out()).toBe(`${KEY}\n`);
    expect(h.err()).toBe('API key q0w4vd1x9k2m for owner "team-a"; shown only this once\n');
    expect(h.requests[0]).toMatchObject({
      method: 'POST',
      path: `${PREFIX}apikey/create`,
      body: { name: 'ci', ownerId: 'team-a', admin: false },
    });
    await runCommand(makeApiKeysCommand(h.deps), ['create', '--admin']);
    expect(h.requests[1]?.body).toEqual({ name: '', admin: true });
  });

  it('list prints a table without keys; revoke sends the id', async () => {
    const h = makeHarness({
      routes: {
        'GET apikeys': {
          body: { keys: [info, { ...info, id: 'old', admin: true, revokedAt: info.createdAt }] },
        },
        'POST apikey/delete': { body: {} },
      },
      env: { CORRAL_API_KEY: 'sk_admin' },
    });
    await runCommand(makeApiKeysCommand(h.deps), ['list']);
    expect(h.out()).toMatch(/^ID +OWNER +NAME +ADMIN +CREATED +LAST USED +REVOKED\n/);
    expect(h.out()).toMatch(/q0w4vd1x9k2m +team-a +ci +no +2026-11-26T05:10:00.000Z\n/);
    expect(h.out()).toMatch(/old +team-a +ci +yes +2026-11-26T05:10:00.000Z +2026-11-26T05:10:00.000Z/);
    await runCommand(makeApiKeysCommand(h.deps), ['revoke', 'q0w4vd1x9k2m']);
    expect(h.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: `${PREFIX}apikey/delete`,
      body: { id: 'q0w4vd1x9k2m' },
    });
    expect(h.out()).toContain('revoked API key q0w4vd1x9k2m\n');
  });

  it('says what a key that is no admin key is told, and exits 1', async () => {
    const h = makeHarness({
      routes: {
        'GET apikeys': {
          status: 403,
          body: {
            code: 403,
            reason: 'ADMIN_REQUIRED',
            message: 'GET apikeys needs an admin API key; this key is not one',
            metadata: {},
          },
        },
      },
      env: { CORRAL_API_KEY: 'sk_user' },
    });
    await runCommand(makeApiKeysCommand(h.deps), ['list']);
    expect(h.err()).toBe('error: ADMIN_REQUIRED: GET apikeys needs an admin API key; this key is not one\n');
    expect(process.exitCode).toBe(1);
  });
});
