/**
 * The API-key routes (`GET apikeys`, `POST apikey/create|delete`): admin keys only (403 ADMIN_REQUIRED for others),
 * the key shown once and never its hash, a revoked key refused at once, and no key in any log line. SQLite and
 * PostgreSQL.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';
import { CorralApiError, CorralClient } from '../client/index.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { Store } from '../store/store.js';

describe.each(storeTargets())('the API-key routes on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let api: TestApi;
  let adminKey: string;
  let adminKeyId: string;
  let logLines: string[];

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    logLines = [];
    api = await createTestApi(store, {
      logger: pino({ level: 'trace' }, { write: (line: string) => logLines.push(line) }),
    });
    const created = await new ApiKeyService({ store, clock: Date.now }).create({
      ownerId: 'ops',
      name: 'operator',
      admin: true,
    });
    adminKey = created.key;
    adminKeyId = created.id;
  });
  afterEach(async () => {
    await api.app.close();
    await dispose();
  });

  it('creates a key that works at once, shown once, listed without its secret or hash', async () => {
    const created = await api.call('POST', 'apikey/create', { name: 'ci', ownerId: 'team-x' }, adminKey);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      name: 'ci',
      ownerId: 'team-x',
      admin: false,
      lastUsedAt: null,
      revokedAt: null,
    });
    const key = created.body.key as string;
    expect(key).toMatch(new RegExp(`^sk_${created.body.id}_`));
    expect(Date.parse(created.body.createdAt)).toBeGreaterThan(0);

    // The new key acts as its owner.
    const used = await api.call('POST', 'endpoint/create', originalClientCreateBody(), key);
    expect(used.status).toBe(200);
    expect((await api.call('GET', 'endpoints', undefined, key)).body.total).toBe(1);
    expect((await api.call('GET', 'endpoints', undefined, api.keyA)).body.total).toBe(0);

    const listed = await api.call('GET', 'apikeys', undefined, adminKey);
    expect(listed.status).toBe(200);
    const row = listed.body.keys.find((k: { id: string }) => k.id === created.body.id);
    expect(Object.keys(row).sort()).toEqual(
      ['admin', 'createdAt', 'id', 'lastUsedAt', 'name', 'ownerId', 'revokedAt'].sort(),
    );
    expect(row.lastUsedAt).not.toBeNull();
    const text = JSON.stringify(listed.body);
    expect(text).not.toContain(key);
    expect(text).not.toContain((await store.apiKeys.findById(created.body.id))?.secretHash);
    // Every owner's keys: the two test owners', the admin's and the new one.
    expect(listed.body.keys.map((k: { ownerId: string }) => k.ownerId).sort()).toEqual([
      'ops',
      'owner-a',
      'owner-b',
      'team-x',
    ]);
  });

  it("defaults to the caller's owner, and makes admin keys when asked", async () => {
    const created = await api.call('POST', 'apikey/create', { admin: true }, adminKey);
    expect(created.body).toMatchObject({ ownerId: 'ops', name: '', admin: true });
    expect((await api.call('GET', 'apikeys', undefined, created.body.key)).status).toBe(200);
  });

  it('revokes a key: it is refused at once, listed as revoked, and a second delete is 404', async () => {
    const { key, id } = (await api.call('POST', 'apikey/create', { name: 'tmp' }, adminKey)).body;
    expect((await api.call('GET', 'endpoints', undefined, key)).status).toBe(200);
    const deleted = await api.call('POST', 'apikey/delete', { id }, adminKey);
    expect(deleted).toMatchObject({ status: 200, body: {} });
    const refused = await api.call('GET', 'endpoints', undefined, key);
    expect(refused.status).toBe(401);
    expect(refused.body.reason).toBe('UNAUTHENTICATED');
    const row = (await api.call('GET', 'apikeys', undefined, adminKey)).body.keys.find(
      (k: { id: string }) => k.id === id,
    );
    expect(row.revokedAt).not.toBeNull();
    const again = await api.call('POST', 'apikey/delete', { id }, adminKey);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ reason: 'API_KEY_NOT_FOUND', metadata: { id } });
    // The audit log names the admin key that acted.
    const audit = (await store.audit.list('ops', 50)).reverse();
    expect(audit.filter((a) => a.targetId === id).map((a) => [a.action, a.actor])).toEqual([
      ['key.create', adminKeyId],
      ['key.revoke', adminKeyId],
    ]);
  });

  it('refuses a key that is not an admin key with 403 ADMIN_REQUIRED, changing nothing', async () => {
    const ids = async () => (await store.apiKeys.list()).map((k) => [k.id, k.admin, k.revokedAt]);
    const before = await ids();
    for (const [method, path, body] of [
      ['GET', 'apikeys', undefined],
      ['POST', 'apikey/create', { name: 'mine', admin: true }],
      ['POST', 'apikey/delete', { id: adminKeyId }],
    ] as const) {
      const answer = await api.call(method, path, body, api.keyA);
      expect(answer.status, path).toBe(403);
      expect(answer.body.reason, path).toBe('ADMIN_REQUIRED');
      expect(answer.body.message).toMatch(/needs an admin API key/);
    }
    expect(await ids()).toEqual(before);
    // No key at all is still 401.
    expect((await api.call('GET', 'apikeys', undefined, null)).status).toBe(401);
  });

  it('refuses bad bodies beside the field', async () => {
    const cases: [unknown, string][] = [
      [{ name: 'x'.repeat(201) }, 'name'],
      [{ name: 3 }, 'name'],
      [{ ownerId: 'has space' }, 'ownerId'],
      [{ ownerId: '' }, 'ownerId'],
      [{ admin: 'yes' }, 'admin'],
    ];
    for (const [body, field] of cases) {
      const answer = await api.call('POST', 'apikey/create', body, adminKey);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field } });
    }
    const noId = await api.call('POST', 'apikey/delete', {}, adminKey);
    expect(noId.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field: 'id' } });
  });

  it('logs key ids, never a key', async () => {
    const { key, id } = (await api.call('POST', 'apikey/create', { name: 'logged' }, adminKey)).body;
    await api.call('GET', 'endpoints', undefined, key);
    await api.call('POST', 'apikey/delete', { id }, adminKey);
    await api.call('GET', 'endpoints', undefined, key);
    const log = logLines.join('');
    expect(log).toContain('API key created');
    expect(log).toContain('API key revoked');
    expect(log).toContain(id);
    expect(log).not.toContain(key);
    expect(log).not.toContain(adminKey);
    expect(log).not.toContain(key.split('_')[2]);
  });

  it('are what the typed client calls (the dashboard and the CLI use it)', async () => {
    const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
    const admin = new CorralClient({ baseUrl: address, apiKey: adminKey });
    const created = await admin.createApiKey({ name: 'via client', ownerId: 'team-y' });
    expect(created).toMatchObject({ name: 'via client', ownerId: 'team-y', admin: false });
    const listed = await admin.listApiKeys();
    expect(listed.find((k) => k.id === created.id)).toEqual({
      id: created.id,
      name: 'via client',
      ownerId: 'team-y',
      admin: false,
      createdAt: created.createdAt,
      lastUsedAt: null,
      revokedAt: null,
    });
    const gpus = await new CorralClient({ baseUrl: address, apiKey: created.key }).getGpus();
    expect(gpus.gpus).toHaveLength(4);
    await admin.deleteApiKey(created.id);
    const refused = await new CorralClient({ baseUrl: address, apiKey: api.keyA })
      .listApiKeys()
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CorralApiError);
    expect(refused).toMatchObject({ status: 403, reason: 'ADMIN_REQUIRED' });
  });
});
