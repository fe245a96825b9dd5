import { describe, expect, it } from 'vitest';
import { freshStoreEachTest, storeTargets } from '../../../test/support/stores.js';
import { DEFAULT_JOB_POLICY, DEFAULT_JOB_STREAM_BOUNDS, type NewJob } from '../../domain/job.js';
import type { Store } from '../store.js';

const RETAIN = 60_000;

const newJob = (id: string, over: Partial<NewJob> = {}): NewJob => ({
  id,
  endpointId: 'ep-1',
  ownerId: 'owner-1',
  input: JSON.stringify({ n: id }),
  webhook: null,
  policy: DEFAULT_JOB_POLICY,
  sync: false,
  createdAt: 1_000,
  ...over,
});

describe.each(storeTargets())('the jobs store on $name', (target) => {
  let store: Store;
  let sibling: Store;
  freshStoreEachTest(target, (opened) => {
    ({ store, sibling } = opened);
  });

  const enqueue = async (...jobs: NewJob[]) => {
    for (const job of jobs) await store.jobs.enqueue(job, RETAIN);
  };
  const take = (workerId: string, max = 1, cap = 10, now = 2_000, on = store) =>
    on.jobs.take({ endpointId: 'ep-1', workerId, max, cap, now });

  it('keeps a job IN_QUEUE as submitted, found only under its own endpoint', async () => {
    await enqueue(newJob('j-1', { webhook: 'https://example.com/hook', sync: true }));
    expect(await store.jobs.get('ep-1', 'j-1')).toEqual({
      ...newJob('j-1', { webhook: 'https://example.com/hook', sync: true }),
      status: 'IN_QUEUE',
      output: null,
      error: null,
      workerId: null,
      attempts: 0,
      startedAt: null,
      completedAt: null,
    });
    expect(await store.jobs.get('ep-2', 'j-1')).toBeUndefined();
    expect(await store.jobs.get('ep-1', 'j-none')).toBeUndefined();
  });

  it("takes the endpoint's oldest jobs first, up to the batch and the worker's cap", async () => {
    await enqueue(
      newJob('j-3', { createdAt: 3 }),
      newJob('j-1', { createdAt: 1 }),
      newJob('j-2', { createdAt: 2 }),
      newJob('j-other', { createdAt: 0, endpointId: 'ep-2' }),
    );
    const first = await take('w-1', 2, 3);
    expect(first.map((j) => j.id)).toEqual(['j-1', 'j-2']);
    expect(first[0]).toMatchObject({ status: 'IN_PROGRESS', workerId: 'w-1', attempts: 1, startedAt: 2_000 });
    // The cap counts what it holds: one more room only.
    expect((await take('w-1', 5, 3)).map((j) => j.id)).toEqual(['j-3']);
    expect(await take('w-1', 5, 3)).toEqual([]);
    expect(await take('w-2', 5, 3)).toEqual([]);
  });

  it('hands each job to exactly one worker when many take at once, from two replicas', async () => {
    await enqueue(...Array.from({ length: 40 }, (_, i) => newJob(`j-${i}`, { createdAt: i })));
    const takes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => take(`w-${i % 10}`, 3, 4, 2_000, i % 2 === 0 ? store : sibling)),
    );
    const ids = takes.flat().map((j) => j.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(40);
    const counts = await store.jobs.counts('ep-1');
    expect(counts).toMatchObject({ IN_QUEUE: 0, IN_PROGRESS: 40 });
  });

  it("holds one worker's cap across replicas taking for it at the same time", async () => {
    await enqueue(...Array.from({ length: 10 }, (_, i) => newJob(`j-${i}`, { createdAt: i })));
    const takes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => take('w-1', 1, 2, 2_000, i % 2 === 0 ? store : sibling)),
    );
    expect(takes.flat().length).toBe(2);
  });

  it("applies a worker's result once, accepts its duplicate and refuses another worker's", async () => {
    await enqueue(newJob('j-1'));
    await take('w-1');
    const result = {
      jobId: 'j-1',
      workerId: 'w-1',
      status: 'COMPLETED' as const,
      output: '{"ok":true}',
      error: null,
      now: 5_000,
    };
    const applied = await store.jobs.complete(result);
    expect(applied.outcome).toBe('applied');
    expect(applied.job).toMatchObject({ status: 'COMPLETED', output: '{"ok":true}', completedAt: 5_000 });
    expect((await store.jobs.complete({ ...result, now: 6_000 })).outcome).toBe('duplicate');
    expect((await store.jobs.complete({ ...result, workerId: 'w-2' })).outcome).toBe('refused');
    expect((await store.jobs.complete({ ...result, jobId: 'j-none' })).outcome).toBe('refused');
    expect((await store.jobs.get('ep-1', 'j-1'))?.completedAt).toBe(5_000);
  });

  it('applies results sent together each once: a duplicate among them accepted, a stranger refused', async () => {
    await enqueue(...Array.from({ length: 6 }, (_, i) => newJob(`j-${i}`, { createdAt: i })));
    await take('w-1', 3);
    await take('w-2', 3);
    const result = (jobId: string, workerId: string, now = 5_000) => ({
      jobId,
      workerId,
      status: 'COMPLETED' as const,
      output: `"${jobId}"`,
      error: null,
      now,
    });
    const outcomes = await Promise.all([
      store.jobs.complete(result('j-0', 'w-1')),
      store.jobs.complete(result('j-1', 'w-1')),
      store.jobs.complete(result('j-0', 'w-1', 5_500)),
      store.jobs.complete(result('j-3', 'w-1')),
      store.jobs.complete(result('j-3', 'w-2')),
      store.jobs.complete(result('j-none', 'w-2')),
    ]);
    expect(outcomes.map((o) => o.outcome)).toEqual([
      'applied',
      'applied',
      'duplicate',
      'refused',
      'applied',
      'refused',
    ]);
    expect(outcomes[4]?.job).toMatchObject({
      id: 'j-3',
      status: 'COMPLETED',
      output: '"j-3"',
      workerId: 'w-2',
    });
    expect((await store.jobs.get('ep-1', 'j-0'))?.completedAt).toBe(5_000);
    expect(await store.jobs.counts('ep-1')).toMatchObject({ COMPLETED: 3, IN_PROGRESS: 3 });
  });

  it('refuses the result of a worker whose job went back to the queue, and never runs a COMPLETED job again', async () => {
    await enqueue(newJob('j-1'));
    await take('w-1');
    await store.jobs.requeueWorker('w-1', 'worker removed', { maxAttempts: 3, now: 3_000 });
    const late = { jobId: 'j-1', workerId: 'w-1', status: 'COMPLETED' as const, output: '1', error: null };
    expect((await store.jobs.complete({ ...late, now: 3_500 })).outcome).toBe('refused');
    expect((await take('w-2')).map((j) => j.id)).toEqual(['j-1']);
    expect((await store.jobs.complete({ ...late, workerId: 'w-2', now: 4_000 })).outcome).toBe('applied');
    expect(await store.jobs.requeueWorker('w-2', 'worker removed', { maxAttempts: 3, now: 5_000 })).toEqual({
      requeued: [],
      failed: [],
      endpoints: [],
      perEndpoint: {},
      retried: {},
    });
    expect(await take('w-3')).toEqual([]);
  });

  it('keeps progress as the output and consumes streamed chunks on read, for the holder only', async () => {
    await enqueue(newJob('j-1'));
    await take('w-1');
    expect(await store.jobs.progress('j-1', 'w-1', '"half"', 2_500)).toBe(true);
    expect(await store.jobs.progress('j-1', 'w-2', '"no"', 2_500)).toBe(false);
    expect((await store.jobs.get('ep-1', 'j-1'))?.output).toBe('"half"');
    const bounds = DEFAULT_JOB_STREAM_BOUNDS;
    expect(await store.jobs.appendChunk('j-1', 'w-1', '{"output":"a"}', 2_600, bounds)).toBe('kept');
    expect(await store.jobs.appendChunk('j-1', 'w-1', '{"output":"b"}', 2_700, bounds)).toBe('kept');
    expect(await store.jobs.appendChunk('j-1', 'w-2', '{"output":"x"}', 2_700, bounds)).toBe('refused');
    expect(await store.jobs.takeChunks('j-1', bounds.readBytes)).toEqual([
      '{"output":"a"}',
      '{"output":"b"}',
    ]);
    expect(await store.jobs.takeChunks('j-1', bounds.readBytes)).toEqual([]);
  });

  it('cancels a held job through the stop channel until its pings stop listing it', async () => {
    await enqueue(newJob('j-1'), newJob('j-2', { createdAt: 2_000 }));
    await take('w-1');
    expect((await store.jobs.cancel('ep-1', 'j-1', 3_000))?.status).toBe('CANCELLED');
    expect((await store.jobs.cancel('ep-1', 'j-2', 3_000))?.status).toBe('CANCELLED');
    expect(await store.jobs.cancel('ep-2', 'j-1', 3_000)).toBeUndefined();
    expect(await store.jobs.stopsFor('w-1')).toEqual(['j-1']);
    expect(await store.jobs.overdueStops(3_000)).toEqual([]);
    expect(await store.jobs.overdueStops(3_001)).toEqual([{ workerId: 'w-1', endpointId: 'ep-1' }]);
    await store.jobs.heartbeat('w-1', ['j-1'], 3_500);
    expect(await store.jobs.stopsFor('w-1')).toEqual(['j-1']);
    await store.jobs.heartbeat('w-1', [], 4_000);
    expect(await store.jobs.stopsFor('w-1')).toEqual([]);
  });

  it('retries FAILED and TIMED_OUT jobs only', async () => {
    await enqueue(newJob('j-1'), newJob('j-2'));
    await take('w-1', 2);
    await store.jobs.complete({
      jobId: 'j-1',
      workerId: 'w-1',
      status: 'FAILED',
      output: null,
      error: 'boom',
      now: 3_000,
    });
    await store.jobs.complete({
      jobId: 'j-2',
      workerId: 'w-1',
      status: 'COMPLETED',
      output: '1',
      error: null,
      now: 3_000,
    });
    const retried = await store.jobs.retry('ep-1', 'j-1', 4_000);
    expect(retried?.retried).toBe(true);
    expect(retried?.job).toMatchObject({ status: 'IN_QUEUE', error: null, workerId: null, createdAt: 4_000 });
    expect((await store.jobs.retry('ep-1', 'j-2', 4_000))?.retried).toBe(false);
    expect(await store.jobs.retry('ep-1', 'j-none', 4_000)).toBeUndefined();
  });

  it('purges only the queue', async () => {
    await enqueue(newJob('j-1'), newJob('j-2'), newJob('j-3'), newJob('j-4', { endpointId: 'ep-2' }));
    await take('w-1');
    expect((await store.jobs.queuedEndpoints()).sort()).toEqual(['ep-1', 'ep-2']);
    expect(await store.jobs.purgeQueue('ep-1')).toBe(2);
    expect(await store.jobs.queuedEndpoints()).toEqual(['ep-2']);
    expect(await store.jobs.counts('ep-1')).toMatchObject({ IN_QUEUE: 0, IN_PROGRESS: 1 });
    expect((await store.jobs.counts('ep-2')).IN_QUEUE).toBe(1);
  });

  it('requeues a worker’s jobs up to the attempt limit, then FAILS them naming the cause', async () => {
    await enqueue(newJob('j-1'));
    for (let attempt = 1; attempt <= 2; attempt++) {
      await take(`w-${attempt}`);
      const { requeued } = await store.jobs.requeueWorker(`w-${attempt}`, 'worker died', {
        maxAttempts: 3,
        now: 3_000,
      });
      expect(requeued).toEqual(['j-1']);
    }
    await take('w-3');
    const { failed } = await store.jobs.requeueWorker('w-3', 'worker died', { maxAttempts: 3, now: 3_000 });
    expect(failed.map((j) => [j.id, j.status, j.error])).toEqual([
      ['j-1', 'FAILED', 'worker died (taken 3 times)'],
    ]);
  });

  it('takes back the attempt of a job its worker never showed it had, when the worker says it holds nothing (issue 33)', async () => {
    await enqueue(newJob('j-1'), newJob('j-2'), newJob('j-3'));
    await take('w-1', 3);
    await store.jobs.heartbeat('w-1', ['j-2'], 2_500);
    await store.jobs.progress('j-3', 'w-1', '"half"', 2_600);
    const back = await store.jobs.requeueWorker('w-1', 'holds nothing', {
      maxAttempts: 3,
      now: 3_000,
      unseenUncounted: true,
    });
    expect(back.requeued.sort()).toEqual(['j-1', 'j-2', 'j-3']);
    expect(back.retried).toEqual({ 'ep-1': 2 });
    const attempts = async (id: string) => (await store.jobs.get('ep-1', id))?.attempts;
    expect([await attempts('j-1'), await attempts('j-2'), await attempts('j-3')]).toEqual([0, 1, 1]);
    // Spared up to the attempt limit of such returns, then counted.
    for (let lost = 2; lost <= 4; lost += 1) {
      await take('w-1', 3);
      await store.jobs.requeueWorker('w-1', 'holds nothing', {
        maxAttempts: 3,
        now: 3_000,
        unseenUncounted: true,
      });
    }
    expect(await attempts('j-1')).toBe(1);
  });

  it('keeps jobs a worker says it still holds, and requeues jobs no ping has shown for a while', async () => {
    await enqueue(newJob('j-1'), newJob('j-2'));
    await take('w-1', 2);
    expect(
      (await store.jobs.requeueWorker('w-1', 'not held', { maxAttempts: 3, now: 2_500, except: ['j-2'] }))
        .requeued,
    ).toEqual(['j-1']);
    await store.jobs.heartbeat('w-1', ['j-2'], 9_000);
    expect(
      (await store.jobs.requeueUnseen(8_000, 'no ping', { maxAttempts: 3, now: 9_500 })).requeued,
    ).toEqual([]);
    expect(
      (await store.jobs.requeueUnseen(9_001, 'no ping', { maxAttempts: 3, now: 9_500 })).requeued,
    ).toEqual(['j-2']);
  });

  it('says how many requeued jobs each endpoint got back', async () => {
    await enqueue(newJob('j-1'), newJob('j-2'), newJob('j-3', { endpointId: 'ep-2' }));
    await take('w-1', 2);
    await store.jobs.take({ endpointId: 'ep-2', workerId: 'w-2', max: 1, cap: 1, now: 2_000 });
    const lost = await store.jobs.requeueUnseen(3_000, 'no ping', { maxAttempts: 3, now: 3_000 });
    expect(lost.perEndpoint).toEqual({ 'ep-1': 2, 'ep-2': 1 });
    expect(lost.endpoints.sort()).toEqual(['ep-1', 'ep-2']);
  });

  it('times out jobs past their ttl or execution timeout and deletes finished ones past retention', async () => {
    const policy = { executionTimeoutMs: 5_000, ttlMs: 20_000, lowPriority: false };
    await enqueue(newJob('j-exec', { policy }), newJob('j-ttl', { policy, createdAt: 1_500 }));
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 5, now: 1_600 });
    const early = await store.jobs.expire(6_000);
    expect(early.timedOut).toEqual([]);
    const { timedOut } = await store.jobs.expire(6_600);
    expect(timedOut.map((j) => [j.id, j.status, j.error])).toEqual([
      ['j-exec', 'TIMED_OUT', 'executionTimeout'],
    ]);
    expect(await store.jobs.stopsFor('w-1')).toEqual(['j-exec']);
    const later = await store.jobs.expire(21_500);
    expect(later.timedOut.map((j) => [j.id, j.error])).toEqual([['j-ttl', 'ttl']]);
    expect(later.deleted).toBe(0);
    expect((await store.jobs.expire(6_600 + RETAIN)).deleted).toBe(1);
    expect(await store.jobs.get('ep-1', 'j-exec')).toBeUndefined();
    expect(await store.jobs.get('ep-1', 'j-ttl')).toBeDefined();
  });

  it('lists recent jobs newest first, by status, and counts them', async () => {
    await enqueue(
      newJob('j-1', { createdAt: 1 }),
      newJob('j-2', { createdAt: 2 }),
      newJob('j-3', { createdAt: 3 }),
    );
    await take('w-1');
    expect((await store.jobs.list('ep-1', { limit: 2 })).map((j) => j.id)).toEqual(['j-3', 'j-2']);
    expect((await store.jobs.list('ep-1', { limit: 10, status: 'IN_PROGRESS' })).map((j) => j.id)).toEqual([
      'j-1',
    ]);
    expect(await store.jobs.counts('ep-1')).toEqual({
      IN_QUEUE: 2,
      IN_PROGRESS: 1,
      COMPLETED: 0,
      FAILED: 0,
      CANCELLED: 0,
      TIMED_OUT: 0,
    });
  });

  it('signals queued jobs that may add a worker, and jobs in progress per worker', async () => {
    const low = { ...DEFAULT_JOB_POLICY, lowPriority: true };
    await enqueue(
      newJob('j-1', { createdAt: 10 }),
      newJob('j-2', { createdAt: 20 }),
      newJob('j-3', { createdAt: 30 }),
      newJob('j-low', { createdAt: 40, policy: low }),
    );
    await take('w-1');
    const signal = (await store.jobs.queueSignals()).get('ep-1');
    // j-1 was taken; what is left queued and not low-priority: j-2, j-3; the low-priority one apart.
    expect(signal).toEqual({ queued: 2, lowPriorityQueued: 1, oldestQueuedAt: 20, inProgress: { 'w-1': 1 } });
    // An endpoint with low-priority jobs alone is there, with nothing that adds a worker.
    await enqueue(newJob('j-low-2', { endpointId: 'ep-2', policy: low }));
    expect((await store.jobs.queueSignals()).get('ep-2')).toEqual({
      queued: 0,
      lowPriorityQueued: 1,
      oldestQueuedAt: null,
      inProgress: {},
    });
  });

  it('remembers when each queue worker was last seen, on any replica, and forgets old ones', async () => {
    expect(await store.jobs.workerSeenAt('w-1')).toBeUndefined();
    await store.jobs.workerSeen('w-1', 'ep-1', 1_000);
    await sibling.jobs.workerSeen('w-1', 'ep-1', 2_000);
    expect(await store.jobs.workerSeenAt('w-1')).toBe(2_000);
    await store.jobs.forgetWorkers(2_001);
    expect(await store.jobs.workerSeenAt('w-1')).toBeUndefined();
  });

  it('shares one server secret between replicas', async () => {
    const a = await store.serverSecrets.getOrCreate('worker-tokens', () => 'first', 1);
    const b = await sibling.serverSecrets.getOrCreate('worker-tokens', () => 'second', 2);
    expect([a, b]).toEqual(['first', 'first']);
  });
});
