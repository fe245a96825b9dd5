import { randomBytes } from 'node:crypto';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withLastCharChanged } from '../../test/support/fixtures.js';
import { apiKeyId, apiKeyMatches, generateApiKey } from './api-keys.js';
import { loadSecretKey, SecretBox } from './secret-box.js';

describe('API keys', () => {
  it('are sk_<id>_<secret>, found by id and matched by hash only', () => {
    const { id, key, secretHash } = generateApiKey();
    expect(key).toMatch(/^sk_[a-z0-9]{12}_[A-Za-z0-9]{32}$/);
    expect(apiKeyId(key)).toBe(id);
    expect(secretHash).not.toContain(key.slice(16));
    expect(apiKeyMatches(key, secretHash)).toBe(true);
    expect(apiKeyMatches(withLastCharChanged(key), secretHash)).toBe(false);
    expect(generateApiKey().key).not.toBe(key);
  });

  it('operator-chosen keys get a stable id derived from their hash', () => {
    expect(apiKeyId('my-long-operator-key')).toBe(apiKeyId('my-long-operator-key'));
    expect(apiKeyId('my-long-operator-key')).not.toBe(apiKeyId('another-operator-key'));
  });
});

describe('SecretBox', () => {
  it('round-trips, uses a fresh nonce each time, and detects tampering', () => {
    const box = new SecretBox({ key: randomBytes(32) });
    const sealed = box.seal('hunter2');
    expect(sealed).not.toContain('hunter2');
    expect(box.seal('hunter2')).not.toBe(sealed);
    expect(box.open(sealed)).toBe('hunter2');
    const parts = sealed.split(':');
    parts[3] = Buffer.from('hunter3').toString('base64');
    expect(() => box.open(parts.join(':'))).toThrow();
    expect(() => new SecretBox({ key: randomBytes(32) }).open(sealed)).toThrow();
  });

  it('creates the key file once with mode 0600, or takes CORRAL_SECRET_KEY', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'corral-key-')), 'secret.key');
    const first = loadSecretKey({ envValue: undefined, path });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadSecretKey({ envValue: undefined, path })).toEqual(first);
    const fromEnv = randomBytes(32);
    expect(loadSecretKey({ envValue: fromEnv.toString('base64'), path })).toEqual(fromEnv);
    expect(() => loadSecretKey({ envValue: 'c2hvcnQ=', path })).toThrow('32 random bytes');
  });
});
