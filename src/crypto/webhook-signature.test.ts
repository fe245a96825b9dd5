import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, signWebhook, verifyWebhook, webhookHeaders } from './webhook-signature.js';

// The Standard Webhooks specification's published test vector (its reference libraries test the same values).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('Standard Webhooks signatures', () => {
  it("reproduces the specification's test vector", () => {
    expect(signWebhook(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('makes the three headers, the timestamp in seconds', () => {
    expect(webhookHeaders(VECTOR.secret, VECTOR.id, VECTOR.timestamp * 1000 + 999, VECTOR.body)).toEqual({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': String(VECTOR.timestamp),
      'webhook-signature': VECTOR.signature,
    });
  });

  it('verifies the vector among several signatures, and refuses a changed body, secret or an old timestamp', () => {
    const headers = { id: VECTOR.id, timestamp: String(VECTOR.timestamp), signature: VECTOR.signature };
    const now = VECTOR.timestamp * 1000;
    expect(verifyWebhook(VECTOR.secret, headers, VECTOR.body, now)).toBe(true);
    expect(
      verifyWebhook(
        VECTOR.secret,
        { ...headers, signature: `v1,bm9wZQ== ${VECTOR.signature}` },
        VECTOR.body,
        now,
      ),
    ).toBe(true);
    expect(verifyWebhook(VECTOR.secret, headers, '{"test": 2432232315}', now)).toBe(false);
    expect(verifyWebhook(generateWebhookSecret(), headers, VECTOR.body, now)).toBe(false);
    expect(verifyWebhook(VECTOR.secret, headers, VECTOR.body, now + 301_000)).toBe(false);
  });

  it('generates distinct whsec_ secrets of 24 bytes', () => {
    const a = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(24);
    expect(generateWebhookSecret()).not.toBe(a);
  });
});
