/**
 * `GET models`: the models in the machine's cache (a real `HubModelCache` filled from the hub stand-in), each with
 * the endpoints naming it, and a GPU node's copies (the same cache's listing as node `gpu-a` says it; the agents'
 * own are in test/e2e/models-kubernetes.test.ts); an admin key sees every cached model, an owner only those its
 * endpoints name, on every machine.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { type HubStandIn, startHubStandIn } from '../../test/support/hub-stand-in.js';
import { type Document, problemsIn, responseSchemaIn } from '../../test/support/openapi.js';
import { storeTargets } from '../../test/support/stores.js';
import { openApiDocument } from '../contract/openapi/document.js';
import { API_PREFIX } from '../contract/paths.js';
import { HubModelCache } from '../models/hub-cache.js';
import { HubClient } from '../models/hub-client.js';
import { ApiKeyService } from '../service/api-key-service.js';
import type { ModelUser } from './routes/models.js';

const MINE = 'corral-test/mine';
const THEIRS = 'corral-test/theirs';

describe('GET models', () => {
  let hub: HubStandIn;
  let root: string;
  let api: TestApi;
  let adminKey: string;
  let dispose: () => Promise<void>;
  const usersOfA = new Map<string, ModelUser[]>([[MINE, [{ endpointId: 'ep-a', endpointName: 'a' }]]]);
  const usersOfB = new Map<string, ModelUser[]>([[THEIRS, [{ endpointId: 'ep-b', endpointName: 'b' }]]]);
  const users: Record<string, Map<string, ModelUser[]>> = { 'owner-a': usersOfA, 'owner-b': usersOfB };

  beforeAll(async () => {
    hub = await startHubStandIn({
      models: [
        { name: MINE, weightBytes: 300_000 },
        { name: THEIRS, weightBytes: 200_000 },
      ],
    });
    root = await mkdtemp(join(tmpdir(), 'corral-models-api-'));
    const cache = new HubModelCache({
      hubDir: root,
      client: new HubClient({ hubUrl: hub.url }),
      clock: Date.now,
      logger: pino({ level: 'silent' }),
      diskBudgetBytes: null,
      namedModels: async () => new Set([MINE, THEIRS]),
    });
    for (const name of [MINE, THEIRS]) {
      await cache.ensure({ name, revision: 'main', allowPatterns: [], tokenSecret: null }, null);
    }
    const target = storeTargets()[0];
    if (!target) throw new Error('no store');
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, {
      models: {
        cache,
        machines: {
          listMachines: async () =>
            (await cache.list()).map((model) => ({ ...model, machine: 'gpu-a', download: null })),
          ensure: (model, token) => cache.ensure(model, token),
          removeEverywhere: async () => ({ removal: 'not_cached', unreachable: [] }),
        },
        users: async (ownerId) =>
          ownerId === null ? new Map([...usersOfA, ...usersOfB]) : (users[ownerId] ?? new Map()),
      },
    });
    adminKey = (
      await new ApiKeyService({ store: opened.store, clock: Date.now }).create({
        ownerId: 'ops',
        name: 'o',
        admin: true,
      })
    ).key;
  });
  afterAll(async () => {
    await api?.app.close();
    await dispose?.();
    await hub?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('shows an owner only the models its endpoints name, with their size, last use and commit', async () => {
    const answer = await api.call('GET', 'models');
    expect(answer.status).toBe(200);
    const { commit, files } = await hub.describe(MINE);
    const mine = {
      name: MINE,
      revision: 'main',
      commit,
      files: files.length,
      bytes: files.reduce((sum, file) => sum + file.size, 0),
      diskBytes: files.reduce((sum, file) => sum + file.size, 0),
      lastUsedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      endpoints: [{ endpointId: 'ep-a', endpointName: 'a' }],
      download: null,
    };
    // The server's own copy, then the node's: the other owner's model on the node is not shown either.
    expect(answer.body).toEqual({
      scope: 'own',
      models: [
        { ...mine, machine: null },
        { ...mine, machine: 'gpu-a' },
      ],
    });
    const doc = openApiDocument({ serverUrl: 'http://127.0.0.1:8080' }) as Document;
    expect(problemsIn(doc, answer.body, responseSchemaIn(doc, `${API_PREFIX}/models`, 'get'))).toEqual([]);
  });

  it("shows an admin every cached model and every owner's endpoints naming it", async () => {
    const answer = await api.call('GET', 'models', undefined, adminKey);
    expect(answer.body.scope).toBe('all');
    expect(
      answer.body.models.map(
        (model: { name: string; machine: string | null }) => `${model.name} ${model.machine}`,
      ),
    ).toEqual(expect.arrayContaining([`${MINE} null`, `${THEIRS} null`, `${MINE} gpu-a`, `${THEIRS} gpu-a`]));
    expect(answer.body.models).toHaveLength(4);
    expect(answer.body.models.find((model: { name: string }) => model.name === THEIRS).endpoints).toEqual([
      { endpointId: 'ep-b', endpointName: 'b' },
    ]);
  });
});
