import { describe, expect, it, vi } from 'vitest';
import { sampleJob } from '../../test/support/fixtures.js';
import type { Job } from '../domain/job.js';
import type { Store } from '../store/store.js';
import { sendFinishedToWebhooks } from './finished-webhooks.js';
import { JobEvents } from './job-events.js';
import { recycleOnRequest } from './worker-recycle.js';

const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };

/** Lets the promise chains started by a listener run to their end (no time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await Promise.resolve();
}

function finished(over: Partial<Job> = {}): Job {
  return {
    ...sampleJob('j1', 'e1', { ownerId: 'owner-a', webhook: 'https://hooks.example/x' }),
    status: 'COMPLETED',
    output: '{"ok":true}',
    error: null,
    workerId: 'w1',
    attempts: 1,
    startedAt: 1_000,
    completedAt: 3_000,
    ...over,
  };
}

describe('a finished job and its webhook', () => {
  it('queues its status for its webhook, the message id naming this finish', async () => {
    const events = new JobEvents();
    const enqueue = vi.fn(async () => 'msg');
    sendFinishedToWebhooks({
      events,
      webhooks: { checkTarget: async () => undefined, enqueue },
      clock: () => 5_000,
      logger,
    });
    events.emit('finished', { job: finished() });
    events.emit('finished', { job: finished({ webhook: null }) });
    expect(enqueue).toHaveBeenCalledTimes(1);
    expect(enqueue).toHaveBeenCalledWith(
      expect.objectContaining({
        ownerId: 'owner-a',
        endpointId: 'e1',
        jobId: 'j1',
        url: 'https://hooks.example/x',
        id: 'msg_j1_3000',
      }),
    );
    const [request] = enqueue.mock.calls[0] as unknown as [{ body: string }];
    expect(JSON.parse(request.body)).toMatchObject({ status: 'COMPLETED', output: { ok: true } });
  });

  it('logs a delivery it could not queue', async () => {
    const events = new JobEvents();
    const warn = vi.fn();
    const enqueue = async () => {
      throw new Error('outbox full');
    };
    sendFinishedToWebhooks({
      events,
      webhooks: { checkTarget: async () => undefined, enqueue },
      clock: () => 0,
      logger: { ...logger, warn },
    });
    events.emit('finished', { job: finished() });
    await settle();
    expect(warn).toHaveBeenCalledWith({ jobId: 'j1', err: 'outbox full' }, 'job webhook not queued');
  });
});

describe('a queue worker to replace', () => {
  function fakeStore(ownerOf: string | undefined) {
    const requestDrain = vi.fn(async () => undefined);
    const store = {
      endpoints: { getMany: async () => (ownerOf ? [{ endpoint: { ownerId: ownerOf } }] : []) },
      workers: { requestDrain },
    } as unknown as Pick<Store, 'endpoints' | 'workers'>;
    return { store, requestDrain };
  }

  it("is drained as its owner's drain would be, audited as corral-jobs, then the controller is poked", async () => {
    const events = new JobEvents();
    const { store, requestDrain } = fakeStore('owner-a');
    const poke = vi.fn();
    recycleOnRequest({ events, store, clock: () => 7_000, trigger: { poke }, logger });
    events.emit('recycle', { endpointId: 'e1', workerId: 'w1', reason: 'stopPod' });
    await settle();
    expect(requestDrain).toHaveBeenCalledWith('owner-a', 'w1', true, {
      at: 7_000,
      ownerId: 'owner-a',
      actor: 'corral-jobs',
      action: 'worker.recycle',
      targetId: 'w1',
      detail: { reason: 'stopPod' },
    });
    expect(poke).toHaveBeenCalledTimes(1);
  });

  it('of an endpoint gone is left alone', async () => {
    const events = new JobEvents();
    const { store, requestDrain } = fakeStore(undefined);
    recycleOnRequest({ events, store, clock: () => 0, logger });
    events.emit('recycle', { endpointId: 'gone', workerId: 'w1', reason: 'stopPod' });
    await settle();
    expect(requestDrain).not.toHaveBeenCalled();
  });
});
