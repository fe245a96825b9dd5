import { describe, expect, it } from 'vitest';
import { sampleEndpoint, sampleJob } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import type { WorkerStanding } from '../ports/worker-standing.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { JobEvents } from './job-events.js';
import { Wakeups } from './wakeups.js';
import { STOP_RESEND_MS, WorkerJobs } from './worker-jobs.js';

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

/** A store holding one queued job j-1 of a sample endpoint (submitted at 1000), and WorkerJobs on it. */
async function oneQueuedJob(
  timers: ManualTimers,
  options: {
    recheckMs: number;
    standing?: (endpointId: string, workerId: string) => WorkerStanding;
    events?: JobEvents;
  },
) {
  const store = new Store({ connection: connectSqlite(':memory:') });
  await store.migrate();
  const workers = new WorkerJobs({
    jobs: store.jobs,
    clock: () => timers.now,
    wakeups: new Wakeups({ timers, recheckMs: options.recheckMs }),
    events: options.events ?? new JobEvents(),
    maxAttempts: 3,
    ...(options.standing ? { standing: options.standing } : {}),
  });
  const endpoint = sampleEndpoint();
  await queueJob(store, 'j-1', endpoint.id, endpoint.ownerId, 1_000);
  return { store, workers, endpoint };
}

describe('a frozen or suspended worker (issue 24)', () => {
  it('is never handed a job through the take it left open, and takes it once it runs again', async () => {
    const timers = new ManualTimers(1_000);
    const resting = new Set(['w-1']);
    const { store, workers, endpoint } = await oneQueuedJob(timers, {
      recheckMs: 500,
      standing: (_endpointId, workerId) => (resting.has(workerId) ? 'resting' : 'serving'),
    });
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
    // Taken again, then the worker says it holds nothing (job_in_progress=0): the job its ping listed was attempted
    // and is retried; the one it never showed it had is not.
    expect(await workers.take(caller, { batch: 2, holding: undefined, holdMs: 0 })).toHaveLength(2);
    timers.advance(1_000);
    await workers.ping(caller, ['j-1']);
    await workers.take(caller, { batch: 2, holding: false, holdMs: 0 });
    expect(retried).toEqual([1]);
    // The same poll took both again: j-1's return counted, j-2's did not (the take the test requeued counted for both,
    // the unanswered one for neither).
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({ status: 'IN_PROGRESS', attempts: 3 });
    expect(await store.jobs.get(endpoint.id, 'j-2')).toMatchObject({ status: 'IN_PROGRESS', attempts: 2 });
    await store.close();
  });
});

describe('a take that never reached its worker (issue 33: a replica killed mid-take)', () => {
  /**
   * After `shown` (the worker showing it has the job, or not), the worker polls again saying it holds nothing
   * (`job_in_progress=0`): what it held goes back to the queue, and the same poll takes the job again.
   */
  async function pollHoldingNothing(
    workers: WorkerJobs,
    timers: ManualTimers,
    caller: { endpoint: ReturnType<typeof sampleEndpoint>; workerId: string },
    shown: () => Promise<void>,
  ): Promise<void> {
    timers.advance(1_000);
    await shown();
    await workers.take(caller, { batch: 1, holding: false, holdMs: 0 });
  }

  it('does not count it as an attempt when the worker never showed it had the job, up to the attempt limit of such returns', async () => {
    const timers = new ManualTimers(1_000);
    const { store, workers, endpoint } = await oneQueuedJob(timers, { recheckMs: 500 });
    const caller = { endpoint, workerId: 'w-1' };
    expect(await workers.take(caller, { batch: 1, holding: undefined, holdMs: 0 })).toHaveLength(1);
    for (let lost = 1; lost <= 5; lost += 1) {
      await pollHoldingNothing(workers, timers, caller, async () => {});
      // Taken again at once; the first three returns took back their attempt, the next ones counted.
      expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
        status: 'IN_PROGRESS',
        attempts: 1 + Math.max(0, lost - 3),
      });
    }
    // A worker that loses every job it is handed still ends it: three returns spared, then three attempts.
    await pollHoldingNothing(workers, timers, caller, async () => {});
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'FAILED',
      error: 'the worker said it holds no job (taken 3 times)',
    });
    await store.close();
  });

  it('counts it when the worker showed it had the job: a ping naming it, a progress update or a streamed chunk', async () => {
    const timers = new ManualTimers(1_000);
    const { store, workers, endpoint } = await oneQueuedJob(timers, { recheckMs: 500 });
    const caller = { endpoint, workerId: 'w-1' };
    expect(await workers.take(caller, { batch: 1, holding: undefined, holdMs: 0 })).toHaveLength(1);
    await pollHoldingNothing(workers, timers, caller, () => workers.ping(caller, ['j-1']));
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({ status: 'IN_PROGRESS', attempts: 2 });
    await pollHoldingNothing(workers, timers, caller, () =>
      workers.result(caller, 'j-1', { kind: 'progress', output: '"half"' }),
    );
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({ status: 'IN_PROGRESS', attempts: 3 });
    await pollHoldingNothing(workers, timers, caller, () => workers.streamChunk(caller, 'j-1', '"a chunk"'));
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'FAILED',
      error: 'the worker said it holds no job (taken 3 times)',
    });
    await store.close();
  });
});

