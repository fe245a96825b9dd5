// The invoke-key routes and the `public` field over the real API and store: what an owner sees, what another owner
// cannot touch, and that an invoke key cannot call the API.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';

describe.each(storeTargets())('invoke keys and public endpoints on $name', (target) => {
  let api: TestApi;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store);
  });
  afterEach(async () => {
    await api.app.close();
    await dispose();
  });

  const create = async (overrides: Record<string, unknown> = {}) => {
    const response = await api.call('POST', 'endpoint/create', originalClientCreateBody(overrides));
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.id as string;
  };

  it('creates a key shown once, lists it without the key, and revokes it', async () => {
    const id = await create();
    const created = await api.call('POST', 'endpoint/invoke-key/create', { id, name: 'frontend' });
    expect(created.status).toBe(200);
    const { key, ...info } = created.body;
    expect(key).toMatch(/^ik_[a-z0-9]{12}_[A-Za-z0-9]{32}$/);
    expect(info).toEqual({
      id: key.slice(3, 15),
      endpointId: id,
      name: 'frontend',
      createdAt: expect.any(String),
      revokedAt: null,
    });
    const listed = await api.call('GET', `endpoint/invoke-keys?id=${id}`);
    expect(listed.body).toEqual({ keys: [info] });
    expect(JSON.stringify(listed.body)).not.toContain(key.slice(16));

    const revoked = await api.call('POST', 'endpoint/invoke-key/delete', { id, keyId: info.id });
    expect([revoked.status, revoked.body]).toEqual([200, {}]);
    const after = await api.call('GET', `endpoint/invoke-keys?id=${id}`);
    expect(after.body.keys[0].revokedAt).toEqual(expect.any(String));
    const again = await api.call('POST', 'endpoint/invoke-key/delete', { id, keyId: info.id });
    expect([again.status, again.body.reason]).toEqual([404, 'INVOKE_KEY_NOT_FOUND']);
  });

  it('answers 404 to another owner for every invoke-key operation on an endpoint that is not theirs', async () => {
    const id = await create();
    const key = await api.call('POST', 'endpoint/invoke-key/create', { id });
    const asB = [
      await api.call('POST', 'endpoint/invoke-key/create', { id }, api.keyB),
      await api.call('GET', `endpoint/invoke-keys?id=${id}`, undefined, api.keyB),
      await api.call('POST', 'endpoint/invoke-key/delete', { id, keyId: key.body.id }, api.keyB),
    ];
    expect(asB.map((r) => [r.status, r.body.reason])).toEqual([
      [404, 'ENDPOINT_NOT_FOUND'],
      [404, 'ENDPOINT_NOT_FOUND'],
      [404, 'ENDPOINT_NOT_FOUND'],
    ]);
    expect((await api.call('GET', `endpoint/invoke-keys?id=${id}`)).body.keys[0].revokedAt).toBeNull();
  });

  it('refuses an invoke key at the API with 401, saying what it is for', async () => {
    const id = await create();
    const { key } = (await api.call('POST', 'endpoint/invoke-key/create', { id })).body;
    const answer = await api.call('GET', `endpoint?id=${id}`, undefined, key);
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ reason: 'UNAUTHENTICATED' });
    expect(answer.body.message).toContain('invoke key');
  });

  it('refuses bodies and queries without the ids', async () => {
    const id = await create();
    const cases = [
      await api.call('POST', 'endpoint/invoke-key/create', {}),
      await api.call('POST', 'endpoint/invoke-key/create', { id, name: 'x'.repeat(101) }),
      await api.call('POST', 'endpoint/invoke-key/delete', { id }),
      await api.call('GET', 'endpoint/invoke-keys'),
    ];
    expect(cases.map((r) => [r.status, r.body.reason, r.body.metadata.field])).toEqual([
      [400, 'INVALID_FIELD', 'id'],
      [400, 'INVALID_FIELD', 'name'],
      [400, 'INVALID_FIELD', 'keyId'],
      [400, 'INVALID_QUERY', 'id'],
    ]);
  });

  it('takes public on create and update, keeps it when an update leaves it out, and shows it on get and list', async () => {
    const open = await create({ public: true });
    const closed = await create();
    const get = async (id: string) => (await api.call('GET', `endpoint?id=${id}`)).body.endpoint.public;
    expect([await get(open), await get(closed)]).toEqual([true, false]);
    const listed = (await api.call('GET', 'endpoints')).body.endpoints;
    expect(Object.fromEntries(listed.map((e: { id: string; public: boolean }) => [e.id, e.public]))).toEqual({
      [open]: true,
      [closed]: false,
    });
    const { endpoint } = originalClientCreateBody();
    const updated = await api.call('POST', 'endpoint/update', { id: closed, ...endpoint, public: true });
    expect(updated.body.endpoint.public).toBe(true);
    await api.call('POST', 'endpoint/update', { id: closed, ...endpoint });
    expect(await get(closed)).toBe(true);
    const bad = await api.call('POST', 'endpoint/update', { id: closed, ...endpoint, public: 'yes' });
    expect([bad.status, bad.body.metadata.field]).toEqual([400, 'public']);
  });
});
