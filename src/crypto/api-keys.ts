/**
 * API keys look like `sk_<id>_<secret>`: the id (public, shown in listings) finds the stored record and
 * the whole key's SHA-256 is compared in constant time. Keys are random enough that a slow hash adds nothing.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const KEY_PATTERN = /^sk_([a-z0-9]{12})_([A-Za-z0-9]{32})$/;

export interface NewApiKey {
  id: string;
  key: string;
  secretHash: string;
}

export function generateApiKey(): NewApiKey {
  const id = randomString(12, ALPHABET.slice(0, 26) + ALPHABET.slice(52));
  const key = `sk_${id}_${randomString(32, ALPHABET)}`;
  return { id, key, secretHash: hashApiKey(key) };
}

/**
 * The record id of a key: the embedded id of a generated key, or one derived from the hash of a key
 * chosen by the operator (CORRAL_API_KEY may be any long random string).
 */
export function apiKeyId(key: string): string {
  return KEY_PATTERN.exec(key)?.[1] ?? `h${hashApiKey(key).slice(0, 11)}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function apiKeyMatches(key: string, storedHash: string): boolean {
  const actual = Buffer.from(hashApiKey(key), 'hex');
  const expected = Buffer.from(storedHash, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export function randomString(length: number, alphabet: string): string {
  // Rejection sampling keeps every character equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
    }
  }
  return out;
}
