// The webhook outbox on its own timers and the system clock, across a restart: a delivery written by a process
// that died before sending it is found by the next process on the same database and retried until delivered.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeTargets } from '../../test/support/stores.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { generateWebhookSecret } from '../crypto/webhook-signature.js';
import { systemClock, systemTimers } from '../ports/clock.js';
import type { Store } from '../store/store.js';
import { WebhookOutbox } from './outbox.js';

describe.each(storeTargets())('the webhook outbox across a restart on $name', (target) => {
  let store: Store;
  let sibling: Store;
  let dispose: () => Promise<void>;
  let receiver: WebhookReceiver;

  beforeEach(async () => {
    const opened = await target.open();
    ({ store, dispose } = opened);
    sibling = opened.sibling();
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    await receiver.close();
    await dispose();
  });

  const outbox = (on: Store) =>
    new WebhookOutbox({
      deliveries: on.webhookDeliveries,
      secretOf: async () => generateWebhookSecret(),
      policy: { allowPrivate: true },
      clock: systemClock,
      timers: systemTimers,
      logger: { info: () => {}, warn: () => {} },
      retry: { maxAttempts: 3, firstDelayMs: 50, maxDelayMs: 50 },
    });

  it('delivers what the process before it left in the outbox, retrying a failure on its timers', async () => {
    const body = '{"id":"job-1","status":"FAILED"}';
    // The first process writes the delivery and dies before any sweep.
    await outbox(store).enqueue({
      ownerId: 'owner-a',
      endpointId: 'ep-1',
      jobId: 'job-1',
      url: `${receiver.base}/hook`,
      body,
    });
    receiver.answers.push(502);
    const next = outbox(sibling);
    next.start();
    const deadline = Date.now() + 10_000;
    while (receiver.received.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await next.stop();
    expect(receiver.received.map((r) => r.body)).toEqual([body, body]);
    expect(await store.webhookDeliveries.nextDueAt()).toBeUndefined();
  });

  it('sweeps at once when a delivery is enqueued while it runs', async () => {
    const running = outbox(store);
    running.start();
    const started = Date.now();
    await running.enqueue({
      ownerId: 'o',
      endpointId: 'e',
      jobId: 'j',
      url: `${receiver.base}/h`,
      body: '{}',
    });
    while (receiver.received.length < 1 && Date.now() - started < 10_000)
      await new Promise((r) => setTimeout(r, 5));
    await running.stop();
    expect(receiver.received).toHaveLength(1);
    // Well under the 5 s poll: the enqueue itself started the sweep.
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
