/**
 * `corral webhooks secret show|rotate` against the real API (in process, real HTTP on port 0): the endpoint named
 * by its name, the secret printed on its own line and only on stdout, a rotation's secret the one shown after.
 */
import { afterEach, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody } from '../../test/support/api.js';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { storeTargets } from '../../test/support/stores.js';
import { CorralClient } from '../client/index.js';
import { makeWebhooksCommand } from './webhooks.js';

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  process.exitCode = undefined;
  for (const dispose of disposers.splice(0).reverse()) await dispose();
});

it("shows and rotates an endpoint's webhook secret, named by its name", async () => {
  const [sqlite] = storeTargets();
  if (!sqlite) throw new Error('no store target');
  const { store, dispose } = await sqlite.open();
  disposers.push(dispose);
  const api = await createTestApi(store);
  disposers.push(() => api.app.close());
  const base = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const created = await api.call('POST', 'endpoint/create', originalClientCreateBody({ name: 'signer' }));
  const id = created.body.id as string;

  const corral = async (...args: string[]) => {
    const h = makeHarness({ env: { CORRAL_API_KEY: api.keyA, CORRAL_API_URL: base } });
    await runCommand(makeWebhooksCommand({ ...h.deps, makeClient: (opts) => new CorralClient(opts) }), args);
    expect(h.err()).toBe('');
    expect(process.exitCode).toBeUndefined();
    return h.out();
  };
  const secretOf = (out: string) => out.split('\n')[0] ?? '';

  const shown = await corral('secret', 'show', 'signer');
  expect(secretOf(shown)).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  expect(shown).toContain(`for endpoint ${id}`);
  expect(secretOf(shown)).toBe((await api.call('GET', `endpoint/webhook-secret?id=${id}`)).body.secret);
  expect(secretOf(await corral('secret', 'show', id))).toBe(secretOf(shown));

  const rotated = await corral('secret', 'rotate', 'signer');
  expect(secretOf(rotated)).toMatch(/^whsec_/);
  expect(secretOf(rotated)).not.toBe(secretOf(shown));
  expect(rotated).toMatch(/^rotated /m);
  expect(secretOf(await corral('secret', 'show', 'signer'))).toBe(secretOf(rotated));

  const json = JSON.parse(await corral('secret', 'show', 'signer', '--json'));
  expect(json).toEqual({ endpointId: id, secret: secretOf(rotated), createdAt: expect.any(String) });
});
