import { describe, expect, it } from 'vitest';
import { DeliveryKeys, withDeliveryKeys } from './delivery-keys.js';
import type { EndpointKeyGrant } from './invoke-key-service.js';

const keys = new DeliveryKeys({ secret: 'server-secret' });

describe("http jobs' delivery keys", () => {
  it('name the one endpoint each was made for', () => {
    expect(keys.endpointOf(keys.keyFor('ep-a'))).toBe('ep-a');
    expect(keys.endpointOf(keys.keyFor('ep_b_with_underscores'))).toBe('ep_b_with_underscores');
    expect(keys.keyFor('ep-a')).not.toBe(keys.keyFor('ep-b'));
  });

  it("are no one's when forged: another endpoint's id on A's mac, another secret's, a cut or a foreign key", () => {
    const ofA = keys.keyFor('ep-a');
    expect(keys.endpointOf(`${ofA.slice(0, -'ep-a'.length)}ep-b`)).toBeUndefined();
    expect(keys.endpointOf(new DeliveryKeys({ secret: 'another' }).keyFor('ep-a'))).toBeUndefined();
    expect(keys.endpointOf(ofA.slice(0, 20))).toBeUndefined();
    expect(keys.endpointOf(`${ofA.slice(0, 47)}`)).toBeUndefined();
    expect(keys.endpointOf('sk_abcdefghijkl_0123456789abcdefghijklmnopqrstuv')).toBeUndefined();
    expect(keys.endpointOf('cjd_')).toBeUndefined();
  });

  it("grant their own endpoint alone, of its owner, and none once it is gone; other keys are the store's", async () => {
    const owners = new Map([['ep-a', 'owner-a']]);
    const stored: EndpointKeyGrant = { ownerId: 'owner-b', admin: false };
    const grant = withDeliveryKeys(
      keys,
      async (key) => (key === 'sk-of-b' ? stored : undefined),
      async (endpointId) => owners.get(endpointId),
    );
    expect(await grant(keys.keyFor('ep-a'))).toEqual({
      ownerId: 'owner-a',
      admin: false,
      endpointId: 'ep-a',
      delivery: true,
    });
    expect(await grant(keys.keyFor('ep-gone'))).toBeUndefined();
    expect(await grant('sk-of-b')).toBe(stored);
    expect(await grant(new DeliveryKeys({ secret: 'another' }).keyFor('ep-a'))).toBeUndefined();
  });
});
