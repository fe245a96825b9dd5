// The webhooks as `corral serve` builds them, over a real store, the real webhook-secret service and a real
// receiver on port 0: the target policy comes from the configuration, and a delivery is signed with the secret the
// endpoint's owner reads.
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { storeTargets } from '../../test/support/stores.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { SecretBox } from '../crypto/secret-box.js';
import { verifyWebhook } from '../crypto/webhook-signature.js';
import { WebhookSecretService } from '../service/webhook-secret-service.js';
import type { Store } from '../store/store.js';
import { buildWebhooks } from './build-webhooks.js';

const quiet = { info: () => {}, warn: () => {} };

describe.each(storeTargets())('the webhooks built for corral serve on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let receiver: WebhookReceiver;

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    receiver = await startWebhookReceiver();
  });
  afterEach(async () => {
    await receiver.close();
    await dispose();
  });

  const secrets = () =>
    new WebhookSecretService({ store, secrets: new SecretBox({ key: randomBytes(32) }), clock: () => 1_000 });

  it('refuses a loopback target by default and allows it when the configuration does', async () => {
    const strict = buildWebhooks({
      config: { webhooks: { allowPrivate: false } },
      store,
      secrets: secrets(),
      logger: quiet,
    });
    expect(await strict.webhooks.checkTarget(`${receiver.base}/hook`)).toBe(
      '127.0.0.1 is a loopback address; this server does not post webhooks to such addresses',
    );
    expect(await strict.webhooks.checkTarget('gopher://example.com/')).toContain('http or https');
    const open = buildWebhooks({
      config: { webhooks: { allowPrivate: true } },
      store,
      secrets: secrets(),
      logger: quiet,
    });
    expect(await open.webhooks.checkTarget(`${receiver.base}/hook`)).toBeUndefined();
  });

  it("signs a delivery with the endpoint's secret, the one its owner reads", async () => {
    const service = secrets();
    const now = 1_700_000_000_000;
    const registry = new Registry();
    const built = buildWebhooks({
      config: { webhooks: { allowPrivate: true } },
      store,
      secrets: service,
      logger: quiet,
      clock: () => now,
      timers: new ManualTimers(now),
      registry,
    });
    const id = await built.webhooks.enqueue({
      ownerId: 'owner-a',
      endpointId: 'ep-1',
      jobId: 'job-1',
      url: `${receiver.base}/hook`,
      body: '{"id":"job-1","status":"COMPLETED","output":1}',
    });
    expect(await built.outbox.deliverDue()).toBe(1);
    const [got] = receiver.received;
    const secret = await service.secretOf('ep-1', 'owner-a');
    const headers = {
      id: String(got?.headers['webhook-id']),
      timestamp: String(got?.headers['webhook-timestamp']),
      signature: String(got?.headers['webhook-signature']),
    };
    expect(headers.id).toBe(id);
    expect(verifyWebhook(secret, headers, got?.body ?? '', now)).toBe(true);
    // Counted in /metrics.
    expect(await registry.metrics()).toContain(
      'corral_job_webhook_attempts_total{endpoint="ep-1",outcome="delivered"} 1',
    );
  });
});
