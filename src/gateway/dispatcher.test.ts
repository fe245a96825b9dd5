import { getEventListeners } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { GATEWAY_ERROR_CATALOGUE, GatewayError } from '../errors/gateway-catalogue.js';
import { type DispatcherSettings, EndpointDispatcher, type Lease } from './dispatcher.js';
import { AFFINE_WORKER_LEFT } from './queue-refusals.js';

/** Lets every settled promise's callbacks run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

const addr = (port: number) => ({ host: '127.0.0.1', port });
const worker = (id: string, port = 9000) => ({ id, address: addr(port) });

function setup(settings: Partial<DispatcherSettings> = {}) {
  const timers = new ManualTimers(1_000_000);
  let queued = 0;
  const dispatcher = new EndpointDispatcher({
    maxConcurrent: 1,
    maxQueueLength: 10,
    queueTimeoutMs: 30_000,
    ...settings,
    clock: () => timers.now,
    timers,
    onQueued: () => {
      queued += 1;
    },
  });
  return { dispatcher, timers, queued: () => queued };
}

/** An acquire() whose outcome can be read synchronously after a flush. */
function track(promise: Promise<Lease>) {
  const state: { lease?: Lease; error?: GatewayError; settled: boolean } = { settled: false };
  promise.then(
    (lease) => {
      state.lease = lease;
      state.settled = true;
    },
    (error: GatewayError) => {
      state.error = error;
      state.settled = true;
    },
  );
  return state;
}

const inFlight = (dispatcher: EndpointDispatcher) =>
  Object.fromEntries(dispatcher.stats().workers.map((w) => [w.id, w.inFlight]));

