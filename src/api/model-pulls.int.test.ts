/**
 * `POST models` then `DELETE models/{org}/{name}` on the real cache (a `HubModelCache` filled from the hub stand-in):
 * a first download is listed with its progress while its bytes are held, the files land in the hub's layout, a second
 * pull is 200, a second revision is removed alone (the blobs it shares with main stay), then the whole repository.
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from '../../test/support/api.js';
import { type HubStandIn, startHubStandIn } from '../../test/support/hub-stand-in.js';
import { storeTargets } from '../../test/support/stores.js';
import { CorralClient } from '../client/index.js';
import { modelRepoDir } from '../domain/model-refs.js';
import { HubModelCache } from '../models/hub-cache.js';
import { HubClient } from '../models/hub-client.js';
import { ApiKeyService } from '../service/api-key-service.js';

const MODEL = 'corral-test/pulled';

describe('pull then remove on the real model cache', () => {
  let hub: HubStandIn;
  let root: string;
  let api: TestApi;
  let adminKey: string;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    hub = await startHubStandIn({ models: [{ name: MODEL, weightBytes: 4_000_000 }] });
    root = await mkdtemp(join(tmpdir(), 'corral-model-pulls-'));
    const cache = new HubModelCache({
      hubDir: root,
      client: new HubClient({ hubUrl: hub.url }),
      clock: Date.now,
      logger: pino({ level: 'silent' }),
      diskBudgetBytes: null,
      namedModels: async () => new Set(),
    });
    const target = storeTargets()[0];
    if (!target) throw new Error('no store');
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store, {
      modelCache: cache,
      models: { cache, users: async () => new Map() },
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
    hub?.resume();
    await api?.app.close();
    await dispose?.();
    await hub?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('downloads after a 202, listed with its progress, then removes a revision and the repository', async () => {
    const main = await hub.describe(MODEL);
    hub.pause();
    const started = await api.call('POST', 'models', { name: MODEL });
    expect(started.status).toBe(202);
    // Held mid-download (the stand-in holds the weights; its small files may be in already, even by the time the
    // 202 is written): no snapshot yet, and the owner that pulled it sees it with its progress.
    expect(started.body).toMatchObject({ name: MODEL, commit: main.commit });
    expect((started.body.download as { bytesDone: number }).bytesDone).toBeLessThan(4_000_000);
    const during = await api.call('GET', 'models');
    expect(during.body.models).toMatchObject([{ name: MODEL, commit: main.commit }]);
    const progress = during.body.models[0].download as { bytesDone: number; bytesTotal: number };
    expect(progress.bytesTotal).toBeGreaterThanOrEqual(4_000_000);
    expect(progress.bytesDone).toBeLessThan(4_000_000);
    expect((await api.call('GET', 'models', undefined, api.keyB)).body.models).toEqual([]);
    hub.resume();
    await expect
      .poll(async () => (await api.call('GET', 'models')).body.models[0]?.download, { timeout: 30_000 })
      .toBeNull();
    const repo = join(root, modelRepoDir(MODEL));
    expect(await readFile(join(repo, 'refs', 'main'), 'utf8')).toBe(main.commit);
    expect((await readdir(join(repo, 'snapshots', main.commit))).sort()).toEqual(
      main.files.map((file) => file.path.split('/')[0]).sort(),
    );
    expect((await api.call('POST', 'models', { name: MODEL })).status).toBe(200);

    const pr = await hub.describe(MODEL, 'refs/pr/1');
    const second = await api.call('POST', 'models', { name: MODEL, revision: 'refs/pr/1' });
    expect(second.status).toBe(202);
    await expect
      .poll(
        async () => {
          const models = (await api.call('GET', 'models')).body.models as {
            commit: string;
            download: unknown;
          }[];
          return models.find((model) => model.commit === pr.commit && model.download === null) !== undefined;
        },
        { timeout: 30_000 },
      )
      .toBe(true);

    const onlyPr = await api.call(
      'DELETE',
      'models/corral-test/pulled?revision=refs/pr/1',
      undefined,
      adminKey,
    );
    expect(onlyPr.status).toBe(204);
    const left = (await api.call('GET', 'models', undefined, adminKey)).body.models;
    expect(left).toMatchObject([{ name: MODEL, revision: 'main', commit: main.commit }]);
    // Every blob main links is still there; the one only refs/pr/1 had is gone.
    for (const file of main.files) {
      expect(await stat(join(repo, 'snapshots', main.commit, file.path))).toBeTruthy();
    }
    const prOnly = pr.files.filter((file) => !main.files.some((other) => other.blobId === file.blobId));
    expect(prOnly.length).toBeGreaterThan(0);
    for (const file of prOnly) {
      await expect(stat(join(repo, 'blobs', file.sha256 ?? file.blobId))).rejects.toThrow();
    }

    // The last removal through the client, over HTTP, as `corral models rm` sends it.
    const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
    await new CorralClient({ baseUrl: address, apiKey: adminKey }).removeModel(MODEL);
    await expect(stat(repo)).rejects.toThrow();
    expect((await api.call('GET', 'models', undefined, adminKey)).body.models).toEqual([]);
    expect((await api.call('DELETE', 'models/corral-test/pulled', undefined, adminKey)).status).toBe(404);
  }, 90_000);
});
