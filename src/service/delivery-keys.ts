/**
 * The credentials of `http` jobs' deliveries through the gateway (issue 29): one per endpoint, `cjd_{mac}_{endpointId}`
 * where the mac is an HMAC of the endpoint id under a server secret that the store keeps (shared by replicas), so
 * that any replica's gateway verifies any replica's delivery without a lookup of the key. A delivery key grants
 * what an invoke key of its endpoint grants: that one endpoint's URL, nothing of any other endpoint's. No worker
 * ever sees one (the gateway takes the Authorization header off; a public endpoint's deliveries carry none).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { EndpointKeyGrant } from './invoke-key-service.js';

const PREFIX = 'cjd_';
/** A SHA-256 HMAC in base64url: 32 bytes, 43 characters. */
const MAC_CHARS = 43;

export class DeliveryKeys {
  readonly #secret: Buffer;

  constructor(options: { secret: string }) {
    this.#secret = Buffer.from(options.secret, 'utf8');
  }

  /** The key of the deliveries to this endpoint. */
  keyFor(endpointId: string): string {
    return `${PREFIX}${this.#mac(endpointId).toString('base64url')}_${endpointId}`;
  }

  /** The endpoint a delivery key was made for; undefined for any other key, or one whose mac does not match. */
  endpointOf(key: string): string | undefined {
    if (!key.startsWith(PREFIX) || key.charAt(PREFIX.length + MAC_CHARS) !== '_') return undefined;
    const endpointId = key.slice(PREFIX.length + MAC_CHARS + 1);
    const given = Buffer.from(key.slice(PREFIX.length, PREFIX.length + MAC_CHARS), 'base64url');
    const expected = this.#mac(endpointId);
    return endpointId !== '' && given.length === expected.length && timingSafeEqual(given, expected)
      ? endpointId
      : undefined;
  }

  #mac(endpointId: string): Buffer {
    return createHmac('sha256', this.#secret).update(endpointId).digest();
  }
}

/**
 * The callers' key check with delivery keys: a delivery key's grant is its one endpoint (of that endpoint's
 * owner, as an invoke key's is, marked `delivery`; none once the endpoint is gone); any other key is `grant`'s to
 * answer.
 */
export function withDeliveryKeys(
  deliveryKeys: DeliveryKeys,
  grant: (key: string) => Promise<EndpointKeyGrant | undefined>,
  ownerOf: (endpointId: string) => Promise<string | undefined>,
): (key: string) => Promise<EndpointKeyGrant | undefined> {
  return async (key) => {
    const endpointId = deliveryKeys.endpointOf(key);
    if (endpointId === undefined) return grant(key);
    const ownerId = await ownerOf(endpointId);
    return ownerId === undefined ? undefined : { ownerId, admin: false, endpointId, delivery: true };
  };
}
