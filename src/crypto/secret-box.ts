/**
 * Secrets at rest: AES-256-GCM sealing of registry passwords, and the server's secret key it uses (from
 * CORRAL_SECRET_KEY or a 0600 file in the data directory).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const VERSION = 'v1';

/** Encrypts registry passwords at rest with AES-256-GCM under the server's secret key. */
export class SecretBox {
  readonly #key: Buffer;

  constructor(options: { key: Buffer }) {
    if (options.key.length !== 32) throw new Error('the secret key must be 32 bytes');
    this.#key = options.key;
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      VERSION,
      iv.toString('base64'),
      cipher.getAuthTag().toString('base64'),
      body.toString('base64'),
    ].join(':');
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}

/**
 * The key comes from CORRAL_SECRET_KEY (base64 of 32 bytes; several replicas must share it) or from
 * `secret.key` in the data directory, created with mode 0600 on first use.
 */
export function loadSecretKey(options: { envValue: string | undefined; path: string }): Buffer {
  if (options.envValue) {
    const key = Buffer.from(options.envValue, 'base64');
    if (key.length !== 32)
      throw new Error('CORRAL_SECRET_KEY must be the base64 encoding of 32 random bytes');
    return key;
  }
  if (existsSync(options.path)) {
    const key = Buffer.from(readFileSync(options.path, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new Error(`${options.path} does not hold a 32-byte base64 key`);
    return key;
  }
  const key = randomBytes(32);
  mkdirSync(dirname(options.path), { recursive: true });
  writeFileSync(options.path, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(options.path, 0o600);
  return key;
}
