// The webhook tables on both stores: an endpoint's secret (kept by the first writer, replaced by a rotation, gone
// with its endpoint) and the outbox (claims that two replicas never share, a lapsed claim taken again, retries).
import { describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint } from '../../../test/support/fixtures.js';
import { freshStoreEachTest, type StoreTarget, storeTargets } from '../../../test/support/stores.js';
import type { Store } from '../store.js';
import type { WebhookDeliveryRecord } from './webhook-deliveries.js';

const delivery = (id: string, over: Partial<WebhookDeliveryRecord> = {}): WebhookDeliveryRecord => ({
  id,
  ownerId: 'owner-a',
  endpointId: 'ep-1',
  jobId: `job-${id}`,
  url: 'https://hooks.example.com/h',
  body: '{"status":"COMPLETED"}',
  attempts: 0,
  nextAt: 1_000,
  lastError: null,
  createdAt: 1_000,
  ...over,
});

describe.each(storeTargets())('webhook tables on $name', (target: StoreTarget) => {
  let store: Store;
  let sibling: Store;
  freshStoreEachTest(target, (opened) => {
    ({ store, sibling } = opened);
  });

  it('keeps the first secret written, replaces it on rotation, and forgets it with its endpoint', async () => {
    const endpoint = sampleEndpoint();
    await store.endpoints.create(endpoint, [], {
      at: 1,
      ownerId: endpoint.ownerId,
      actor: 'key-1',
      action: 'create',
      targetId: endpoint.id,
    });
    const first = { endpointId: endpoint.id, ownerId: endpoint.ownerId, sealed: 'sealed-1', createdAt: 1 };
    expect(await store.webhookSecrets.getOrInsert(first)).toEqual(first);
    expect(await sibling.webhookSecrets.getOrInsert({ ...first, sealed: 'sealed-2', createdAt: 2 })).toEqual(
      first,
    );
    await store.webhookSecrets.replace({ ...first, sealed: 'sealed-3', createdAt: 3 });
    expect(await store.webhookSecrets.get(endpoint.id)).toEqual({
      ...first,
      sealed: 'sealed-3',
      createdAt: 3,
    });
    await store.webhookSecrets.deleteOfGoneEndpoints();
    expect(await store.webhookSecrets.get(endpoint.id)).toBeDefined();
    await deleteEndpoint(store, endpoint);
    await store.webhookSecrets.deleteOfGoneEndpoints();
    expect(await store.webhookSecrets.get(endpoint.id)).toBeUndefined();
  });

  it('hands a due delivery to one claimer only, and again once its claim lapses', async () => {
    await store.webhookDeliveries.insert(delivery('d1'));
    await store.webhookDeliveries.insert(delivery('d1', { url: 'https://other.example/' }));
    await store.webhookDeliveries.insert(delivery('d2', { nextAt: 5_000 }));
    expect(await store.webhookDeliveries.nextDueAt()).toBe(1_000);

    const [a, b] = await Promise.all([
      store.webhookDeliveries.claimDue(1_000, 31_000, 10),
      sibling.webhookDeliveries.claimDue(1_000, 31_000, 10),
    ]);
    expect([...a, ...b].map((d) => [d.id, d.url])).toEqual([['d1', 'https://hooks.example.com/h']]);
    // d1 is still held at 30 999; d2 has come due meanwhile.
    expect((await store.webhookDeliveries.claimDue(30_999, 60_000, 10)).map((d) => d.id)).toEqual(['d2']);
    // The lapsed claim on d1 lets it be taken again (its replica died mid-attempt).
    expect((await sibling.webhookDeliveries.claimDue(31_000, 61_000, 10)).map((d) => d.id)).toEqual(['d1']);
  });

  it('reschedules a failed attempt with its error, releasing the claim, and deletes a delivered one', async () => {
    await store.webhookDeliveries.insert(delivery('d1'));
    await store.webhookDeliveries.claimDue(1_000, 31_000, 10);
    await store.webhookDeliveries.reschedule('d1', 1, 3_000, 'answered 503');
    expect(await store.webhookDeliveries.get('d1')).toMatchObject({
      attempts: 1,
      nextAt: 3_000,
      lastError: 'answered 503',
    });
    expect(await store.webhookDeliveries.claimDue(2_999, 40_000, 10)).toEqual([]);
    expect((await store.webhookDeliveries.claimDue(3_000, 40_000, 10)).map((d) => d.attempts)).toEqual([1]);
    await store.webhookDeliveries.delete('d1');
    expect(await store.webhookDeliveries.get('d1')).toBeUndefined();
    expect(await store.webhookDeliveries.nextDueAt()).toBeUndefined();
  });
});
