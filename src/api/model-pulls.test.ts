/**
 * `POST models` and `DELETE models/{org}/{name}` over an in-memory cache: a pull with the caller's own token
 * answers 202 with the download's progress (then 200 once cached), refuses as a create does, and shows the model in
 * the puller's own `GET models`; a removal is an admin key's, refused while an endpoint names the model or while it
 * is downloaded; on Kubernetes with node agents a pull fills every GPU node's cache too (with the caller's token) and
 * a removal is from every GPU node too (the nodes' answers given here as `NodeModelCache` says them; its calls to real agents are src/runtime/kubernetes/node-model-cache.int.test.ts's).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { MemoryModelCache } from '../../test/support/memory-model-cache.js';
import { type Document, problemsIn, responseSchemaIn } from '../../test/support/openapi.js';
import { openApiDocument } from '../contract/openapi/document.js';
import { API_PREFIX } from '../contract/paths.js';
import type { MachineRemoval } from '../ports/model-cache.js';
import { ApiKeyService } from '../service/api-key-service.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import type { ModelUser } from './routes/models.js';

const TOKEN = 'hf_gated_access_9a1f';
const TINY = { name: 'acme/tiny', revision: 'main' };

describe('POST models and DELETE models', () => {
  let api: TestApi;
  let cache: MemoryModelCache;
  let adminKey: string;
  let close: () => Promise<void>;
  const users = new Map<string, ModelUser[]>();

  beforeAll(async () => {
    const store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    close = () => store.close();
    cache = new MemoryModelCache({
      hubDir: '/cache/hub',
      models: [
        { name: 'acme/tiny', bytes: 14.9e9 },
        { name: 'acme/named', bytes: 1_000 },
        { name: 'acme/gated', bytes: 2_000, tokens: [TOKEN] },
      ],
    });
    api = await createTestApi(store, {
      modelCache: cache,
      models: {
        cache,
        users: async (ownerId) =>
          new Map(
            [...users].map(([name, list]) => [
              name,
              list.filter(() => ownerId === null || ownerId === 'owner-a'),
            ]),
          ),
      },
    });
    adminKey = (
      await new ApiKeyService({ store, clock: Date.now }).create({ ownerId: 'ops', name: 'o', admin: true })
    ).key;
    expect((await api.call('POST', 'secret/save', { name: 'hf-token', value: TOKEN })).status).toBe(200);
  });
  afterAll(async () => {
    await api.app.close();
    await close();
  });

  it('answers 202 with the download under way, shows it to the puller only, and 200 once it is cached', async () => {
    const started = await api.call('POST', 'models', { name: 'acme/tiny' });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({
      name: 'acme/tiny',
      revision: 'main',
      commit: 'c0ffee',
      download: { bytesDone: 0, bytesTotal: 14.9e9, bytesPerSecond: 0 },
    });
    const doc = openApiDocument({ serverUrl: 'http://127.0.0.1:8080' }) as Document;
    expect(problemsIn(doc, started.body, responseSchemaIn(doc, `${API_PREFIX}/models`, 'post'))).toEqual([]);

    cache.advance(TINY, 3.2e9, 410e6);
    const listed = await api.call('GET', 'models');
    expect(listed.body.models).toMatchObject([
      { name: 'acme/tiny', download: { bytesDone: 3.2e9, bytesTotal: 14.9e9, bytesPerSecond: 410e6 } },
    ]);
    // Owner B neither pulled it nor names it.
    expect((await api.call('GET', 'models', undefined, api.keyB)).body.models).toEqual([]);

    cache.finish(TINY);
    expect((await api.call('GET', 'models')).body.models).toMatchObject([
      { name: 'acme/tiny', download: null },
    ]);
    const again = await api.call('POST', 'models', { name: 'acme/tiny', revision: 'main' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ name: 'acme/tiny', download: null });
  });

  it('refuses as a create does: the body, a secret you lack, a model the hub refuses with your token', async () => {
    const bad = await api.call('POST', 'models', { name: 'acme/../x' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field: 'name' } });
    const noName = await api.call('POST', 'models', { revision: 'main' });
    expect(noName.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field: 'name' } });
    const noSecret = await api.call('POST', 'models', { name: 'acme/gated', tokenSecret: 'hf-nope' });
    expect(noSecret.status).toBe(400);
    expect(noSecret.body).toMatchObject({ reason: 'UNKNOWN_SECRET', metadata: { field: 'tokenSecret' } });
    const gated = await api.call('POST', 'models', { name: 'acme/gated' });
    expect(gated.body).toMatchObject({ reason: 'MODEL_GATED', metadata: { field: 'name' } });
    const missing = await api.call('POST', 'models', { name: 'acme/none' });
    expect(missing.body).toMatchObject({ reason: 'MODEL_NOT_FOUND', metadata: { field: 'name' } });
    expect(cache.downloading({ name: 'acme/gated', revision: 'main' })).toBe(false);

    const granted = await api.call('POST', 'models', { name: 'acme/gated', tokenSecret: 'hf-token' });
    expect(granted.status).toBe(202);
    expect(cache.tokensSeen.at(-1)).toBe(TOKEN);
    cache.finish({ name: 'acme/gated', revision: 'main' });
  });

  it('removes a model for an admin key only, never one an endpoint names or one being downloaded', async () => {
    expect((await api.call('POST', 'models', { name: 'acme/named' })).status).toBe(202);
    const downloading = await api.call('DELETE', 'models/acme/named', undefined, adminKey);
    expect(downloading.status).toBe(409);
    expect(downloading.body.reason).toBe('MODEL_DOWNLOADING');
    cache.finish({ name: 'acme/named', revision: 'main' });

    users.set('acme/named', [{ endpointId: 'ep-1', endpointName: 'llm' }]);
    const inUse = await api.call('DELETE', 'models/acme/named', undefined, adminKey);
    expect(inUse.status).toBe(409);
    expect(inUse.body).toMatchObject({
      reason: 'MODEL_IN_USE',
      metadata: { endpoints: [{ endpointId: 'ep-1', endpointName: 'llm' }] },
    });
    users.delete('acme/named');

    const byOwner = await api.call('DELETE', 'models/acme/named');
    expect(byOwner.status).toBe(403);
    expect(byOwner.body.reason).toBe('ADMIN_REQUIRED');
    expect((await api.call('DELETE', 'models/acme/named?revision=v2', undefined, adminKey)).body.reason).toBe(
      'MODEL_NOT_CACHED',
    );
    const removed = await api.call('DELETE', 'models/acme/named?revision=main', undefined, adminKey);
    expect(removed.status).toBe(204);
    const left = (await api.call('GET', 'models', undefined, adminKey)).body.models;
    expect(left.map((model: { name: string }) => model.name)).not.toContain('acme/named');
    const gone = await api.call('DELETE', 'models/acme/named', undefined, adminKey);
    expect(gone.status).toBe(404);
    expect(gone.body.reason).toBe('MODEL_NOT_CACHED');
  });
});

describe('DELETE models with GPU nodes (Kubernetes with node agents)', () => {
  let api: TestApi;
  let adminKey: string;
  let close: () => Promise<void>;
  let onNodes: MachineRemoval = { removal: 'removed', unreachable: [] };
  const asked: string[] = [];
  const pulledOnNodes: { name: string; token: string | null }[] = [];
  let cache: MemoryModelCache;
  /** The GPU nodes' caches, as one: their download a test advances by hand. */
  let nodes: MemoryModelCache;

  beforeAll(async () => {
    const store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    close = () => store.close();
    cache = new MemoryModelCache({ hubDir: '/cache/hub', models: [{ name: 'acme/tiny', bytes: 1_000 }] });
    nodes = new MemoryModelCache({ hubDir: '/nodes/hub', models: [{ name: 'acme/tiny', bytes: 1_000 }] });
    api = await createTestApi(store, {
      modelCache: cache,
      models: {
        cache,
        machines: {
          listMachines: async () => [],
          ensure: (model, token, onProgress) => {
            pulledOnNodes.push({ name: model.name, token });
            return nodes.ensure(model, token, onProgress);
          },
          removeEverywhere: async (name) => {
            asked.push(name);
            return onNodes;
          },
        },
        users: async () => new Map(),
      },
    });
    adminKey = (
      await new ApiKeyService({ store, clock: Date.now }).create({ ownerId: 'ops', name: 'o', admin: true })
    ).key;
  });
  afterAll(async () => {
    await api.app.close();
    await close();
  });

  it("pulls a model into the nodes' caches only, with the caller's token, answering with their download", async () => {
    expect((await api.call('POST', 'secret/save', { name: 'hf-token', value: TOKEN })).status).toBe(200);
    const pulled = await api.call('POST', 'models', { name: 'acme/tiny', tokenSecret: 'hf-token' });
    expect(pulled.status).toBe(202);
    expect(pulled.body).toMatchObject({
      name: 'acme/tiny',
      machine: null,
      download: { bytesDone: 0, bytesTotal: 1_000 },
    });
    expect(pulledOnNodes).toEqual([{ name: 'acme/tiny', token: TOKEN }]);
    // No worker mounts Corral's own cache where the nodes have theirs: nothing fetched into it.
    expect(await cache.list()).toEqual([]);
    expect(cache.downloading({ name: 'acme/tiny', revision: 'main' })).toBe(false);

    nodes.finish({ name: 'acme/tiny', revision: 'main' });
    const again = await api.call('POST', 'models', { name: 'acme/tiny', tokenSecret: 'hf-token' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ name: 'acme/tiny', download: null });
  });

  it("removes a model only the nodes hold, and says which node's agent did not answer, or that one fetches it", async () => {
    expect((await api.call('DELETE', 'models/acme/on-nodes', undefined, adminKey)).status).toBe(204);
    expect(asked).toEqual(['acme/on-nodes']);

    onNodes = { removal: 'removed', unreachable: [{ machine: 'gpu-b', message: 'connect ECONNREFUSED' }] };
    const unreachable = await api.call('DELETE', 'models/acme/on-nodes', undefined, adminKey);
    expect(unreachable.status).toBe(503);
    expect(unreachable.body).toMatchObject({
      reason: 'MODEL_NODE_UNREACHABLE',
      metadata: { model: 'acme/on-nodes', nodes: ['gpu-b'] },
    });
    expect(unreachable.body.message).toContain('gpu-b (connect ECONNREFUSED)');

    onNodes = { removal: 'downloading', unreachable: [] };
    expect((await api.call('DELETE', 'models/acme/on-nodes', undefined, adminKey)).body.reason).toBe(
      'MODEL_DOWNLOADING',
    );
    onNodes = { removal: 'not_cached', unreachable: [] };
    expect((await api.call('DELETE', 'models/acme/on-nodes', undefined, adminKey)).body.reason).toBe(
      'MODEL_NOT_CACHED',
    );
  });
});
