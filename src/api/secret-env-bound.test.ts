/**
 * The bound on a worker's resolved env at create and update (issue 20, item 4): references resolve against the
 * owner's secrets at that time; past 512 KiB or 1,000 references the answer is a 400 naming the limit, and
 * nothing is stored or changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';

const refs = (count: number, secret: string) =>
  Array.from({ length: count }, (_, i) => ({ key: `CERT_${i}`, value: `{{ CORRAL_SECRET_${secret} }}` }));

describe.each(storeTargets())('the resolved env bound through the API on $name', (target) => {
  let api: TestApi;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store);
    expect((await api.call('POST', 'secret/save', { name: 'cert', value: 'c'.repeat(30_000) })).status).toBe(
      200,
    );
    expect(
      (await api.call('POST', 'secret/save', { name: 'big', value: 'b'.repeat(32 * 1024) })).status,
    ).toBe(200);
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
  });

  const total = async () => (await api.call('GET', 'endpoints')).body.total as number;

  it('accepts 12 envs referencing one 30 KB secret (360 KB resolved)', async () => {
    const created = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ envs: refs(12, 'cert') }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
  });

  it('refuses an env past 512 KiB once resolved, naming the limit; nothing stored', async () => {
    const before = await total();
    const created = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ envs: refs(17, 'big') }),
    );
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({
      reason: 'INVALID_FIELD',
      message: expect.stringContaining('at most 524288 (512 KiB, the resolvedEnvBytes limit) are allowed'),
      metadata: { field: 'envs', limit: 'resolvedEnvBytes', max: 524_288, value: 557_199 },
    });
    expect(await total()).toBe(before);
  });

  it('refuses 2,142 references to one 32 KiB secret by their count, at once', async () => {
    const value = '{{CORRAL_SECRET_big}}'.repeat(102);
    const envs = Array.from({ length: 21 }, (_, i) => ({ key: `E${i}`, value }));
    const started = Date.now();
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody({ envs }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(created.status).toBe(400);
    expect(created.body.metadata).toMatchObject({
      field: 'envs',
      limit: 'secretReferences',
      max: 1_000,
      value: 2_142,
    });
  });

  it('refuses an update past the bound and leaves the endpoint as it was', async () => {
    const created = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ envs: refs(1, 'big') }),
    );
    const id = created.body.id as string;
    const before = (await api.call('GET', `endpoint?id=${id}`)).body;
    const updated = await api.call('POST', 'endpoint/update', { id, envs: refs(17, 'big') });
    expect(updated.status).toBe(400);
    expect(updated.body.metadata).toMatchObject({ field: 'envs', limit: 'resolvedEnvBytes' });
    expect((await api.call('GET', `endpoint?id=${id}`)).body).toEqual(before);
  });
});
