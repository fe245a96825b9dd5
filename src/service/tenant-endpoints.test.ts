import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import { ApiKeyService } from './api-key-service.js';
import { endpointsOfNonAdminOwners } from './tenant-endpoints.js';

describe('endpointsOfNonAdminOwners', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  beforeEach(async () => {
    const target = storeTargets()[0];
    if (!target) throw new Error('no store');
    ({ store, dispose } = await target.open());
  });
  afterEach(() => dispose());

  it('names the live endpoints of owners without an active admin key', async () => {
    const keys = new ApiKeyService({ store, clock: () => 1 });
    await keys.create({ ownerId: 'ops', name: 'a', admin: true });
    await keys.create({ ownerId: 'bob', name: 'b', admin: false });
    const revoked = await keys.create({ ownerId: 'eve', name: 'e', admin: true });
    await store.apiKeys.revoke(revoked.id, 2);
    const [ops, bob, eve, gone] = ['ops', 'bob', 'eve', 'bob'].map((ownerId) => sampleEndpoint({ ownerId }));
    for (const e of [ops, bob, eve, gone]) {
      if (e)
        await store.endpoints.create(e, [], {
          at: 1,
          ownerId: e.ownerId,
          actor: 't',
          action: 'c',
          targetId: e.id,
        });
    }
    if (gone) await deleteEndpoint(store, gone);
    expect(await endpointsOfNonAdminOwners(store)).toEqual([
      { id: bob?.id, ownerId: 'bob' },
      { id: eve?.id, ownerId: 'eve' },
    ]);
  });
});
