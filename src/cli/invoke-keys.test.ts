// `corral invoke-keys`: what each command sends, and what it prints (the key once, on stdout alone).
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { makeInvokeKeysCommand } from './invoke-keys.js';

const PREFIX = '/gpu-instance/openapi/v1/';
const KEY = 'ik_q0w4vd1x9k2m_Yb1uGm0Qw8ZpTf3LkR7sNc2VdXe9Ja4H';
const info = {
  id: 'q0w4vd1x9k2m',
  endpointId: 'ep-1',
  name: 'frontend',
  createdAt: '2026-11-24T05:10:00.000Z',
  revokedAt: null,
};

afterEach(() => {
  process.exitCode = undefined;
});

describe('corral invoke-keys', () => {
  it('create sends the endpoint and name, and prints only the key on stdout', async () => {
    const h = makeHarness({
      routes: { 'POST endpoint/invoke-key/create': { body: { ...info, key: KEY } } },
      env: { CORRAL_API_KEY: 'sk_k' },
    });
    await runCommand(makeInvokeKeysCommand(h.deps), ['create', 'ep-1', '--name', 'frontend']);
    expect(h.out()).toBe(`${KEY}\n`);
    expect(h.err()).toBe('invoke key q0w4vd1x9k2m for endpoint ep-1; shown only this once\n');
    expect(h.requests[0]).toMatchObject({
      method: 'POST',
      path: `${PREFIX}endpoint/invoke-key/create`,
      body: { id: 'ep-1', name: 'frontend' },
    });
  });

  it('list prints a table without keys; revoke sends both ids', async () => {
    const h = makeHarness({
      routes: {
        'GET endpoint/invoke-keys': {
          body: { keys: [info, { ...info, id: 'old', revokedAt: info.createdAt }] },
        },
        'POST endpoint/invoke-key/delete': { body: {} },
      },
      env: { CORRAL_API_KEY: 'sk_k' },
    });
    await runCommand(makeInvokeKeysCommand(h.deps), ['list', 'ep-1']);
    expect(h.out()).toMatch(/^ID +NAME +CREATED +REVOKED\n/);
    expect(h.out()).toContain('q0w4vd1x9k2m');
    expect(h.out()).toMatch(/old +frontend +2026-11-24T05:10:00.000Z +2026-11-24T05:10:00.000Z/);
    await runCommand(makeInvokeKeysCommand(h.deps), ['revoke', 'ep-1', 'q0w4vd1x9k2m']);
    expect(h.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: `${PREFIX}endpoint/invoke-key/delete`,
      body: { id: 'ep-1', keyId: 'q0w4vd1x9k2m' },
    });
    expect(h.out()).toContain('revoked invoke key q0w4vd1x9k2m\n');
  });
});
