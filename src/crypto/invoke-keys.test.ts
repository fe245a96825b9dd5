// Invoke keys: their shape, their id, and that only the whole key matches its stored hash.

import { describe, expect, it } from 'vitest';
import { withLastCharChanged } from '../../test/support/fixtures.js';
import { apiKeyId, generateApiKey } from './api-keys.js';
import { generateInvokeKey, invokeKeyId, invokeKeyMatches, looksLikeInvokeKey } from './invoke-keys.js';

describe('invoke keys', () => {
  it('are ik_<id>_<secret>, found by id and matched by hash only', () => {
    const { id, key, secretHash } = generateInvokeKey();
    expect(key).toMatch(/^ik_[a-z0-9]{12}_[A-Za-z0-9]{32}$/);
    expect(invokeKeyId(key)).toBe(id);
    expect(secretHash).not.toContain(key.slice(16));
    expect(invokeKeyMatches(key, secretHash)).toBe(true);
    expect(invokeKeyMatches(withLastCharChanged(key), secretHash)).toBe(false);
    expect(generateInvokeKey().key).not.toBe(key);
  });

  it('are told apart from API keys without a lookup', () => {
    const api = generateApiKey().key;
    const invoke = generateInvokeKey().key;
    expect(looksLikeInvokeKey(invoke)).toBe(true);
    expect(looksLikeInvokeKey(api)).toBe(false);
    expect(invokeKeyId(api)).toBeUndefined();
    // An invoke key given to the API is never mistaken for a generated API key's id.
    expect(apiKeyId(invoke)).toMatch(/^h/);
  });
});
