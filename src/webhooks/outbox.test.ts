// The webhook outbox against a real HTTP receiver on port 0 and a real store, on a clock moved by hand: signed posts
// a Standard Webhooks verifier accepts, retries with backoff, giving up, refusing a private target, and connecting
// to the checked address (not a fresh look-up). outbox.int.test.ts runs it on its own timers across a restart.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { generateWebhookSecret, verifyWebhook } from '../crypto/webhook-signature.js';
import type { Store } from '../store/store.js';
import { WebhookOutbox, type WebhookOutboxOptions } from './outbox.js';
import type { LookupAll } from './target-guard.js';

const quiet = { info: () => {}, warn: () => {} };

describe.each(storeTargets())('the webhook outbox on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let receiver: WebhookReceiver;
  let base: string;
  let received: WebhookReceiver['received'];
  let now: number;
  const secret = generateWebhookSecret();

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    receiver = await startWebhookReceiver();
    ({ base, received } = receiver);
    now = 1_700_000_000_000;
  });
  afterEach(async () => {
    await receiver.close();
    await dispose();
  });

  const outbox = (over: Partial<WebhookOutboxOptions> = {}) =>
    new WebhookOutbox({
      deliveries: store.webhookDeliveries,
      secretOf: async () => secret,
      policy: { allowPrivate: true },
      clock: () => now,
      // deliverDue() is called by hand here: no timer fires.
      timers: new ManualTimers(),
      logger: quiet,
      retry: { maxAttempts: 3, firstDelayMs: 1_000, maxDelayMs: 10_000 },
      ...over,
    });
  const job = {
    ownerId: 'owner-a',
    endpointId: 'ep-1',
    jobId: 'job-1',
    body: '{"id":"job-1","status":"COMPLETED"}',
  };

  it('posts the status body signed so that a Standard Webhooks verifier accepts it, once', async () => {
    const sender = outbox();
    const id = await sender.enqueue({ ...job, url: `${base}/hook?x=1` });
    expect(await sender.deliverDue()).toBe(1);
    expect(received).toHaveLength(1);
    const [got] = received;
    expect(got?.url).toBe('/hook?x=1');
    expect(got?.body).toBe(job.body);
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.headers['webhook-id']).toBe(id);
    expect(got?.headers['webhook-timestamp']).toBe(String(Math.floor(now / 1000)));
    const headers = {
      id: String(got?.headers['webhook-id']),
      timestamp: String(got?.headers['webhook-timestamp']),
      signature: String(got?.headers['webhook-signature']),
    };
    expect(verifyWebhook(secret, headers, got?.body ?? '', now)).toBe(true);
    expect(await sender.deliverDue()).toBe(0);
    expect(await store.webhookDeliveries.get(id)).toBeUndefined();
  });

  it('retries a failed delivery with backoff and the same id, and stops at the first 2xx', async () => {
    receiver.answers.push(500, 503);
    const outcomes: string[] = [];
    const sender = outbox({ onOutcome: (endpointId, outcome) => outcomes.push(`${endpointId} ${outcome}`) });
    const id = await sender.enqueue({ ...job, url: `${base}/hook` });
    expect(await sender.deliverDue()).toBe(1);
    expect(await store.webhookDeliveries.get(id)).toMatchObject({
      attempts: 1,
      nextAt: now + 1_000,
      lastError: 'answered 500',
    });
    now += 999;
    expect(await sender.deliverDue()).toBe(0);
    now += 1;
    expect(await sender.deliverDue()).toBe(1);
    expect(await store.webhookDeliveries.get(id)).toMatchObject({ attempts: 2, nextAt: now + 2_000 });
    now += 2_000;
    expect(await sender.deliverDue()).toBe(1);
    expect(await store.webhookDeliveries.get(id)).toBeUndefined();
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([id, id, id]);
    expect(outcomes).toEqual(['ep-1 retrying', 'ep-1 retrying', 'ep-1 delivered']);
    expect(received.map((r) => r.headers['webhook-timestamp'])).toEqual(
      [now - 3_000, now - 2_000, now].map((t) => String(Math.floor(t / 1000))),
    );
  });

  it('gives up after the last attempt; a refused connection counts as a failure', async () => {
    receiver.answers.push(500, 500, 500, 500);
    const outcomes: string[] = [];
    const sender = outbox({ onOutcome: (_endpointId, outcome) => outcomes.push(outcome) });
    const id = await sender.enqueue({ ...job, url: `${base}/hook` });
    for (const wait of [0, 1_000, 2_000]) {
      now += wait;
      expect(await sender.deliverDue()).toBe(1);
    }
    expect(received).toHaveLength(3);
    expect(await store.webhookDeliveries.get(id)).toBeUndefined();
    expect(outcomes).toEqual(['retrying', 'retrying', 'given_up']);

    const closed = await sender.enqueue({ ...job, url: 'http://127.0.0.1:1/hook' });
    await sender.deliverDue();
    expect((await store.webhookDeliveries.get(closed))?.lastError).toBe('ECONNREFUSED');
  });

  it('refuses a private target at delivery time when the operator does not allow them, posting nothing', async () => {
    const outcomes: string[] = [];
    const sender = outbox({
      policy: { allowPrivate: false },
      onOutcome: (_e, outcome) => outcomes.push(outcome),
    });
    const id = await sender.enqueue({ ...job, url: `${base}/hook` });
    expect(await sender.deliverDue()).toBe(1);
    expect(received).toEqual([]);
    expect(outcomes).toEqual(['refused']);
    expect(await store.webhookDeliveries.get(id)).toBeUndefined();
  });

  it('connects to the address it checked, not to what a second look-up would give', async () => {
    // `.invalid` never resolves (RFC 6761): the post reaches the receiver only through the checked address.
    const lookups: string[] = [];
    const lookupAll: LookupAll = async (host) => {
      lookups.push(host);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const port = new URL(base).port;
    const sender = outbox({ lookupAll });
    await sender.enqueue({ ...job, url: `http://hooks.corral.invalid:${port}/hook` });
    await sender.deliverDue();
    expect(lookups).toEqual(['hooks.corral.invalid']);
    expect(received.map((r) => r.headers.host)).toEqual([`hooks.corral.invalid:${port}`]);
  });
});
