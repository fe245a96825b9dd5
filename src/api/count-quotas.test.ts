/**
 * The count quotas through the API: secrets, registry credentials and invoke keys per owner, each refused past its
 * quota with 403 QUOTA_EXCEEDED naming it, nothing written; a replaced secret and a revoked or deleted endpoint's
 * key counting nothing; one owner's never counted against another's; many saves at once never past the quota; and
 * `GET quota` showing each with its use.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';

describe.each(storeTargets())('count quotas on $name', (target) => {
  let api: TestApi;
  const disposers: (() => Promise<void>)[] = [];

  const open = async (quotas: string) => {
    const opened = await target.open();
    disposers.push(opened.dispose);
    api = await createTestApi(opened.store, { configText: `quotas: ${quotas}\n` });
    const app = api.app;
    disposers.push(() => app.close());
  };
  afterEach(async () => {
    for (const dispose of disposers.splice(0).reverse()) await dispose();
  });

  const saveSecret = (name: string, key?: string) =>
    api.call('POST', 'secret/save', { name, value: 'v'.repeat(32 * 1024) }, key);
  const saveCredentials = (key?: string) =>
    api.call('POST', 'repository/auth/save', { name: 'hub', username: 'u', password: 'p' }, key);
  const createEndpoint = async (key?: string) => {
    const response = await api.call('POST', 'endpoint/create', originalClientCreateBody(), key);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.id as string;
  };
  const createKey = (id: string, key?: string) =>
    api.call('POST', 'endpoint/invoke-key/create', { id, name: 'k' }, key);
  const expectRefused = (
    response: { status: number; body: any },
    metadata: { quota: string; limit: number; used: number; usedAfter: number },
  ) => {
    expect(response.status, JSON.stringify(response.body)).toBe(403);
    expect(response.body).toMatchObject({ reason: 'QUOTA_EXCEEDED', metadata });
    expect(response.body.message).toContain(`above your quota of ${metadata.limit}`);
  };

  it('shows the default count quotas and their use', async () => {
    await open('{}');
    await saveSecret('a');
    await saveCredentials();
    await createKey(await createEndpoint());
    const report = (await api.call('GET', 'quota')).body;
    expect(report.quota).toMatchObject({ secrets: 100, credentials: 50, invokeKeys: 200 });
    expect(report.used).toMatchObject({ secrets: 1, credentials: 1, invokeKeys: 1 });
    expect(report.sources).toMatchObject({
      secrets: 'default',
      credentials: 'default',
      invokeKeys: 'default',
    });
  });

  it('refuses a new secret past the quota, keeps replacing the saved ones, and counts per owner', async () => {
    await open('{ secrets: 2 }');
    expect((await saveSecret('a')).status).toBe(200);
    expect((await saveSecret('b')).status).toBe(200);
    expectRefused(await saveSecret('c'), { quota: 'secrets', limit: 2, used: 2, usedAfter: 3 });
    const names = (await api.call('GET', 'secrets')).body.secrets.map((s: { name: string }) => s.name);
    expect(names).toEqual(['a', 'b']);
    // A replaced value adds nothing, even at the quota.
    const replaced = await saveSecret('a');
    expect([replaced.status, replaced.body.replaced]).toEqual([200, true]);
    expect((await saveSecret('c', api.keyB)).status).toBe(200);
    expect((await api.call('POST', 'secret/delete', { name: 'b' })).status).toBe(200);
    expect((await saveSecret('c')).status).toBe(200);
    expect((await api.call('GET', 'quota')).body).toMatchObject({
      quota: { secrets: 2 },
      used: { secrets: 2 },
      sources: { secrets: 'config' },
    });
  });

  it('keeps the size limit on a secret value', async () => {
    await open('{}');
    const response = await api.call('POST', 'secret/save', { name: 'big', value: 'v'.repeat(32 * 1024 + 1) });
    expect([response.status, response.body.metadata]).toEqual([400, { field: 'value' }]);
  });

  it("refuses an invoke key past the owner's quota over all its endpoints; a revoke or a delete frees one", async () => {
    await open('{ invokeKeys: 2 }');
    const first = await createEndpoint();
    const second = await createEndpoint();
    const kept = (await createKey(first)).body.id as string;
    expect((await createKey(second)).status).toBe(200);
    expectRefused(await createKey(first), { quota: 'invokeKeys', limit: 2, used: 2, usedAfter: 3 });
    expect((await api.call('GET', `endpoint/invoke-keys?id=${first}`)).body.keys).toHaveLength(1);
    // Another owner's keys are its own.
    expect((await createKey(await createEndpoint(api.keyB), api.keyB)).status).toBe(200);

    expect((await api.call('POST', 'endpoint/invoke-key/delete', { id: first, keyId: kept })).status).toBe(
      200,
    );
    expect((await createKey(first)).status).toBe(200);
    expectRefused(await createKey(second), { quota: 'invokeKeys', limit: 2, used: 2, usedAfter: 3 });
    expect((await api.call('POST', 'endpoint/delete', { id: second })).status).toBe(200);
    expect((await createKey(first)).status).toBe(200);
    expect((await api.call('GET', 'quota')).body.used.invokeKeys).toBe(2);
  });

  it.each([
    [
      'secrets',
      (i: number) => saveSecret(`s${i}`),
      async () => (await api.call('GET', 'secrets')).body.secrets,
    ],
    [
      'credentials',
      () => saveCredentials(),
      async () => (await api.call('GET', 'repository/auths')).body.auths,
    ],
  ])('admits exactly up to the %s quota when one owner saves many at once', async (quota, save, listed) => {
    await open(`{ ${quota}: 3 }`);
    const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => save(i).then((r) => r.status)));
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status === 403)).toHaveLength(7);
    expect(await listed()).toHaveLength(3);
  });

  it('admits exactly up to the invoke key quota when one owner creates many at once', async () => {
    await open('{ invokeKeys: 3 }');
    const id = await createEndpoint();
    const statuses = await Promise.all(Array.from({ length: 10 }, () => createKey(id).then((r) => r.status)));
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status === 403)).toHaveLength(7);
    expect((await api.call('GET', `endpoint/invoke-keys?id=${id}`)).body.keys).toHaveLength(3);
  });
});
