// What a key allows at the gateway (InvokeKeyService.grant) over a real store: API keys, admin keys, invoke keys,
// and nothing for wrong or revoked ones.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleEndpoint, withLastCharChanged } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import { ApiKeyService } from './api-key-service.js';
import { InvokeKeyService } from './invoke-key-service.js';

describe.each(storeTargets())('InvokeKeyService.grant on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
  });
  afterEach(async () => {
    await dispose();
  });

  it("grants an API key its owner's endpoints, an admin key all, an invoke key its endpoint; nothing once revoked", async () => {
    const clock = () => 1_000;
    const apiKeys = new ApiKeyService({ store, clock });
    const invokeKeys = new InvokeKeyService({ store, clock });
    const endpoint = sampleEndpoint({ ownerId: 'owner-a' });
    await store.endpoints.create(endpoint, [], {
      at: 1,
      ownerId: 'owner-a',
      actor: 't',
      action: 'create',
      targetId: endpoint.id,
    });
    const user = await apiKeys.create({ ownerId: 'owner-a', name: 'u', admin: false });
    const admin = await apiKeys.create({ ownerId: 'default', name: 'a', admin: true });
    const principal = { ownerId: 'owner-a', keyId: user.id, admin: false };
    const invoke = await invokeKeys.create(principal, endpoint.id, '');

    expect(await invokeKeys.grant(user.key)).toEqual({ ownerId: 'owner-a', admin: false });
    expect(await invokeKeys.grant(admin.key)).toEqual({ ownerId: 'default', admin: true });
    expect(await invokeKeys.grant(invoke.key)).toEqual({
      ownerId: 'owner-a',
      admin: false,
      endpointId: endpoint.id,
    });
    expect(await invokeKeys.grant(withLastCharChanged(invoke.key))).toBeUndefined();
    expect(await invokeKeys.grant(withLastCharChanged(user.key))).toBeUndefined();
    expect(await invokeKeys.grant('ik_nonsense')).toBeUndefined();

    await invokeKeys.revoke(principal, endpoint.id, invoke.id);
    await apiKeys.revoke(user.id);
    expect(await invokeKeys.grant(invoke.key)).toBeUndefined();
    expect(await invokeKeys.grant(user.key)).toBeUndefined();
  });
});
