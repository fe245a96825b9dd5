/**
 * A shared bearer token (the metrics scrape token, the node agent's token) checked in constant time: both sides are
 * hashed to a fixed length first, so that neither the token's length nor where it first differs shows in the time
 * a check takes.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** Fixed-length form of a secret, so that tokens of any length compare in constant time. */
export function tokenDigest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** The token of an `Authorization: Bearer <token>` header; undefined when there is none. */
export function presentedBearer(authorization: string | undefined): string | undefined {
  const presented = authorization?.replace(/^Bearer\s+/i, '').trim();
  return presented === '' ? undefined : presented;
}

/** Whether the header presents the token whose digest is `expected` (tokenDigest), compared in constant time. */
export function bearerMatches(authorization: string | undefined, expected: Buffer): boolean {
  const presented = presentedBearer(authorization);
  return presented !== undefined && timingSafeEqual(tokenDigest(presented), expected);
}
