import { describe, expect, it } from 'vitest';
import { sampleJob } from '../../../test/support/fixtures.js';
import { freshStoreEachTest, storeTargets } from '../../../test/support/stores.js';
import type { NewJob } from '../../domain/job.js';
import type { JobUse } from '../../domain/quota.js';
import type { Store } from '../store.js';

const RETAIN = 60_000;

const newJob = (id: string, over: Partial<NewJob> = {}): NewJob =>
  sampleJob(id, 'ep-1', { ownerId: 'owner-1', input: JSON.stringify({ n: id }), createdAt: 1_000, ...over });

describe.each(storeTargets())('what bounds a tenant in the jobs store, on $name', (target) => {
  let store: Store;
  freshStoreEachTest(target, (opened) => {
    ({ store } = opened);
  });

  const bytes = (text: string) => Buffer.byteLength(text);

  it("counts an owner's unfinished jobs and the bytes of every job kept, inputs and outputs", async () => {
    const input = JSON.stringify({ prompt: 'é'.repeat(100) });
    await store.jobs.enqueue(newJob('j-1', { input }), RETAIN);
    await store.jobs.enqueue(newJob('j-2', { input }), RETAIN);
    await store.jobs.enqueue(newJob('j-other', { ownerId: 'owner-2', endpointId: 'ep-2' }), RETAIN);
    expect(await store.jobs.ownerUse('owner-1')).toEqual({ queuedJobs: 2, jobBytes: 2 * bytes(input) });
    const [taken] = await store.jobs.take({
      endpointId: 'ep-1',
      workerId: 'w-1',
      max: 1,
      cap: 1,
      now: 2_000,
    });
    const progress = '"half way"';
    await store.jobs.progress(taken?.id ?? '', 'w-1', progress, 2_100);
    expect(await store.jobs.ownerUse('owner-1')).toEqual({
      queuedJobs: 2,
      jobBytes: 2 * bytes(input) + bytes(progress),
    });
    const output = JSON.stringify({ image: 'x'.repeat(5_000) });
    await store.jobs.complete({
      jobId: taken?.id ?? '',
      workerId: 'w-1',
      status: 'COMPLETED',
      output,
      error: null,
      now: 3_000,
    });
    // Finished and kept: it counts its bytes, no longer as a job not finished.
    expect(await store.jobs.ownerUse('owner-1')).toEqual({
      queuedJobs: 1,
      jobBytes: 2 * bytes(input) + bytes(output),
    });
    // Its retention over, it takes nothing.
    await store.jobs.expire(3_000 + RETAIN);
    expect(await store.jobs.ownerUse('owner-1')).toEqual({ queuedJobs: 1, jobBytes: bytes(input) });
    expect(await store.jobs.ownerUse('owner-none')).toEqual({ queuedJobs: 0, jobBytes: 0 });
  });

  it('queues a job only when the admit check passes, with the use before it', async () => {
    const seen: JobUse[] = [];
    await store.jobs.enqueue(newJob('j-1'), RETAIN, (use) => seen.push(use));
    await expect(
      store.jobs.enqueue(newJob('j-2'), RETAIN, (use) => {
        seen.push(use);
        throw new Error('over the quota');
      }),
    ).rejects.toThrow('over the quota');
    expect(seen).toEqual([
      { queuedJobs: 0, jobBytes: 0 },
      { queuedJobs: 1, jobBytes: bytes(newJob('j-1').input) },
    ]);
    expect(await store.jobs.get('ep-1', 'j-2')).toBeUndefined();
  });

  it("admits an owner's concurrent submissions one after the other: none passes the last free place twice", async () => {
    const limit = 3;
    const attempts = Array.from({ length: 8 }, (_, i) =>
      store.jobs.enqueue(newJob(`j-${i}`), RETAIN, (use) => {
        if (use.queuedJobs + 1 > limit) throw new Error('over the quota');
      }),
    );
    const outcomes = await Promise.allSettled(attempts);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(limit);
    expect((await store.jobs.ownerUse('owner-1')).queuedJobs).toBe(limit);
  });

  it("bounds a job's stream by bytes and by chunks in all, read or not, and reads it in bounded batches", async () => {
    await store.jobs.enqueue(newJob('j-1'), RETAIN);
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 2_000 });
    const bounds = { maxBytes: 100, maxChunks: 4 };
    const forty = `"${'a'.repeat(38)}"`;
    expect(await store.jobs.appendChunk('j-1', 'w-1', forty, 2_100, bounds)).toBe('kept');
    expect(await store.jobs.appendChunk('j-1', 'w-1', forty, 2_200, bounds)).toBe('kept');
    expect(await store.jobs.appendChunk('j-1', 'w-1', forty, 2_300, bounds)).toBe('full');
    // Reading frees no room: the bound is on what the job streamed in all.
    expect(await store.jobs.takeChunks('j-1', 1_000)).toEqual([forty, forty]);
    expect(await store.jobs.appendChunk('j-1', 'w-1', forty, 2_400, bounds)).toBe('full');
    expect(await store.jobs.appendChunk('j-1', 'w-1', '"b"', 2_500, bounds)).toBe('kept');
    expect(await store.jobs.appendChunk('j-1', 'w-1', '"c"', 2_600, bounds)).toBe('kept');
    expect(await store.jobs.appendChunk('j-1', 'w-1', '"d"', 2_700, bounds)).toBe('full');
    expect(await store.jobs.appendChunk('j-1', 'w-2', '"e"', 2_700, bounds)).toBe('refused');
    // A batch of 3 bytes: one chunk, then the next.
    expect(await store.jobs.takeChunks('j-1', 3)).toEqual(['"b"']);
    expect(await store.jobs.takeChunks('j-1', 3)).toEqual(['"c"']);
    expect(await store.jobs.takeChunks('j-1', 3)).toEqual([]);
  });

  it("retries a job only if the owner's use, seen in its turn, admits it", async () => {
    await store.jobs.enqueue(newJob('j-1'), RETAIN);
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 2_000 });
    await store.jobs.complete({
      jobId: 'j-1',
      workerId: 'w-1',
      status: 'FAILED',
      output: null,
      error: 'x',
      now: 2_100,
    });
    const seen: JobUse[] = [];
    const refuse = (use: JobUse) => {
      seen.push(use);
      throw new Error('over the quota');
    };
    await expect(store.jobs.retry('ep-1', 'j-1', 2_200, refuse)).rejects.toThrow('over the quota');
    expect(seen).toEqual([{ queuedJobs: 0, jobBytes: bytes(JSON.stringify({ n: 'j-1' })) }]);
    expect((await store.jobs.get('ep-1', 'j-1'))?.status).toBe('FAILED');
    const retried = await store.jobs.retry('ep-1', 'j-1', 2_300, () => {});
    expect(retried).toMatchObject({ retried: true, job: { status: 'IN_QUEUE' } });
    // Not retryable: the admission is not asked.
    expect(await store.jobs.retry('ep-1', 'j-1', 2_400, refuse)).toMatchObject({ retried: false });
    expect(seen).toHaveLength(1);
  });

  it("says before a chunk's body is read what appending it would say", async () => {
    await store.jobs.enqueue(newJob('j-1'), RETAIN);
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 2_000 });
    const bounds = { maxBytes: 100, maxChunks: 3 };
    expect(await store.jobs.chunkFit('j-1', 'w-1', 100, 2_100, bounds)).toBe('fits');
    expect(await store.jobs.chunkFit('j-1', 'w-1', 101, 2_200, bounds)).toBe('full');
    expect(await store.jobs.chunkFit('j-1', 'w-2', 10, 2_300, bounds)).toBe('refused');
    // Asking keeps nothing: the whole budget is still there.
    expect(await store.jobs.appendChunk('j-1', 'w-1', `"${'a'.repeat(58)}"`, 2_400, bounds)).toBe('kept');
    expect(await store.jobs.chunkFit('j-1', 'w-1', 41, 2_500, bounds)).toBe('full');
    expect(await store.jobs.chunkFit('j-1', 'w-1', 40, 2_600, bounds)).toBe('fits');
    expect(await store.jobs.appendChunk('j-1', 'w-1', '"b"', 2_700, bounds)).toBe('kept');
    expect(await store.jobs.appendChunk('j-1', 'w-1', '"c"', 2_800, bounds)).toBe('kept');
    // No chunk left, however small.
    expect(await store.jobs.chunkFit('j-1', 'w-1', 1, 2_900, bounds)).toBe('full');
  });
});
