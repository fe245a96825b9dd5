/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the `whsec_` secret, and the `webhook-id`,
 * `webhook-timestamp` and `webhook-signature` headers of one delivery, `v1,` then the base64 HMAC-SHA256 of
 * `{id}.{timestamp}.{body}` keyed with the secret's base64-decoded bytes. Pure but for the secret's random bytes.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'whsec_';
/** 24 random bytes, as the spec's reference libraries generate (between 24 and 64 bytes). */
const SECRET_BYTES = 24;

/** A new endpoint webhook secret, `whsec_` and the base64 of random bytes. */
export function generateWebhookSecret(): string {
  return `${PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`; `timestamp` in seconds since the epoch. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of a delivery signed at `nowMs`. */
export function webhookHeaders(
  secret: string,
  id: string,
  nowMs: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secret, id, timestamp, body),
  };
}

/**
 * What a receiver does (docs/jobs.md shows it): true when one of the space-separated `v1,` signatures matches and
 * the timestamp is within `toleranceS` of `nowMs`.
 */
export function verifyWebhook(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  nowMs: number,
  toleranceS = 300,
): boolean {
  const timestamp = Number(headers.timestamp);
  if (!Number.isInteger(timestamp) || Math.abs(nowMs / 1000 - timestamp) > toleranceS) return false;
  const expected = Buffer.from(signWebhook(secret, headers.id, timestamp, body));
  return headers.signature.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
