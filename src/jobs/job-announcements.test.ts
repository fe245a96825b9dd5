/**
 * Issue 31: a job's end and a requeue are announced from one place (job-announcements.ts) by every path. The same
 * loss of a worker holding two jobs (one at its attempt limit) through both former twins, the sweeper (its pings
 * stopped) and `WorkerJobs.workerEnded` (its container ended), says the same: the job at its limit finished FAILED,
 * the other's waiters woken, its endpoint's queue woken, queued and retried once.
 */
import { describe, expect, it } from 'vitest';
import { sampleJob } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { JobEvents } from './job-events.js';
import { JobSweeper } from './job-sweeper.js';
import { Wakeups } from './wakeups.js';
import { WorkerJobs } from './worker-jobs.js';

/** Wake-ups that remember which keys were woken. */
class RecordedWakeups extends Wakeups {
  readonly woken: string[] = [];

  override wake(key: string): void {
    this.woken.push(key);
    super.wake(key);
  }
}

const LOST_AFTER_MS = 10_000;

/** A worker w-1 holding j-old (taken once before: at the limit of 2) and j-new, lost by `lose`; what was said. */
async function loseWorker(
  lose: (parts: { store: Store; timers: ManualTimers; wakeups: Wakeups; events: JobEvents }) => Promise<void>,
) {
  const store = new Store({ connection: connectSqlite(':memory:') });
  await store.migrate();
  const timers = new ManualTimers(0);
  const wakeups = new RecordedWakeups({ timers, recheckMs: 500 });
  const events = new JobEvents();
  const said: string[] = [];
  events.on('finished', ({ job }) => said.push(`finished ${job.id} ${job.status}`));
  events.on('queued', ({ endpointId }) => said.push(`queued ${endpointId}`));
  events.on('retried', ({ endpointId, count }) => said.push(`retried ${endpointId} ${count}`));
  await store.jobs.enqueue(sampleJob('j-old', 'ep-1', { ownerId: 'o', createdAt: 0 }), 60_000);
  await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-0', max: 1, cap: 1, now: 0 });
  await store.jobs.requeueWorker('w-0', 'an earlier loss', { maxAttempts: 2, now: 0 });
  await store.jobs.enqueue(sampleJob('j-new', 'ep-1', { ownerId: 'o', createdAt: 1 }), 60_000);
  await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 2, cap: 2, now: 0 });
  await lose({ store, timers, wakeups, events });
  const result = { said, woken: wakeups.woken };
  await store.close();
  return result;
}

const SAID = ['finished j-old FAILED', 'queued ep-1', 'retried ep-1 1'];
const WOKEN = ['job:j-old', 'job:j-new', 'queue:ep-1'];

describe("a worker's loss, announced the same by both of its paths", () => {
  it('through the sweeper (its pings stopped listing the jobs)', async () => {
    const seen = await loseWorker(async ({ store, timers, wakeups, events }) => {
      const sweeper = new JobSweeper({
        jobs: store.jobs,
        clock: () => timers.now,
        timers,
        wakeups,
        events,
        logger: { warn: () => {}, error: () => {} },
        intervalMs: 1_000,
        lostAfterMs: LOST_AFTER_MS,
        stopGraceMs: 5_000,
        maxAttempts: 2,
      });
      timers.now = LOST_AFTER_MS + 1;
      await sweeper.sweep();
      await sweeper.close();
    });
    expect(seen).toEqual({ said: SAID, woken: WOKEN });
  });

  it('through the worker jobs (its container ended)', async () => {
    const seen = await loseWorker(async ({ store, timers, wakeups, events }) => {
      const workers = new WorkerJobs({
        jobs: store.jobs,
        clock: () => timers.now,
        wakeups,
        events,
        maxAttempts: 2,
      });
      await workers.workerEnded('w-1', 'worker exited with code 137');
    });
    expect(seen).toEqual({ said: SAID, woken: WOKEN });
  });
});
