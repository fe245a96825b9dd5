import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, PREFIX, type TestApi } from '../../test/support/api.js';
import { describeOnce, storeTargets } from '../../test/support/stores.js';
import { API_ERROR_CATALOGUE } from '../errors/api-catalogue.js';

describeOnce('errors, auth and abuse', () => {
  let api: TestApi;
  let dispose: () => Promise<void>;
  let now = 1_800_000_000_000;

  beforeAll(async () => {
    const [sqlite] = storeTargets();
    const opened = await (sqlite ?? storeTargets()[0])?.open();
    if (!opened) throw new Error('no store');
    dispose = opened.dispose;
    api = await createTestApi(opened.store, {
      configText: 'rateLimit: { requestsPerSecond: 1, burst: 5 }\nbodyLimitBytes: 4096\n',
      clock: () => now,
    });
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
  });

  const expectError = (response: { status: number; body: any }, status: number, reason: string) => {
    expect(response.status).toBe(status);
    expect(response.body).toEqual({
      code: status,
      reason,
      message: expect.any(String),
      metadata: expect.any(Object),
    });
    expect(API_ERROR_CATALOGUE[reason as keyof typeof API_ERROR_CATALOGUE].status).toBe(status);
  };

  it('401 without a key, with a wrong key, or with a malformed header', async () => {
    now += 10_000;
    expectError(await api.call('GET', 'endpoints', undefined, null), 401, 'UNAUTHENTICATED');
    expectError(
      await api.call('GET', 'endpoints', undefined, 'sk_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'),
      401,
      'UNAUTHENTICATED',
    );
    expectError(await api.call('GET', 'endpoints', undefined, `${api.keyA}x`), 401, 'UNAUTHENTICATED');
    const bare = await api.app.inject({
      method: 'GET',
      url: `${PREFIX}/endpoints`,
      headers: { authorization: api.keyA },
    });
    expect(bare.statusCode).toBe(200);
  });

  it('malformed JSON, __proto__, constructor.prototype and non-object bodies are 400s', async () => {
    now += 10_000;
    expectError(await api.call('POST', 'endpoint/create', '{"endpoint":'), 400, 'INVALID_JSON');
    expectError(
      await api.call('POST', 'endpoint/create', '{"__proto__":{"admin":true}}'),
      400,
      'INVALID_JSON',
    );
    expectError(
      await api.call('POST', 'endpoint/create', '{"constructor":{"prototype":{"x":1}}}'),
      400,
      'INVALID_JSON',
    );
    expectError(await api.call('POST', 'endpoint/create', '[1,2]'), 400, 'INVALID_FIELD');
    expectError(await api.call('POST', 'endpoint/update', '"text"'), 400, 'INVALID_FIELD');
  });

  it('an oversized body is a 413', async () => {
    now += 10_000;
    const body = originalClientCreateBody({ name: 'x'.repeat(8000) });
    expectError(await api.call('POST', 'endpoint/create', body), 413, 'BODY_TOO_LARGE');
  });

  it('a body sent as text/plain or form type is still read as JSON (curl -d)', async () => {
    now += 10_000;
    const response = await api.app.inject({
      method: 'POST',
      url: `${PREFIX}/endpoint/create`,
      headers: { authorization: `Bearer ${api.keyA}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: JSON.stringify(originalClientCreateBody()),
    });
    expect(response.statusCode).toBe(200);
  });

  it('unknown routes answer 404 in the error format', async () => {
    now += 10_000;
    expectError(await api.call('GET', 'nothing-here'), 404, 'ROUTE_NOT_FOUND');
  });

  it('rate-limits per key with Retry-After, and other keys are unaffected', async () => {
    now += 10_000;
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await api.call('GET', 'endpoints')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await api.call('GET', 'endpoints');
    expectError(limited, 429, 'RATE_LIMITED');
    expect(limited.headers['retry-after']).toBe('1');
    expect((await api.call('GET', 'endpoints', undefined, api.keyB)).status).toBe(200);
    now += 1000;
    expect((await api.call('GET', 'endpoints')).status).toBe(200);
  });

  it('healthz needs no key; metrics does (metrics-access.test.ts has the rest)', async () => {
    expect((await api.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({
      status: 'ok',
      ready: true,
    });
    const metrics = await api.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(401);
  });
});

describe.each(storeTargets())('registry credentials on $name', (target) => {
  let api: TestApi;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store);
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
  });

  it('saves, lists without the password, is usable as authId, and cannot be deleted while in use', async () => {
    const saved = await api.call('POST', 'repository/auth/save', {
      name: 'hub',
      username: 'bot',
      password: 's3cret-pw',
    });
    expect(saved.status).toBe(200);
    const authId = saved.body.id as string;
    const listed = await api.call('GET', 'repository/auths');
    expect(listed.body.auths).toEqual([
      { id: authId, name: 'hub', username: 'bot', createdAt: expect.any(String) },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain('s3cret-pw');
    expect((await api.call('GET', 'repository/auths', undefined, api.keyB)).body.auths).toEqual([]);

    const created = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ image: { image: 'private/x:1', authId } }),
    );
    expect(created.status).toBe(200);
    const byOther = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ image: { image: 'private/x:1', authId } }),
      api.keyB,
    );
    expect(byOther.body.reason).toBe('UNKNOWN_CREDENTIALS');

    const inUse = await api.call('POST', 'repository/auth/delete', { id: authId });
    expect(inUse.status).toBe(409);
    expect(inUse.body).toMatchObject({
      reason: 'CREDENTIALS_IN_USE',
      metadata: { endpoints: [created.body.id] },
    });
    await api.call('POST', 'endpoint/update', { id: created.body.id, image: { authId: '' } });
    expect((await api.call('POST', 'repository/auth/delete', { id: authId })).status).toBe(200);
    expect((await api.call('POST', 'repository/auth/delete', { id: authId })).body.reason).toBe(
      'CREDENTIALS_NOT_FOUND',
    );
  });

  it('rejects credentials without a name, username or password', async () => {
    const response = await api.call('POST', 'repository/auth/save', { name: 'hub', username: 'bot' });
    expect(response.status).toBe(400);
    expect(response.body.metadata.field).toBe('password');
  });
});
