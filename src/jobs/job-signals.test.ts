import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { DEFAULT_JOB_POLICY } from '../domain/job.js';
import type { EndpointQueueSignal, QueueSignals } from '../ports/queue-signals.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { JobEvents } from './job-events.js';
import { JobSignals, withJobs } from './job-signals.js';

const silent = { warn: () => {}, error: () => {} };

/** The gateway's side: one queued request on ep-r, worker w-r with 1 in flight, busy at 50. */
const gateway: QueueSignals = {
  queueSignal: (endpointId): EndpointQueueSignal | undefined =>
    endpointId === 'ep-r'
      ? {
          queueLength: 1,
          oldestEnqueuedAt: 40,
          inFlight: (w) => (w === 'w-r' ? 1 : 0),
          lastBusyAt: (w) => (w === 'w-r' ? 50 : undefined),
        }
      : undefined,
  onQueued: () => () => {},
};

describe('queued jobs as the autoscaler signals', () => {
  let store: Store;
  let timers: ManualTimers;
  let events: JobEvents;
  let signals: JobSignals;

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    timers = new ManualTimers(100);
    events = new JobEvents();
    signals = new JobSignals({
      jobs: store.jobs,
      events,
      clock: () => timers.now,
      timers,
      logger: silent,
      refreshMs: 1_000,
    });
  });
  afterEach(async () => {
    await signals.close();
    await store.close();
  });

  const enqueue = (id: string, endpointId: string, createdAt: number, lowPriority = false) =>
    store.jobs.enqueue(
      {
        id,
        endpointId,
        ownerId: 'o',
        input: '1',
        webhook: null,
        policy: { ...DEFAULT_JOB_POLICY, lowPriority },
        sync: false,
        createdAt,
      },
      60_000,
    );

  it('count queued jobs (not lowPriority ones) as queued requests, jobs in progress as requests in flight', async () => {
    await enqueue('j-1', 'ep-r', 30);
    await enqueue('j-2', 'ep-r', 60);
    await enqueue('j-low', 'ep-low', 10, true);
    await store.jobs.take({ endpointId: 'ep-r', workerId: 'w-j', max: 1, cap: 1, now: 90 });
    await signals.refresh();
    const merged = withJobs(gateway, signals);
    const signal = merged.queueSignal('ep-r', () => true);
    expect(signal?.queueLength).toBe(2);
    expect(signal?.oldestEnqueuedAt).toBe(40);
    expect([signal?.inFlight('w-r'), signal?.inFlight('w-j')]).toEqual([1, 1]);
    expect([signal?.lastBusyAt('w-r'), signal?.lastBusyAt('w-j')]).toEqual([50, 100]);
    // A low-priority job adds no worker: its endpoint's signal is the empty one (nothing queued, nothing in flight).
    expect(merged.queueSignal('ep-low', () => true)).toMatchObject({
      queueLength: 0,
      oldestEnqueuedAt: null,
    });
    expect(merged.queueSignal('ep-low', () => true)?.inFlight('w-any')).toBe(0);
  });

  it("tell the scaler's onQueued listeners once a job is queued, after the snapshot holds it (a wake from zero)", async () => {
    const merged = withJobs(gateway, signals);
    const told: { endpointId: string; queued: number | undefined }[] = [];
    merged.onQueued((endpointId) =>
      told.push({ endpointId, queued: merged.queueSignal(endpointId, () => true)?.queueLength }),
    );
    await enqueue('j-1', 'ep-zero', 100);
    events.emit('queued', { endpointId: 'ep-zero', lowPriority: false });
    await enqueue('j-low', 'ep-zero', 100, true);
    events.emit('queued', { endpointId: 'ep-zero', lowPriority: true });
    await signals.refresh();
    await new Promise((resolve) => setImmediate(resolve));
    expect(told).toEqual([{ endpointId: 'ep-zero', queued: 1 }]);
  });

  it("keep an endpoint's signal once its jobs have ended, its worker busy until its last job's end (no scale-down before freeTimeout)", async () => {
    await enqueue('j-1', 'ep-q', 100);
    await store.jobs.take({ endpointId: 'ep-q', workerId: 'w-q', max: 1, cap: 1, now: 100 });
    timers.advance(200);
    const { job } = await store.jobs.complete({
      jobId: 'j-1',
      workerId: 'w-q',
      status: 'COMPLETED',
      output: '1',
      error: null,
      now: timers.now,
    });
    if (!job) throw new Error('the job did not complete');
    // Shorter than the refresh interval: no snapshot saw it in progress.
    events.emit('finished', { job });
    await signals.refresh();
    const signal = withJobs(gateway, signals).queueSignal('ep-q', () => true);
    // Undefined would read as "no traffic yet": the scaler would scale the endpoint to minWorkers at once.
    expect(signal).toBeDefined();
    expect([signal?.queueLength, signal?.oldestEnqueuedAt, signal?.inFlight('w-q')]).toEqual([0, null, 0]);
    expect(signal?.lastBusyAt('w-q')).toBe(300);
    // An endpoint that never had a job still has none.
    expect(withJobs(gateway, signals).queueSignal('ep-none', () => true)).toBeUndefined();
  });
  it('count a take under way, and the jobs it handed, as busy for the autoscaler at once, until a read begun after shows them', async () => {
    await signals.refresh();
    const inFlight = () =>
      withJobs(gateway, signals)
        .queueSignal('ep-t', () => true)
        ?.inFlight('w-t') ?? 0;
    expect(inFlight()).toBe(0);
    // The take is in the store: busy now, not at the next read (a scale-down between two reads must not pick it),
    // though not a job in progress in the store's snapshot (a polling worker is idle for `health`).
    events.emit('taking', { endpointId: 'ep-t', workerId: 'w-t' });
    expect(inFlight()).toBe(1);
    expect(signals.signal('ep-t', () => true)?.inProgress).toEqual({});
    expect(signals.freshLoad('w-t')).toBe(1);
    await enqueue('j-1', 'ep-t', 100);
    await store.jobs.take({ endpointId: 'ep-t', workerId: 'w-t', max: 1, cap: 1, now: 100 });
    events.emit('took', { endpointId: 'ep-t', workerId: 'w-t', count: 1 });
    expect(inFlight()).toBe(1);
    expect(
      withJobs(gateway, signals)
        .queueSignal('ep-t', () => true)
        ?.lastBusyAt('w-t'),
    ).toBe(100);
    // The next read holds the job: counted once, not twice.
    await signals.refresh();
    expect(inFlight()).toBe(1);
    // A take that took nothing leaves it idle again.
    events.emit('taking', { endpointId: 'ep-t', workerId: 'w-idle' });
    events.emit('took', { endpointId: 'ep-t', workerId: 'w-idle', count: 0 });
    expect(
      withJobs(gateway, signals)
        .queueSignal('ep-t', () => true)
        ?.inFlight('w-idle'),
    ).toBe(0);
  });
});
