import { describe, expect, it } from 'vitest';
import { freshStoreEachTest, storeTargets } from '../../test/support/stores.js';
import { DEFAULT_JOB_POLICY, type NewJob } from '../domain/job.js';
import type { Store } from './store.js';

const newJob = (id: string, endpointId: string): NewJob => ({
  id,
  endpointId,
  ownerId: 'owner-1',
  input: '{}',
  webhook: null,
  policy: DEFAULT_JOB_POLICY,
  sync: false,
  createdAt: 1_000,
});

describe.each(storeTargets())('the live job counts on $name', (target) => {
  let store: Store;
  freshStoreEachTest(target, (opened) => {
    ({ store } = opened);
  });

  it("counts every endpoint's queued and running jobs in one read, leaving out finished jobs and idle endpoints", async () => {
    expect(await store.jobCounts.live()).toEqual(new Map());
    for (const id of ['a-1', 'a-2', 'a-3', 'a-4']) await store.jobs.enqueue(newJob(id, 'ep-a'), 60_000);
    await store.jobs.enqueue(newJob('b-1', 'ep-b'), 60_000);
    await store.jobs.enqueue(newJob('c-1', 'ep-c'), 60_000);
    const taken = await store.jobs.take({ endpointId: 'ep-a', workerId: 'w-1', max: 2, cap: 2, now: 2_000 });
    const [done] = taken;
    if (!done) throw new Error('nothing taken');
    await store.jobs.complete({
      jobId: done.id,
      workerId: 'w-1',
      status: 'COMPLETED',
      output: '1',
      error: null,
      now: 3_000,
    });
    await store.jobs.take({ endpointId: 'ep-b', workerId: 'w-2', max: 1, cap: 1, now: 2_000 });
    await store.jobs.cancel('ep-c', 'c-1', 2_500);
    expect(await store.jobCounts.live()).toEqual(
      new Map([
        ['ep-a', { inQueue: 2, inProgress: 1 }],
        ['ep-b', { inQueue: 0, inProgress: 1 }],
      ]),
    );
  });
});
