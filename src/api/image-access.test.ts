/**
 * The API's side of private images: create and image-changing updates ask whether the owner may run the image
 * and answer 400 IMAGE_ACCESS_DENIED with the reason; other updates do not ask. The registry side is
 * src/registry/, the whole path test/e2e/private-images.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { storeTargets } from '../../test/support/stores.js';

const PRIVATE = '127.0.0.1:5000/team-a/model:1';

describe('private images at create and update', () => {
  let api: TestApi;
  let dispose: () => Promise<void>;
  const asked: { ownerId: string; authId: string; image: string; admin: boolean }[] = [];

  beforeAll(async () => {
    const [sqlite] = storeTargets();
    const opened = await sqlite?.open();
    if (!opened) throw new Error('no store');
    dispose = opened.dispose;
    api = await createTestApi(opened.store, {
      // Owner A's credentials pull PRIVATE; nobody else's do.
      imageAccess: async (request) => {
        asked.push(request);
        if (request.image !== PRIVATE || (request.ownerId === 'owner-a' && request.authId !== '')) {
          return { allowed: true };
        }
        return {
          allowed: false,
          cause: 'unauthorized',
          message: `image ${PRIVATE} is private: the registry refused an anonymous pull (HTTP 401)`,
        };
      },
    });
  });
  afterAll(async () => {
    await api.app.close();
    await dispose();
  });

  const saveCredentials = async (key: string) =>
    (await api.call('POST', 'repository/auth/save', { name: 'r', username: 'u', password: 'p' }, key)).body
      .id as string;

  it('the owner whose credentials pull it creates; another owner is refused with the image and the reason', async () => {
    const authA = await saveCredentials(api.keyA);
    asked.length = 0;
    const created = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ image: { image: PRIVATE, authId: authA } }),
    );
    expect(created.status).toBe(200);
    expect(asked).toEqual([{ ownerId: 'owner-a', authId: authA, image: PRIVATE, admin: false }]);

    const refused = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ image: { image: PRIVATE } }),
      api.keyB,
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      code: 400,
      reason: 'IMAGE_ACCESS_DENIED',
      message: `image ${PRIVATE} is private: the registry refused an anonymous pull (HTTP 401)`,
      metadata: { field: 'image.image', image: PRIVATE, cause: 'unauthorized' },
    });
    expect((await api.call('GET', 'endpoints', undefined, api.keyB)).body.total).toBe(0);
  });

  it('an update asks when the image or its credentials change, and only then', async () => {
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody(), api.keyB);
    const id = created.body.id as string;
    asked.length = 0;
    const scaled = await api.call(
      'POST',
      'endpoint/update',
      { id, workerConfig: { minNum: 0, maxNum: 3 } },
      api.keyB,
    );
    expect(scaled.status).toBe(200);
    expect(asked).toEqual([]);

    const switched = await api.call('POST', 'endpoint/update', { id, image: { image: PRIVATE } }, api.keyB);
    expect(switched.status).toBe(400);
    expect(switched.body.reason).toBe('IMAGE_ACCESS_DENIED');
    expect(asked).toHaveLength(1);
    const after = await api.call('GET', `endpoint?id=${id}`, undefined, api.keyB);
    expect(after.body.endpoint.image.image).toBe('registry.example.com/sdxl:1.0');

    const authB = await saveCredentials(api.keyB);
    asked.length = 0;
    await api.call('POST', 'endpoint/update', { id, image: { authId: authB } }, api.keyB);
    expect(asked).toEqual([
      { ownerId: 'owner-b', authId: authB, image: 'registry.example.com/sdxl:1.0', admin: false },
    ]);
  });

  it('a field error is answered as such before the registry is asked', async () => {
    asked.length = 0;
    const bad = await api.call(
      'POST',
      'endpoint/create',
      originalClientCreateBody({ image: { image: PRIVATE }, ports: [{ port: 2222 }] }),
      api.keyB,
    );
    expect(bad.body.reason).toBe('RESERVED_PORT');
    expect(asked).toEqual([]);
  });
});
