import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { MemoryModelCache } from '../../test/support/memory-model-cache.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';

async function memoryStore(): Promise<Store> {
  const store = new Store({ connection: connectSqlite(':memory:') });
  await store.migrate();
  return store;
}

const TOKEN = 'hf_gated_access_5d2c';

describe("an endpoint's models through the API", () => {
  let api: TestApi;
  let cache: MemoryModelCache;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const store = await memoryStore();
    close = () => store.close();
    cache = new MemoryModelCache({
      hubDir: '/cache/hub',
      models: [
        { name: 'acme/tiny', bytes: 1_000 },
        { name: 'acme/gated', bytes: 2_000, tokens: [TOKEN] },
      ],
    });
    api = await createTestApi(store, { modelCache: cache });
    expect((await api.call('POST', 'secret/save', { name: 'hf-token', value: TOKEN })).status).toBe(200);
    expect((await api.call('POST', 'secret/save', { name: 'hf-other', value: 'hf_nobody' })).status).toBe(
      200,
    );
  });
  afterAll(async () => {
    await api.app.close();
    await close();
  });

  const create = (models: unknown) =>
    api.call('POST', 'endpoint/create', originalClientCreateBody({ models }));

  it('stores the models with their defaults and shows them on get, the token secret by name only', async () => {
    const created = await create([
      { name: 'acme/tiny' },
      { name: 'acme/gated', revision: 'refs/pr/1', allowPatterns: ['*.json'], tokenSecret: 'hf-token' },
    ]);
    expect(created.status).toBe(200);
    const got = await api.call('GET', `endpoint?id=${created.body.id}`);
    expect(got.body.endpoint.models).toEqual([
      { name: 'acme/tiny', revision: 'main', allowPatterns: [], tokenSecret: null },
      { name: 'acme/gated', revision: 'refs/pr/1', allowPatterns: ['*.json'], tokenSecret: 'hf-token' },
    ]);
    expect(JSON.stringify(got.body)).not.toContain(TOKEN);
    // The hub was asked with the owner's token for the gated model, and with none for the public one.
    expect(cache.tokensSeen.slice(-2)).toEqual([null, TOKEN]);
  });

  it.each([
    ['a name without org', { name: 'tiny' }, 'models.0.name', 'must be org/name'],
    ['a .. segment in a name', { name: '../etc' }, 'models.0.name', '. or .. segment'],
    ['"--" in a name', { name: 'acme/a--b' }, 'models.0.name', '"--"'],
    [
      'a .. segment in a revision',
      { name: 'acme/tiny', revision: 'refs/../../x' },
      'models.0.revision',
      '. or ..',
    ],
    [
      'a leading slash in a revision',
      { name: 'acme/tiny', revision: '/main' },
      'models.0.revision',
      'empty segment',
    ],
  ])('refuses %s with 400 INVALID_FIELD naming the field', async (_what, model, field, message) => {
    const created = await create([model]);
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({
      reason: 'INVALID_FIELD',
      message: expect.stringContaining(message),
      metadata: { field },
    });
  });

  it('refuses a token secret the owner does not have with 400 UNKNOWN_SECRET', async () => {
    const created = await create([{ name: 'acme/gated', tokenSecret: 'nope' }]);
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({
      reason: 'UNKNOWN_SECRET',
      metadata: { field: 'models.0.tokenSecret', secret: 'nope' },
    });
  });

  it('refuses at create what the hub refuses with the owner token: a gated model without access, a missing repo', async () => {
    const noToken = await create([{ name: 'acme/gated' }]);
    expect(noToken.status).toBe(400);
    expect(noToken.body).toMatchObject({ reason: 'MODEL_GATED', metadata: { field: 'models.0.name' } });
    const wrongToken = await create([{ name: 'acme/gated', tokenSecret: 'hf-other' }]);
    expect(wrongToken.body.reason).toBe('MODEL_GATED');
    const missing = await create([{ name: 'acme/tiny' }, { name: 'acme/none' }]);
    expect(missing.body).toMatchObject({ reason: 'MODEL_NOT_FOUND', metadata: { field: 'models.1.name' } });
  });

  it('checks new models at update, makes a new revision for them, and keeps a secret they use from deletion', async () => {
    const created = await create([]);
    const id = created.body.id as string;
    const refused = await api.call('POST', 'endpoint/update', { id, models: [{ name: 'acme/gated' }] });
    expect(refused.body.reason).toBe('MODEL_GATED');
    const updated = await api.call('POST', 'endpoint/update', {
      id,
      models: [{ name: 'acme/gated', tokenSecret: 'hf-token' }],
    });
    expect(updated.status).toBe(200);
    const events = await api.call('GET', `endpoint/log?id=${id}`);
    expect(JSON.stringify(events.body)).toContain('"revision":2');
    const deleted = await api.call('POST', 'secret/delete', { name: 'hf-token' });
    expect(deleted.status).toBe(409);
    expect(deleted.body.reason).toBe('SECRET_IN_USE');
  });

  it('refuses models where the server has no model cache', async () => {
    const store = await memoryStore();
    const bare = await createTestApi(store);
    const created = await bare.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ models: [{ name: 'acme/tiny' }] }),
    );
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field: 'models' } });
    await bare.app.close();
    await store.close();
  });
});
