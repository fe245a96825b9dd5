import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { makeSecretsCommand } from './secrets.js';

const PREFIX = '/gpu-instance/openapi/v1/';
const routes = {
  'POST secret/save': { body: { name: 'hf', replaced: false } },
  'GET secrets': {
    body: {
      secrets: [{ name: 'hf', createdAt: '2026-11-24T05:00:00.000Z', updatedAt: '2026-11-24T05:01:00.000Z' }],
    },
  },
  'POST secret/delete': { body: {} },
};

afterEach(() => {
  process.exitCode = undefined;
});

describe('corral secrets', () => {
  it('set reads the value from stdin, drops the trailing newline, and never prints it', async () => {
    const h = makeHarness({ routes, stdin: 'hf_abc 123\n', env: { CORRAL_API_KEY: 'sk_k' } });
    await runCommand(makeSecretsCommand(h.deps), ['set', 'hf']);
    expect(h.err()).toBe('');
    expect(h.out()).toBe('saved secret hf (reference it in env values as {{ CORRAL_SECRET_hf }})\n');
    expect(h.requests[0]).toMatchObject({
      method: 'POST',
      path: `${PREFIX}secret/save`,
      body: { name: 'hf', value: 'hf_abc 123' },
    });
    expect(h.out()).not.toContain('hf_abc');
  });

  it('set takes --value, and fails with nothing to send', async () => {
    const h = makeHarness({ routes, env: { CORRAL_API_KEY: 'sk_k' } });
    await runCommand(makeSecretsCommand(h.deps), ['set', 'hf', '--value', 'v1', '--json']);
    expect(JSON.parse(h.out())).toEqual({ name: 'hf', replaced: false });
    expect(h.requests[0]?.body).toEqual({ name: 'hf', value: 'v1' });

    const empty = makeHarness({ routes, env: { CORRAL_API_KEY: 'sk_k' } });
    await runCommand(makeSecretsCommand(empty.deps), ['set', 'hf']);
    expect(empty.err()).toBe('error: no value: pipe it on stdin or pass --value\n');
    expect(process.exitCode).toBe(1);
    expect(empty.requests).toEqual([]);
  });

  it('list prints names and times; delete names the secret', async () => {
    const h = makeHarness({ routes, env: { CORRAL_API_KEY: 'sk_k' } });
    await runCommand(makeSecretsCommand(h.deps), ['list']);
    expect(h.out()).toMatch(
      /^NAME +CREATED +UPDATED\nhf +2026-11-24T05:00:00.000Z +2026-11-24T05:01:00.000Z\n$/,
    );
    const d = makeHarness({ routes, env: { CORRAL_API_KEY: 'sk_k' } });
    await runCommand(makeSecretsCommand(d.deps), ['delete', 'hf']);
    expect(d.out()).toBe('deleted secret hf\n');
    expect(d.requests[0]?.body).toEqual({ name: 'hf' });
  });
});
