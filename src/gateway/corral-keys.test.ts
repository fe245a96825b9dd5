import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../crypto/api-keys.js';
import { generateInvokeKey } from '../crypto/invoke-keys.js';
import { DeliveryKeys } from '../service/delivery-keys.js';
import { holdsCorralKey } from './corral-keys.js';

describe('holdsCorralKey', () => {
  const sk = generateApiKey().key;
  const ik = generateInvokeKey().key;
  const cjd = new DeliveryKeys({ secret: 'a-server-secret' }).keyFor('ep-0123456789');

  it.each([
    ['a generated API key, raw', sk],
    ['a generated invoke key, raw', ik],
    ['Bearer and a key', `Bearer ${sk}`],
    ['another case', `BEARER ${sk.toUpperCase()}`],
    ['a key first of two credentials', `Bearer ${sk}, Bearer x`],
    ['a key last of two credentials', `Bearer x, Bearer ${ik}`],
    ['a key in a parameter', `Token key=${ik}`],
    ['an http job delivery key', `Bearer ${cjd}`],
    ['a key with text glued on', `Bearer x${sk}y`],
  ])('finds %s', (_, value) => {
    expect(holdsCorralKey(value)).toBe(true);
  });

  it.each([
    ['no value', ''],
    ['a token of its own', 'Bearer app-token'],
    ['a Stripe-like key', 'Bearer sk_live_51H8abcdefghijklmnop'],
    ['an OpenAI-like key', `Bearer sk-${'a'.repeat(48)}`],
    ['a key one character short', `Bearer ${sk.slice(0, -1)}`],
    ['Basic credentials', 'Basic dXNlcjpwYXNz'],
  ])('passes %s', (_, value) => {
    expect(holdsCorralKey(value)).toBe(false);
  });
});