describe('EndpointDispatcher', () => {
  it("caps a worker at this gateway's share of its slots when the routing view gives one", async () => {
    const { dispatcher } = setup({ maxConcurrent: 4 });
    dispatcher.setWorkers([
      { ...worker('a', 9001), slots: 1 },
      { ...worker('b', 9002), slots: 0 },
    ]);
    const first = dispatcher.tryAcquire();
    expect(first?.workerId).toBe('a');
    // a holds its one slot here, b has none here: the next request waits, though each has 4 slots in all.
    expect(dispatcher.tryAcquire()).toBeUndefined();
    const waiting = track(dispatcher.acquire());
    await flush();
    expect(waiting.settled).toBe(false);
    // The share grows (another replica left): the queued request is served at once.
    dispatcher.setWorkers([
      { ...worker('a', 9001), slots: 1 },
      { ...worker('b', 9002), slots: 2 },
    ]);
    await flush();
    expect(waiting.lease?.workerId).toBe('b');
    // It shrinks below what b holds: b keeps its lease and gets no new one until below the new share.
    dispatcher.setWorkers([
      { ...worker('a', 9001), slots: 1 },
      { ...worker('b', 9002), slots: 0 },
    ]);
    expect(dispatcher.tryAcquire()).toBeUndefined();
    expect(inFlight(dispatcher)).toEqual({ a: 1, b: 1 });
    waiting.lease?.release();
    first?.release();
    // Without a share, a worker takes maxConcurrent.
    dispatcher.setWorkers([worker('a', 9001)]);
    expect([1, 2, 3, 4].map(() => dispatcher.tryAcquire()?.workerId)).toEqual(['a', 'a', 'a', 'a']);
    expect(dispatcher.tryAcquire()).toBeUndefined();
  });

  it('grants a slot at once on the least-loaded worker, ties to the most recently active', async () => {
    const { dispatcher, queued } = setup({ maxConcurrent: 2 });
    dispatcher.setWorkers([worker('a', 9001), worker('b', 9002)]);
    const first = await dispatcher.acquire();
    expect(first).toMatchObject({ workerId: 'a', address: addr(9001), queuedMs: 0 });
    const second = await dispatcher.acquire();
    expect(second.workerId).toBe('b');
    // 1 and 1: b was active last.
    const third = await dispatcher.acquire();
    expect(third.workerId).toBe('b');
    expect((await dispatcher.acquire()).workerId).toBe('a');
    expect(inFlight(dispatcher)).toEqual({ a: 2, b: 2 });
    expect(queued()).toBe(0);

    second.release();
    third.release();
    // a: 2, b: 0 -> b even though a was active more recently.
    const fifth = await dispatcher.acquire();
    expect(fifth.workerId).toBe('b');
  });

  it('keeps light sequential traffic on one worker so that the others can go idle', async () => {
    const { dispatcher } = setup({ maxConcurrent: 4 });
    dispatcher.setWorkers([worker('a'), worker('b'), worker('c')]);
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const lease = await dispatcher.acquire();
      seen.add(lease.workerId);
      lease.release();
    }
    expect(seen.size).toBe(1);
  });

  it('queues when every slot is taken and serves in FIFO order', async () => {
    const { dispatcher, timers, queued } = setup();
    dispatcher.setWorkers([worker('a')]);
    const held = await dispatcher.acquire();
    const waiting = [0, 1, 2].map(() => {
      timers.advance(100);
      return track(dispatcher.acquire());
    });
    expect(queued()).toBe(3);
    expect(dispatcher.stats()).toMatchObject({ queueLength: 3, oldestEnqueuedAt: 1_000_100 });

    timers.advance(1_000);
    held.release();
    await flush();
    expect(waiting.map((w) => w.settled)).toEqual([true, false, false]);
    expect(waiting[0]?.lease?.queuedMs).toBe(1_200);
    expect(dispatcher.stats()).toMatchObject({ queueLength: 2, oldestEnqueuedAt: 1_000_200 });

    waiting[0]?.lease?.release();
    await flush();
    expect(waiting.map((w) => w.settled)).toEqual([true, true, false]);
    waiting[1]?.lease?.release();
    await flush();
    expect(waiting[2]?.lease?.workerId).toBe('a');
    expect(waiting[2]?.lease?.queuedMs).toBe(1_000);
    expect(dispatcher.stats()).toMatchObject({ queueLength: 0, oldestEnqueuedAt: null });
  });

  it('rejects with 429 QUEUE_FULL and a Retry-After estimate when the queue is at its limit', async () => {
    // No worker: Retry-After is the time until the head of the queue has left it for sure.
    const idle = setup({ maxQueueLength: 2, queueTimeoutMs: 30_000 });
    track(idle.dispatcher.acquire());
    idle.timers.advance(10_000);
    track(idle.dispatcher.acquire());
    const error = await idle.dispatcher.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ code: 'QUEUE_FULL', status: 429, retryAfterSeconds: 20 });
    expect((error as GatewayError).toBody()).toEqual({
      code: 429,
      reason: 'QUEUE_FULL',
      message: expect.any(String),
      metadata: { queueLength: 2, maxQueueLength: 2, retryAfterSeconds: 20 },
    });
    expect(idle.queued()).toBe(2);

    // With workers: queue length x mean lease time / slots.
    const busy = setup({ maxConcurrent: 1, maxQueueLength: 3 });
    busy.dispatcher.setWorkers([worker('a')]);
    for (let i = 0; i < 2; i++) {
      const lease = await busy.dispatcher.acquire();
      busy.timers.advance(4_000);
      lease.release();
    }
    await busy.dispatcher.acquire();
    for (let i = 0; i < 3; i++) track(busy.dispatcher.acquire());
    await expect(busy.dispatcher.acquire()).rejects.toMatchObject({
      code: 'QUEUE_FULL',
      retryAfterSeconds: 12,
    });

    // Never below 1 s, and with maxQueueLength 0 there is no queue at all.
    const none = setup({ maxQueueLength: 0 });
    await expect(none.dispatcher.acquire()).rejects.toMatchObject({
      code: 'QUEUE_FULL',
      retryAfterSeconds: 1,
    });
    expect(none.queued()).toBe(0);
  });

  it('rejects with 504 QUEUE_TIMEOUT after queueTimeoutMs and frees its place', async () => {
    const { dispatcher, timers } = setup({ queueTimeoutMs: 5_000 });
    dispatcher.setWorkers([worker('a')]);
    const held = await dispatcher.acquire();
    const first = track(dispatcher.acquire());
    timers.advance(1_000);
    const second = track(dispatcher.acquire());
    timers.advance(3_999);
    await flush();
    expect(first.settled).toBe(false);
    timers.advance(1);
    await flush();
    expect(first.error).toMatchObject({ code: 'QUEUE_TIMEOUT', status: 504 });
    expect(first.error?.metadata).toMatchObject({ queuedMs: 5_000 });
    expect(dispatcher.stats().queueLength).toBe(1);

    held.release();
    await flush();
    expect(second.lease).toMatchObject({ workerId: 'a', queuedMs: 4_000 });
    expect(timers.count).toBe(0);
  });

  it('an abort while queued leaves the queue at once with CLIENT_GONE', async () => {
    const { dispatcher } = setup();
    dispatcher.setWorkers([worker('a')]);
    const held = await dispatcher.acquire();
    const controller = new AbortController();
    const gone = track(dispatcher.acquire({ signal: controller.signal }));
    const next = track(dispatcher.acquire());
    expect(dispatcher.stats().queueLength).toBe(2);

    controller.abort();
    expect(dispatcher.stats().queueLength).toBe(1);
    await flush();
    expect(gone.error).toMatchObject({ code: 'CLIENT_GONE', status: 499, name: 'AbortError' });

    held.release();
    await flush();
    expect(next.lease?.workerId).toBe('a');
    expect(getEventListeners(controller.signal, 'abort')).toEqual([]);
  });

  it('an already aborted signal takes no slot; an abort after the grant changes nothing', async () => {
    const { dispatcher } = setup();
    dispatcher.setWorkers([worker('a')]);
    await expect(dispatcher.acquire({ signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'CLIENT_GONE',
    });
    expect(inFlight(dispatcher)).toEqual({ a: 0 });

    const controller = new AbortController();
    const lease = await dispatcher.acquire({ signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toEqual([]);
    controller.abort();
    expect(inFlight(dispatcher)).toEqual({ a: 1 });
    lease.release();
    expect(inFlight(dispatcher)).toEqual({ a: 0 });
  });

  it("whenIdle resolves when the worker's last lease is released, and at once for an idle or unknown worker", async () => {
    const { dispatcher } = setup({ maxConcurrent: 2 });
    dispatcher.setWorkers([worker('a')]);
    await dispatcher.whenIdle('a');
    await dispatcher.whenIdle('nobody');
    const first = await dispatcher.acquire();
    const second = await dispatcher.acquire();
    let idle = false;
    void dispatcher.whenIdle('a').then(() => {
      idle = true;
    });
    first.release();
    await flush();
    expect(idle).toBe(false);
    second.release();
    await flush();
    expect(idle).toBe(true);
  });

  it('a removed worker finishes its leases but gets no new requests', async () => {
    const { dispatcher } = setup();
    dispatcher.setWorkers([worker('a'), worker('b')]);
    const onA = await dispatcher.acquire();
    expect(onA.workerId).toBe('a');
    dispatcher.setWorkers([worker('b')]);
    expect(dispatcher.stats().workers).toEqual([
      { id: 'a', inFlight: 1, lastBusyAt: expect.any(Number), routable: false, granted: 1 },
      { id: 'b', inFlight: 0, lastBusyAt: expect.any(Number), routable: true, granted: 0 },
    ]);

    const onB = await dispatcher.acquire();
    expect(onB.workerId).toBe('b');
    const waiting = track(dispatcher.acquire());
    onA.release();
    await flush();
    // a's free slot is not used: a is draining, and now forgotten.
    expect(waiting.settled).toBe(false);
    expect(dispatcher.stats().workers.map((w) => w.id)).toEqual(['b']);

    onB.release();
    await flush();
    expect(waiting.lease?.workerId).toBe('b');
  });

  it('a worker listed again while draining is routable again with its count', async () => {
    const { dispatcher } = setup({ maxConcurrent: 2 });
    dispatcher.setWorkers([worker('a', 9001)]);
    const first = await dispatcher.acquire();
    dispatcher.setWorkers([]);
    dispatcher.setWorkers([worker('a', 9002)]);
    const second = await dispatcher.acquire();
    expect(second.address).toEqual(addr(9002));
    expect(first.address).toEqual(addr(9001));
    const third = track(dispatcher.acquire());
    await flush();
    expect(third.settled).toBe(false);
    expect(inFlight(dispatcher)).toEqual({ a: 2 });
  });

  it('an added worker serves the queue at once, in order', async () => {
    const { dispatcher, timers, queued } = setup({ maxConcurrent: 2 });
    const waiting = [0, 1, 2].map(() => {
      timers.advance(10);
      return track(dispatcher.acquire());
    });
    expect(queued()).toBe(3);
    timers.advance(500);
    dispatcher.setWorkers([worker('a')]);
    await flush();
    expect(waiting.map((w) => w.lease?.workerId)).toEqual(['a', 'a', undefined]);
    expect(waiting.map((w) => w.lease?.queuedMs)).toEqual([520, 510, undefined]);
    dispatcher.setWorkers([worker('a'), worker('b')]);
    await flush();
    expect(waiting[2]?.lease?.workerId).toBe('b');
  });

  it('release is idempotent', async () => {
    const { dispatcher } = setup();
    dispatcher.setWorkers([worker('a')]);
    const lease = await dispatcher.acquire();
    const first = track(dispatcher.acquire());
    const second = track(dispatcher.acquire());
    lease.release();
    lease.release();
    await flush();
    expect(first.settled).toBe(true);
    expect(second.settled).toBe(false);
    expect(inFlight(dispatcher)).toEqual({ a: 1 });
    first.lease?.release();
    first.lease?.release();
    second.lease?.release();
    await flush();
    second.lease?.release();
    expect(inFlight(dispatcher)).toEqual({ a: 0 });
  });

  it('exclude avoids workers already tried, without holding back the requests behind', async () => {
    const { dispatcher } = setup({ maxConcurrent: 2 });
    dispatcher.setWorkers([worker('a'), worker('b')]);
    const onB = await dispatcher.acquire({ exclude: new Set(['a']) });
    expect(onB.workerId).toBe('b');
    // b is busier, but a is excluded.
    expect((await dispatcher.acquire({ exclude: new Set(['a']) })).workerId).toBe('b');

    const holdA = [await dispatcher.acquire(), await dispatcher.acquire()];
    expect(holdA.map((l) => l.workerId)).toEqual(['a', 'a']);
    const retry = track(dispatcher.acquire({ exclude: new Set(['a', 'b']) }));
    const plain = track(dispatcher.acquire());
    holdA[0]?.release();
    await flush();
    expect(retry.settled).toBe(false);
    expect(plain.lease?.workerId).toBe('a');

    dispatcher.setWorkers([worker('a'), worker('b'), worker('c')]);
    await flush();
    expect(retry.lease?.workerId).toBe('c');
  });

  it('soft affinity grants on the named worker while it has a free slot, else on the least-loaded', async () => {
    const { dispatcher } = setup({ maxConcurrent: 2 });
    const soft = (workerId: string) => ({ mode: 'soft' as const, workerId });
    dispatcher.setWorkers([worker('a'), worker('b')]);
    const first = await dispatcher.acquire();
    expect(first.workerId).toBe('a');
    // Without affinity, a (the most recently active) would take it again.
    expect(dispatcher.tryAcquire(undefined, soft('b'))?.workerId).toBe('b');
    expect((await dispatcher.acquire({ affinity: soft('a') })).workerId).toBe('a');
    // a is full: the next goes to b, the least loaded; an unknown worker changes nothing.
    expect(dispatcher.tryAcquire(undefined, soft('a'))?.workerId).toBe('b');
    expect(dispatcher.tryAcquire(undefined, soft('gone'))).toBeUndefined();
    first.release();
    expect(dispatcher.tryAcquire(new Set(['a']), soft('a'))).toBeUndefined();
    expect(dispatcher.tryAcquire(undefined, soft('a'))?.workerId).toBe('a');
  });

  describe('strict affinity', () => {
    const strict = (workerId: string) => ({ mode: 'strict' as const, workerId });
    const resume = (workerId: string) => ({ mode: 'strict-resume' as const, workerId });

    it('waits for a slot on its worker while another is free, and is served first when one frees', async () => {
      const { dispatcher, queued } = setup({ maxConcurrent: 1 });
      dispatcher.setWorkers([worker('a'), worker('b')]);
      const onA = dispatcher.tryAcquire(undefined, strict('a'));
      expect(onA?.workerId).toBe('a');
      expect(dispatcher.tryAcquire(undefined, strict('a'))).toBeUndefined();
      const waiting = track(dispatcher.acquire({ affinity: strict('a') }));
      // A plain request behind it takes b, which the strict one may not.
      const plain = track(dispatcher.acquire());
      await flush();
      expect(waiting.settled).toBe(false);
      expect(plain.lease?.workerId).toBe('b');
      expect(queued()).toBe(1);
      expect(dispatcher.stats()).toMatchObject({
        queueLength: 1,
        awaited: [{ id: 'a', waiting: 1, resume: false }],
      });
      // Another plain request queues behind the strict one; a's slot goes to the strict one.
      const later = track(dispatcher.acquire());
      onA?.release();
      await flush();
      expect(waiting.lease?.workerId).toBe('a');
      expect(later.settled).toBe(false);
      expect(dispatcher.stats().awaited).toEqual([]);
    });

    it('answers 400 AFFINITY_TIMEOUT after the queue timeout, counted from its first wait', async () => {
      const { dispatcher, timers } = setup({ maxConcurrent: 1, queueTimeoutMs: 30_000 });
      dispatcher.setWorkers([worker('a'), worker('b')]);
      dispatcher.tryAcquire(undefined, strict('a'));
      const waiting = track(dispatcher.acquire({ affinity: resume('a'), since: timers.now - 10_000 }));
      expect(dispatcher.stats().awaited).toEqual([{ id: 'a', waiting: 1, resume: true }]);
      timers.advance(19_999);
      await flush();
      expect(waiting.settled).toBe(false);
      timers.advance(1);
      await flush();
      expect(waiting.error?.code).toBe('AFFINITY_TIMEOUT');
      expect(waiting.error?.status).toBe(400);
      expect(waiting.error?.message).toMatch(/^timed out waiting for worker a/);
      expect(dispatcher.queueLength).toBe(0);
    });

    it('is told when its worker leaves routing, and served when a worker it waited for unlisted becomes routable', async () => {
      const { dispatcher } = setup({ maxConcurrent: 1 });
      dispatcher.setWorkers([worker('a'), worker('b')]);
      dispatcher.tryAcquire(undefined, strict('a'));
      const onA = track(dispatcher.acquire({ affinity: strict('a') }));
      const plain = track(dispatcher.acquire({ affinity: strict('b') }));
      dispatcher.setWorkers([worker('b')]);
      await flush();
      expect(onA.error).toBe(AFFINE_WORKER_LEFT);
      expect(plain.lease?.workerId).toBe('b');
      // Waiting for a worker not routable now (frozen): served once it is listed.
      const frozen = track(dispatcher.acquire({ affinity: resume('c') }));
      await flush();
      expect(frozen.settled).toBe(false);
      dispatcher.setWorkers([worker('b'), worker('c')]);
      await flush();
      expect(frozen.lease?.workerId).toBe('c');
    });
  });

  it('updateSettings: a higher maxConcurrent serves the queue, a lower one keeps leases', async () => {
    const { dispatcher } = setup({ maxConcurrent: 1 });
    dispatcher.setWorkers([worker('a')]);
    const held = await dispatcher.acquire();
    const waiting = [0, 1, 2].map(() => track(dispatcher.acquire()));
    dispatcher.updateSettings({ maxConcurrent: 3 });
    await flush();
    expect(waiting.map((w) => w.settled)).toEqual([true, true, false]);

    dispatcher.updateSettings({ maxConcurrent: 1 });
    expect(inFlight(dispatcher)).toEqual({ a: 3 });
    held.release();
    waiting[0]?.lease?.release();
    await flush();
    expect(waiting[2]?.settled).toBe(false);
    waiting[1]?.lease?.release();
    await flush();
    expect(waiting[2]?.lease?.workerId).toBe('a');
    expect(dispatcher.maxConcurrent).toBe(1);
  });

  it('updateSettings: a new queue timeout applies to the requests already waiting', async () => {
    const { dispatcher, timers } = setup({ queueTimeoutMs: 10_000 });
    const early = track(dispatcher.acquire());
    timers.advance(3_000);
    const late = track(dispatcher.acquire());
    timers.advance(1_000);
    dispatcher.updateSettings({ queueTimeoutMs: 4_000 });
    await flush();
    expect(early.error?.code).toBe('QUEUE_TIMEOUT');
    expect(late.settled).toBe(false);
    timers.advance(2_999);
    await flush();
    expect(late.settled).toBe(false);
    timers.advance(1);
    await flush();
    expect(late.error?.code).toBe('QUEUE_TIMEOUT');
    expect(timers.count).toBe(0);
  });

  it('updateSettings: a lower maxQueueLength evicts nobody but refuses new requests', async () => {
    const { dispatcher } = setup({ maxQueueLength: 3 });
    const waiting = [0, 1, 2].map(() => track(dispatcher.acquire()));
    dispatcher.updateSettings({ maxQueueLength: 1 });
    await expect(dispatcher.acquire()).rejects.toMatchObject({ code: 'QUEUE_FULL' });
    expect(dispatcher.stats().queueLength).toBe(3);
    dispatcher.setWorkers([worker('a')]);
    await flush();
    expect(waiting[0]?.lease?.workerId).toBe('a');
  });

  it('refuses invalid settings', () => {
    expect(() => setup({ maxConcurrent: 0 })).toThrow(RangeError);
    expect(() => setup({ maxQueueLength: -1 })).toThrow(RangeError);
    expect(() => setup({ queueTimeoutMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    const { dispatcher } = setup();
    expect(() => dispatcher.updateSettings({ maxConcurrent: 1.5 })).toThrow(RangeError);
    expect(dispatcher.maxConcurrent).toBe(1);
  });

  it('close rejects every queued request and later ones; leases stay valid', async () => {
    const { dispatcher, timers } = setup();
    dispatcher.setWorkers([worker('a')]);
    const held = await dispatcher.acquire();
    const waiting = [0, 1].map(() => track(dispatcher.acquire()));
    const stopped = new GatewayError('ENDPOINT_STOPPED');
    dispatcher.close(stopped);
    await flush();
    expect(waiting.map((w) => w.error?.code)).toEqual(['ENDPOINT_STOPPED', 'ENDPOINT_STOPPED']);
    expect(dispatcher.stats().queueLength).toBe(0);
    expect(timers.count).toBe(0);
    await expect(dispatcher.acquire()).rejects.toMatchObject({ code: 'ENDPOINT_STOPPED', status: 503 });
    expect(dispatcher.tryAcquire()).toBeUndefined();

    held.release();
    expect(inFlight(dispatcher)).toEqual({ a: 0 });
  });

  it('stats: lastBusyAt is when the worker went idle, or was added', async () => {
    const { dispatcher, timers } = setup({ maxConcurrent: 2 });
    dispatcher.setWorkers([worker('a')]);
    const added = timers.now;
    const one = await dispatcher.acquire();
    const two = await dispatcher.acquire();
    timers.advance(1_000);
    one.release();
    expect(dispatcher.stats().workers[0]).toMatchObject({ inFlight: 1, lastBusyAt: added });
    timers.advance(1_000);
    two.release();
    expect(dispatcher.stats().workers[0]).toMatchObject({ inFlight: 0, lastBusyAt: added + 2_000 });
  });

  it('remembers when an unlisted worker was last busy: it does not go back when the worker is listed again', async () => {
    const { dispatcher, timers } = setup();
    dispatcher.setWorkers([worker('a')]);
    timers.advance(5_000);
    const lease = await dispatcher.acquire();
    timers.advance(60_000);
    lease.release();
    const busy = timers.now;
    expect(dispatcher.lastBusyAt('a')).toBe(busy);
    // Quarantined (unlisted) while idle: its slot record goes, its last busy time stays.
    timers.advance(1_000);
    dispatcher.setWorkers([]);
    expect(dispatcher.stats().workers).toEqual([]);
    expect(dispatcher.lastBusyAt('a')).toBe(busy);
    timers.advance(2_000);
    dispatcher.setWorkers([worker('a')]);
    expect(dispatcher.stats().workers[0]).toMatchObject({ id: 'a', lastBusyAt: busy });
    // Unlisted while busy: remembered from its last release.
    const again = await dispatcher.acquire();
    dispatcher.setWorkers([]);
    timers.advance(1_000);
    again.release();
    expect(dispatcher.lastBusyAt('a')).toBe(timers.now);
    // Forgotten once the worker no longer exists; a worker never listed has no value.
    dispatcher.retainDeparted((id) => id !== 'a');
    expect(dispatcher.lastBusyAt('a')).toBeUndefined();
    expect(dispatcher.lastBusyAt('never')).toBeUndefined();
  });

  it('rejectQueued rejects the requests queued now and lets later ones queue', async () => {
    const { dispatcher } = setup();
    const waiting = [track(dispatcher.acquire()), track(dispatcher.acquire())];
    dispatcher.rejectQueued(new GatewayError('NO_CAPACITY', 'never placeable'));
    await flush();
    expect(waiting.map((w) => w.error?.code)).toEqual(['NO_CAPACITY', 'NO_CAPACITY']);
    expect(dispatcher.stats().queueLength).toBe(0);
    const later = track(dispatcher.acquire());
    await flush();
    expect(later.settled).toBe(false);
    dispatcher.setWorkers([worker('a')]);
    await flush();
    expect(later.lease?.workerId).toBe('a');
  });

  it('a throwing onQueued hook does not fail the request', async () => {
    const timers = new ManualTimers(1_000_000);
    const dispatcher = new EndpointDispatcher({
      maxConcurrent: 1,
      maxQueueLength: 1,
      queueTimeoutMs: 1_000,
      clock: () => timers.now,
      timers,
      onQueued: () => {
        throw new Error('boom');
      },
    });
    const waiting = track(dispatcher.acquire());
    dispatcher.setWorkers([worker('a')]);
    await flush();
    expect(waiting.lease?.workerId).toBe('a');
  });

  it('the hook may add a worker synchronously (wake from zero)', async () => {
    const timers = new ManualTimers(1_000_000);
    const dispatcher: EndpointDispatcher = new EndpointDispatcher({
      maxConcurrent: 1,
      maxQueueLength: 1,
      queueTimeoutMs: 1_000,
      clock: () => timers.now,
      timers,
      onQueued: () => dispatcher.setWorkers([worker('a')]),
    });
    const lease = await dispatcher.acquire();
    expect(lease.workerId).toBe('a');
    expect(dispatcher.stats().queueLength).toBe(0);
    expect(timers.count).toBe(0);
  });
});

describe('GatewayError', () => {
  it('has the statuses the design gives', () => {
    const statuses = Object.fromEntries(
      Object.entries(GATEWAY_ERROR_CATALOGUE).map(([code, entry]) => [code, entry.status]),
    );
    expect(statuses).toEqual({
      INVALID_REQUEST: 400,
      AFFINITY_TIMEOUT: 400,
      ENDPOINT_NOT_FOUND: 404,
      AFFINITY_WORKER_GONE: 404,
      BODY_TOO_LARGE: 413,
      QUEUE_FULL: 429,
      BUDGET_EXCEEDED: 429,
      CLIENT_GONE: 499,
      WORKER_ERROR: 502,
      NO_CAPACITY: 503,
      ROUTING_UNAVAILABLE: 503,
      ENDPOINT_STOPPED: 503,
      QUEUE_TIMEOUT: 504,
      REQUEST_TIMEOUT: 504,
      ENDPOINT_FAILED: 503,
      NO_WORKERS: 503,
      RUNTIME_UNAVAILABLE: 503,
      UNAUTHENTICATED: 401,
    });
    for (const entry of Object.values(GATEWAY_ERROR_CATALOGUE)) expect(entry.description).toMatch(/\.$/);
  });

  it('carries code, status and the body format', () => {
    const error = new GatewayError('WORKER_ERROR', 'socket hang up', { cause: new Error('ECONNRESET') });
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'GatewayError', code: 'WORKER_ERROR', status: 502 });
    expect(error.cause).toBeInstanceOf(Error);
    expect(error.toBody()).toEqual({
      code: 502,
      reason: 'WORKER_ERROR',
      message: 'socket hang up',
      metadata: {},
    });
    expect(new GatewayError('NO_CAPACITY').message).toBe(GATEWAY_ERROR_CATALOGUE.NO_CAPACITY.description);
  });
});

// ---- property: random operation sequences ----

const POOL = ['w0', 'w1', 'w2', 'w3'] as const;

type Op =
  | { kind: 'acquire'; exclude: number; abortable: boolean }
  | { kind: 'release'; pick: number; twice: boolean }
  | { kind: 'abort'; pick: number }
  | { kind: 'workers'; mask: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'maxConcurrent'; value: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('acquire' as const),
      exclude: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(15) }),
      abortable: fc.boolean(),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat(), twice: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('workers' as const), mask: fc.nat(15) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.nat(3_000) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('maxConcurrent' as const),
      value: fc.integer({ min: 1, max: 3 }),
    }),
  },
);

