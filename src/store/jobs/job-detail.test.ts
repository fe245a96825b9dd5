import { describe, expect, it } from 'vitest';
import { freshStoreEachTest, storeTargets } from '../../../test/support/stores.js';
import { DEFAULT_JOB_POLICY, DEFAULT_JOB_STREAM_BOUNDS, type NewJob } from '../../domain/job.js';
import type { Store } from '../store.js';

const job = (id: string, input: string): NewJob => ({
  id,
  endpointId: 'ep-1',
  ownerId: 'owner-1',
  input,
  webhook: null,
  policy: DEFAULT_JOB_POLICY,
  sync: false,
  createdAt: 1_000,
});

const BOUNDS = { maxChars: 10, maxChunks: 2, maxChunkChars: 4 };

describe.each(storeTargets())("a job's detail and listing on $name", (target) => {
  let store: Store;
  freshStoreEachTest(target, (opened) => {
    ({ store } = opened);
  });

  it('lists jobs without their inputs and outputs', async () => {
    await store.jobs.enqueue(job('j-1', '{"big":"x"}'), 60_000);
    const [listed] = await store.jobs.list('ep-1', { limit: 10 });
    expect(listed).toMatchObject({ id: 'j-1', status: 'IN_QUEUE', endpointId: 'ep-1' });
    expect(listed).not.toHaveProperty('input');
    expect(listed).not.toHaveProperty('output');
  });

  it('cuts the input and output to the bound, with their sizes in bytes, and is found only on its endpoint', async () => {
    // 12 characters, 14 bytes (two of them are two bytes each in UTF-8).
    const input = '{"a":"ééxyz"}';
    await store.jobs.enqueue(job('j-1', input), 60_000);
    expect(await store.jobs.detail('ep-2', 'j-1', BOUNDS)).toBeUndefined();
    expect(await store.jobs.detail('ep-1', 'j-none', BOUNDS)).toBeUndefined();
    const queued = await store.jobs.detail('ep-1', 'j-1', BOUNDS);
    expect(queued).toMatchObject({
      id: 'j-1',
      status: 'IN_QUEUE',
      input: { text: input.slice(0, 10), bytes: 15, truncated: true },
      output: null,
      chunks: [],
      chunkCount: 0,
    });
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 2_000 });
    await store.jobs.complete({
      jobId: 'j-1',
      workerId: 'w-1',
      status: 'COMPLETED',
      output: '"short"',
      error: null,
      now: 3_000,
    });
    const done = await store.jobs.detail('ep-1', 'j-1', BOUNDS);
    expect(done).toMatchObject({
      status: 'COMPLETED',
      workerId: 'w-1',
      output: { text: '"short"', bytes: 7, truncated: false },
    });
  });

  it('peeks at the chunks not yet read, without consuming them', async () => {
    await store.jobs.enqueue(job('j-1', '{}'), 60_000);
    await store.jobs.take({ endpointId: 'ep-1', workerId: 'w-1', max: 1, cap: 1, now: 2_000 });
    for (const chunk of ['"one"', '"2"', '"three"'])
      expect(await store.jobs.appendChunk('j-1', 'w-1', chunk, 2_500, DEFAULT_JOB_STREAM_BOUNDS)).toBe(
        'kept',
      );
    const detail = await store.jobs.detail('ep-1', 'j-1', BOUNDS);
    expect(detail?.chunkCount).toBe(3);
    expect(detail?.chunks).toEqual([
      { text: '"one', bytes: 5, truncated: true },
      { text: '"2"', bytes: 3, truncated: false },
    ]);
    expect(await store.jobs.takeChunks('j-1', 1024)).toEqual(['"one"', '"2"', '"three"']);
    expect((await store.jobs.detail('ep-1', 'j-1', BOUNDS))?.chunkCount).toBe(0);
  });
});