describe('a worker chosen for removal (issue 29)', () => {
  it('takes nothing through its open take: it answers no job at the end of its hold, and another worker takes the job', async () => {
    const timers = new ManualTimers(1_000);
    const leaving = new Set(['w-1']);
    const { store, workers, endpoint } = await oneQueuedJob(timers, {
      recheckMs: 500,
      standing: (_endpointId, workerId) => (leaving.has(workerId) ? 'leaving' : 'serving'),
    });
    let taken: string[] | undefined;
    const take = workers
      .take({ endpoint, workerId: 'w-1' }, { batch: 1, holding: undefined, holdMs: 10_000 })
      .then((jobs) => {
        taken = jobs.map((job) => job.id);
      });
    // Held, not answered at once (the SDK would poll again at once), and the job stays queued meanwhile.
    await timers.advanceSettling(9_900);
    expect(taken).toBeUndefined();
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({ status: 'IN_QUEUE', workerId: null });
    await timers.advanceSettling(100);
    await take;
    expect(taken).toEqual([]);
    const other = await workers.take(
      { endpoint, workerId: 'w-2' },
      { batch: 1, holding: undefined, holdMs: 0 },
    );
    expect(other.map((job) => job.id)).toEqual(['j-1']);
    await store.close();
  });

  it('hands back at once, not counted as an attempt, a job its take took while its removal was decided', async () => {
    const timers = new ManualTimers(1_000);
    const events = new JobEvents();
    const leaving = new Set<string>();
    const busy: string[] = [];
    // The removal is decided while the take is in the store (the take and the scale-down cross).
    events.on('taking', ({ workerId }) => leaving.add(workerId));
    events.on('took', ({ workerId, count }) => busy.push(`${workerId} took ${count}`));
    const { store, workers, endpoint } = await oneQueuedJob(timers, {
      recheckMs: 500,
      events,
      standing: (_endpointId, workerId) => (leaving.has(workerId) ? 'leaving' : 'serving'),
    });
    const taken = await workers.take(
      { endpoint, workerId: 'w-1' },
      { batch: 1, holding: undefined, holdMs: 0 },
    );
    expect(taken).toEqual([]);
    expect(busy).toEqual(['w-1 took 0']);
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'IN_QUEUE',
      workerId: null,
      attempts: 0,
    });
    await store.close();
  });
});

describe('the stop channel', () => {
  it('sends a stop at once, again only after STOP_RESEND_MS while it is pending, and no more once a ping drops the job', async () => {
    const timers = new ManualTimers(1_000);
    const { store, workers, endpoint } = await oneQueuedJob(timers, { recheckMs: 10_000 });
    const caller = { endpoint, workerId: 'w-1' };
    await store.jobs.take({ endpointId: endpoint.id, workerId: 'w-1', max: 1, cap: 1, now: 1_000 });
    await store.jobs.cancel(endpoint.id, 'j-1', timers.now);
    expect(await workers.stops(caller, 30_000)).toEqual(['j-1']);
    // The SDK polls again at once: held, not answered with the same stop in a loop.
    let again: string[] | undefined;
    const poll = workers.stops(caller, 30_000).then((ids) => {
      again = ids;
    });
    await timers.advanceSettling(STOP_RESEND_MS - 100);
    expect(again).toBeUndefined();
    await timers.advanceSettling(100);
    await poll;
    expect(again).toEqual(['j-1']);
    // A ping that no longer lists the job: the stop is done; the next poll holds until its bound.
    await workers.ping(caller, []);
    let last: string[] | undefined;
    const held = workers.stops(caller, 5_000).then((ids) => {
      last = ids;
    });
    await timers.advanceSettling(4_900);
    expect(last).toBeUndefined();
    await timers.advanceSettling(100);
    await held;
    expect(last).toEqual([]);
    await store.close();
  });
});