interface Req {
  seq: number;
  exclude: Set<string>;
  controller: AbortController | undefined;
  aborted: boolean;
  issuedAt: number;
  queueBefore: number;
  state: 'pending' | 'granted' | 'rejected';
  settledStep: number;
  lease?: Lease;
  released: boolean;
  error?: GatewayError;
}

const maskSet = (mask: number) => new Set<string>(POOL.filter((_, i) => (mask >> i) & 1));

describe('EndpointDispatcher property', () => {
  it('never exceeds maxConcurrent, never leaks, serves in FIFO order, leaves nothing servable queued', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.nat(15),
        fc.array(opArb, { maxLength: 80 }),
        async (maxConcurrent0, maxQueueLength, queueTimeoutMs, initialMask, ops) => {
          const timers = new ManualTimers(1_000_000);
          const dispatcher = new EndpointDispatcher({
            maxConcurrent: maxConcurrent0,
            maxQueueLength,
            queueTimeoutMs,
            clock: () => timers.now,
            timers,
          });
          let maxConcurrent = maxConcurrent0;
          let routable = maskSet(initialMask);
          dispatcher.setWorkers([...routable].map((id) => worker(id)));
          const reqs: Req[] = [];
          let step = 0;

          const held = (id: string) =>
            reqs.filter((r) => r.state === 'granted' && !r.released && r.lease?.workerId === id).length;
          const pending = () => reqs.filter((r) => r.state === 'pending');

          const check = (before: Map<string, number>) => {
            const stats = dispatcher.stats();
            const byId = new Map(stats.workers.map((w) => [w.id, w]));
            // The dispatcher's counts are exactly the leases held; draining workers are listed only while busy.
            for (const id of POOL) {
              const count = held(id);
              const entry = byId.get(id);
              if (routable.has(id)) expect(entry).toMatchObject({ inFlight: count, routable: true });
              else if (count > 0) expect(entry).toMatchObject({ inFlight: count, routable: false });
              else expect(entry).toBeUndefined();
            }
            expect(stats.workers.length).toBe(byId.size);
            const granted = reqs.filter((r) => r.state === 'granted' && r.settledStep === step);
            for (const id of POOL) {
              const after = held(id);
              if (granted.some((r) => r.lease?.workerId === id))
                expect(after).toBeLessThanOrEqual(maxConcurrent);
              else expect(after).toBeLessThanOrEqual(before.get(id) ?? 0);
            }
            const waiting = pending();
            for (const r of granted) {
              const id = r.lease?.workerId ?? '';
              expect(routable.has(id)).toBe(true);
              expect(r.exclude.has(id)).toBe(false);
              // FIFO: every earlier request still waiting had to avoid this worker.
              for (const earlier of waiting)
                if (earlier.seq < r.seq) expect(earlier.exclude.has(id)).toBe(true);
            }
            // Work-conserving: no waiting request could use a free slot.
            for (const r of waiting) {
              for (const id of routable) {
                if (!r.exclude.has(id)) expect(held(id)).toBeGreaterThanOrEqual(maxConcurrent);
              }
              expect(timers.now - r.issuedAt).toBeLessThan(queueTimeoutMs);
            }
            expect(waiting.length).toBeLessThanOrEqual(maxQueueLength);
            expect(stats.queueLength).toBe(waiting.length);
            expect(stats.oldestEnqueuedAt).toBe(
              waiting.length ? Math.min(...waiting.map((r) => r.issuedAt)) : null,
            );
            for (const r of reqs.filter((q) => q.state === 'rejected' && q.settledStep === step)) {
              const code = r.error?.code;
              if (code === 'QUEUE_FULL') expect(r.queueBefore).toBeGreaterThanOrEqual(maxQueueLength);
              else if (code === 'QUEUE_TIMEOUT')
                expect(timers.now - r.issuedAt).toBeGreaterThanOrEqual(queueTimeoutMs);
              else if (code === 'CLIENT_GONE') expect(r.aborted).toBe(true);
              else throw new Error(`unexpected rejection ${String(r.error)}`);
            }
          };

          const run = async (op: Op) => {
            step += 1;
            const before = new Map(POOL.map((id) => [id, held(id)]));
            switch (op.kind) {
              case 'acquire': {
                const controller = op.abortable ? new AbortController() : undefined;
                const exclude = maskSet(op.exclude);
                const req: Req = {
                  seq: reqs.length,
                  exclude,
                  controller,
                  aborted: false,
                  issuedAt: timers.now,
                  queueBefore: pending().length,
                  state: 'pending',
                  settledStep: 0,
                  released: false,
                };
                reqs.push(req);
                const settledAt = () => step;
                dispatcher.acquire({ signal: controller?.signal, exclude }).then(
                  (lease) => {
                    req.state = 'granted';
                    req.lease = lease;
                    req.settledStep = settledAt();
                  },
                  (error: GatewayError) => {
                    req.state = 'rejected';
                    req.error = error;
                    req.settledStep = settledAt();
                  },
                );
                break;
              }
              case 'release': {
                const open = reqs.filter((r) => r.state === 'granted' && !r.released);
                const r = open[op.pick % Math.max(1, open.length)];
                if (!r) break;
                r.released = true;
                r.lease?.release();
                if (op.twice) r.lease?.release();
                break;
              }
              case 'abort': {
                const abortable = reqs.filter((r) => r.controller && !r.aborted);
                const r = abortable[op.pick % Math.max(1, abortable.length)];
                if (!r) break;
                r.aborted = true;
                r.controller?.abort();
                break;
              }
              case 'workers':
                routable = maskSet(op.mask);
                dispatcher.setWorkers([...routable].map((id) => worker(id)));
                break;
              case 'advance':
                timers.advance(op.ms);
                break;
              case 'maxConcurrent':
                maxConcurrent = op.value;
                dispatcher.updateSettings({ maxConcurrent });
                break;
            }
            await flush();
            check(before);
          };

          for (const op of ops) await run(op);

          // Release everything (and whatever the queue is then given) until nothing is held.
          while (reqs.some((r) => r.state === 'granted' && !r.released)) {
            await run({ kind: 'release', pick: 0, twice: false });
          }
          for (const w of dispatcher.stats().workers)
            expect(w).toMatchObject({ inFlight: 0, routable: true });
          // Whatever still waits must avoid every routable worker (checked in `check`); close drops it all.
          dispatcher.close(new GatewayError('ENDPOINT_STOPPED'));
          await flush();
          expect(pending()).toEqual([]);
          expect(dispatcher.stats().queueLength).toBe(0);
          expect(timers.count).toBe(0);
          for (const r of reqs)
            if (r.controller) expect(getEventListeners(r.controller.signal, 'abort')).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });
});
