/**
 * `corral limits` against the real API (in process, real HTTP on port 0): after the ranges, the caller's quotas
 * with their use and where each comes from, and which apply and why: the operator's (an admin key's owner) without
 * the default GPU quotas, another owner's the defaults.
 */
import { afterEach, expect, it } from 'vitest';
import { createTestApi } from '../../test/support/api.js';
import { makeHarness, runCommand } from '../../test/support/cli-harness.js';
import { storeTargets } from '../../test/support/stores.js';
import { CorralClient } from '../client/index.js';
import { ApiKeyService } from '../service/api-key-service.js';
import { makeLimitsCommand } from './limits.js';

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  process.exitCode = undefined;
  for (const dispose of disposers.splice(0).reverse()) await dispose();
});

it("prints the operator's quotas and another owner's, each saying where they come from", async () => {
  const [sqlite] = storeTargets();
  if (!sqlite) throw new Error('no store target');
  const { store, dispose } = await sqlite.open();
  disposers.push(dispose);
  const api = await createTestApi(store, { configText: 'quotas: {}\n', flags: { gpus: 'h100-80g:2' } });
  disposers.push(() => api.app.close());
  const base = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const first = await new ApiKeyService({ store, clock: Date.now }).create({
    ownerId: 'default',
    name: 'first key',
    admin: true,
  });

  const limits = async (key: string) => {
    const h = makeHarness({ env: { CORRAL_API_KEY: key, CORRAL_API_URL: base } });
    await runCommand(makeLimitsCommand({ ...h.deps, makeClient: (opts) => new CorralClient(opts) }), []);
    expect(h.err()).toBe('');
    return h.out();
  };
  const operator = await limits(first.key);
  expect(operator).toMatch(/^minGpus +0 +unlimited +operator$/m);
  expect(operator).toMatch(/^secrets +0 +100 +default$/m);
  // The job quotas apply to the operator too: a count, and bytes.
  expect(operator).toMatch(/^queuedJobs +0 +10000 +default$/m);
  expect(operator).toMatch(/^jobBytes +0 +1073741824 +default$/m);
  expect(operator).toContain(
    'Quotas: operator (this owner holds an admin key: the default GPU quotas do not apply to the operator)',
  );
  // The rates beside the quotas: the API's per key, the job submissions' per owner.
  expect(operator).toContain(
    'API requests: 1000000 a second per key, bursts of 1000000, one more per 16 KiB of body',
  ); // the test API's rate
  expect(operator).toContain(
    'job submissions (run, runsync, retry): 100 a second per owner, bursts of 1000, one more per 16 KiB of body',
  );
  const tenant = await limits(api.keyA);
  expect(tenant).toMatch(/^minGpus +0 +1 +default$/m);
  expect(tenant).toContain('Quotas: default (the defaults for a server with 2 GPU(s))');
});
