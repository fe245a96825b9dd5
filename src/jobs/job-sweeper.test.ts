import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { DEFAULT_JOB_POLICY } from '../domain/job.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { type JobEventMap, JobEvents } from './job-events.js';
import { JobSweeper } from './job-sweeper.js';
import { Wakeups } from './wakeups.js';

const silent = { warn: () => {}, error: () => {} };

describe('the job sweeper', () => {
  let store: Store;
  let timers: ManualTimers;
  let sweeper: JobSweeper;
  const seen: string[] = [];

  beforeEach(async () => {
    seen.length = 0;
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    timers = new ManualTimers(0);
    const events = new JobEvents();
    events.on('finished', ({ job }: JobEventMap['finished']) =>
      seen.push(`finished ${job.id} ${job.status}`),
    );
    events.on('queued', ({ endpointId }) => seen.push(`queued ${endpointId}`));
    events.on('recycle', ({ workerId, reason }) => seen.push(`recycle ${workerId}: ${reason}`));
    events.on('retried', ({ endpointId, count }) => seen.push(`retried ${endpointId} ${count}`));
    sweeper = new JobSweeper({
      jobs: store.jobs,
      clock: () => timers.now,
      timers,
      wakeups: new Wakeups({ timers, recheckMs: 500 }),
      events,
      logger: silent,
      intervalMs: 1_000,
      lostAfterMs: 10_000,
      stopGraceMs: 5_000,
      maxAttempts: 3,
    });
  });
  afterEach(async () => {
    await sweeper.close();
    await store.close();
  });

  const enqueue = (id: string, executionTimeoutMs = 60_000) =>
    store.jobs.enqueue(
      {
        id,
        endpointId: 'ep-1',
        ownerId: 'o',
        input: '1',
        webhook: null,
        policy: { ...DEFAULT_JOB_POLICY, executionTimeoutMs },
        sync: false,
        createdAt: 0,
      },
      60_000,
    );

  it('times out a job past its executionTimeout, stops it on its worker, and replaces a worker that keeps it', async () => {
    await enqueue('j-1', 5_000);
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 0 });
    timers.now = 5_000;
    await sweeper.sweep();
    expect(seen).toEqual(['finished j-1 TIMED_OUT']);
    expect(await store.jobs.stopsFor('w-1')).toEqual(['j-1']);
    // The worker keeps listing it in its pings past the grace period: it is replaced.
    await store.jobs.heartbeat('w-1', ['j-1'], 9_000);
    timers.now = 10_001;
    await sweeper.sweep();
    expect(seen).toEqual(['finished j-1 TIMED_OUT', 'recycle w-1: it kept a job it was told to stop']);
  });

  it('gives a job no worker has shown it held for lostAfter back to the queue', async () => {
    await enqueue('j-1');
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 0 });
    timers.now = 9_000;
    await sweeper.sweep();
    expect(seen).toEqual([]);
    timers.now = 10_001;
    await sweeper.sweep();
    expect(seen).toEqual(['queued ep-1', 'retried ep-1 1']);
    expect((await store.jobs.get('ep-1', 'j-1'))?.status).toBe('IN_QUEUE');
  });
});
