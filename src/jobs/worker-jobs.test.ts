import { describe, expect, it } from 'vitest';
import { sampleEndpoint, sampleJob } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { JobEvents } from './job-events.js';
import { Wakeups } from './wakeups.js';
import { WorkerJobs } from './worker-jobs.js';

/** A job with input 1 in the endpoint's queue, kept a minute once finished. */
const queueJob = (store: Store, id: string, endpointId: string, ownerId: string, createdAt: number) =>
  store.jobs.enqueue(sampleJob(id, endpointId, { ownerId, createdAt }), 60_000);

describe("a worker's end", () => {
  it('returns the jobs it held to the queue at once, and says their endpoint has jobs queued', async () => {
    const store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    const timers = new ManualTimers(1_000);
    const events = new JobEvents();
    const queued: string[] = [];
    events.on('queued', ({ endpointId }) => queued.push(endpointId));
    const retried: string[] = [];
    events.on('retried', ({ endpointId, count }) => retried.push(`${endpointId} ${count}`));
    const workers = new WorkerJobs({
      jobs: store.jobs,
      clock: () => timers.now,
      wakeups: new Wakeups({ timers, recheckMs: 500 }),
      events,
      maxAttempts: 3,
    });
    await queueJob(store, 'j-1', 'ep-1', 'o', 0);
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 500 });
    await workers.workerEnded('w-1', 'worker exited with code 137');
    expect(await store.jobs.get('ep-1', 'j-1')).toMatchObject({
      status: 'IN_QUEUE',
      workerId: null,
      attempts: 1,
    });
    expect(queued).toEqual(['ep-1']);
    expect(retried).toEqual(['ep-1 1']);
    await store.close();
  });
});

describe('a frozen or suspended worker (issue 24)', () => {
  it('is never handed a job through the take it left open, and takes it once it runs again', async () => {
    const store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    const timers = new ManualTimers(1_000);
    const resting = new Set(['w-1']);
    const workers = new WorkerJobs({
      jobs: store.jobs,
      clock: () => timers.now,
      wakeups: new Wakeups({ timers, recheckMs: 500 }),
      events: new JobEvents(),
      maxAttempts: 3,
      resting: (_endpointId, workerId) => resting.has(workerId),
    });
    const endpoint = sampleEndpoint();
    await queueJob(store, 'j-1', endpoint.id, endpoint.ownerId, 1_000);
    let taken: string[] | undefined;
    const take = workers
      .take({ endpoint, workerId: 'w-1' }, { batch: 1, holding: undefined, holdMs: 60_000 })
      .then((jobs) => {
        taken = jobs.map((job) => job.id);
      });
    await timers.advanceSettling(5_000);
    expect(taken).toBeUndefined();
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({ status: 'IN_QUEUE' });
    resting.delete('w-1');
    await timers.advanceSettling(600);
    await take;
    expect(taken).toEqual(['j-1']);
    await store.close();
  });

  it('counts the jobs a worker says it no longer holds as retried, but not jobs its unanswered take never gave it', async () => {
    const store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    const timers = new ManualTimers(1_000);
    const events = new JobEvents();
    const retried: number[] = [];
    events.on('retried', ({ count }) => retried.push(count));
    const workers = new WorkerJobs({
      jobs: store.jobs,
      clock: () => timers.now,
      wakeups: new Wakeups({ timers, recheckMs: 500 }),
      events,
      maxAttempts: 3,
    });
    const endpoint = sampleEndpoint({ patch: { workers: { maxConcurrent: 2 } } });
    for (const id of ['j-1', 'j-2']) await queueJob(store, id, endpoint.id, endpoint.ownerId, 1_000);
    const caller = { endpoint, workerId: 'w-1' };
    expect(await workers.take(caller, { batch: 2, holding: undefined, holdMs: 0 })).toHaveLength(2);
    // A take that left before its answer: what it took goes back, not attempted.
    const left = new AbortController();
    left.abort();
    await store.jobs.requeueWorker('w-1', 'test: back to the queue', { maxAttempts: 3, now: timers.now });
    expect(
      await workers.take(caller, { batch: 2, holding: undefined, holdMs: 0, signal: left.signal }),
    ).toEqual([]);
    expect(retried).toEqual([]);
    // Taken again, then the worker says it holds nothing (job_in_progress=0): both were attempted, both retried.
    expect(await workers.take(caller, { batch: 2, holding: undefined, holdMs: 0 })).toHaveLength(2);
    await workers.take(caller, { batch: 2, holding: false, holdMs: 0 });
    expect(retried).toEqual([2]);
    await store.close();
  });
});
