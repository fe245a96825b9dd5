/**
 * Invoke keys look like `ik_<id>_<secret>`: like API keys (api-keys.ts) but with their own prefix, so that the API
 * and the gateway tell them apart before any lookup; the id finds the stored record and the whole key's SHA-256 is
 * compared in constant time.
 */
import { apiKeyMatches, hashApiKey, randomString } from './api-keys.js';

const LOWER_AND_DIGITS = 'abcdefghijklmnopqrstuvwxyz0123456789';
const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const INVOKE_KEY_PATTERN = /^ik_([a-z0-9]{12})_([A-Za-z0-9]{32})$/;

export interface NewInvokeKey {
  id: string;
  key: string;
  secretHash: string;
}

export function generateInvokeKey(): NewInvokeKey {
  const id = randomString(12, LOWER_AND_DIGITS);
  const key = `ik_${id}_${randomString(32, ALPHANUMERIC)}`;
  return { id, key, secretHash: hashApiKey(key) };
}

/** The record id of an invoke key, or undefined when `key` is not shaped like one. */
export function invokeKeyId(key: string): string | undefined {
  return INVOKE_KEY_PATTERN.exec(key)?.[1];
}

/** Whether `key` is shaped like an invoke key (the API refuses these with a message saying what they are for). */
export function looksLikeInvokeKey(key: string): boolean {
  return key.startsWith('ik_');
}

export function invokeKeyMatches(key: string, storedHash: string): boolean {
  return apiKeyMatches(key, storedHash);
}
