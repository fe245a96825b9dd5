/**
 * A job's stream is bounded, over real HTTP, as issue 29 item 5 tried it at a small scale: a worker posting 1 MB
 * chunks is refused past the job's bound with 413 STREAM_LIMIT_REACHED (the reason phrase says why: the RunPod SDK
 * logs it), and a client's read returns a bounded batch, the rest at the next read.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type JobRoutesHarness, startJobRoutes } from '../../test/support/job-routes.js';

describe("a job's stream, bounded", () => {
  let jobs: JobRoutesHarness | undefined;
  afterEach(async () => {
    await jobs?.close();
    jobs = undefined;
  });

  const MB = 1_000_000;
  /** A chunk of `bytes` bytes of JSON. */
  const chunk = (bytes: number, mark: string) => JSON.stringify({ output: mark.padEnd(bytes - 13, '.') });

  it('refuses 1 MB chunks past the bound, and one read returns a bounded batch, the rest at the next', async () => {
    jobs = await startJobRoutes({
      workerOptions: { stream: { maxBytes: 8 * MB, maxChunks: 1000, readBytes: 2.5 * MB } },
      serviceOptions: () => ({ streamReadBytes: 2.5 * MB }),
    });
    const { endpoint } = jobs;
    const run = await jobs.call('POST', `/v2/${endpoint.id}/run`, { body: { input: {} } });
    const jobId = run.body.id as string;
    await jobs.store.jobs.take({
      endpointId: endpoint.id,
      workerId: 'w-1',
      max: 1,
      cap: 1,
      now: jobs.timers.now,
    });
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(await jobs.stream('w-1', jobId, chunk(MB, `c${i}`)));
    expect(answers.map((a) => a.status)).toEqual([...Array(8).fill(200), 413, 413, 413, 413]);
    expect(answers[8]?.body).toMatchObject({
      reason: 'STREAM_LIMIT_REACHED',
      metadata: { maxBytes: 8 * MB, maxChunks: 1000 },
    });
    expect(answers[8]?.reason).toContain('has streamed its limit of 8000000 bytes or 1000 chunks');
    // Past the bound, a large chunk is refused before its body is read: its answer comes though none is sent.
    const unread = await jobs.stream('w-1', jobId, chunk(MB, 'unsent'), { withholdBody: true });
    expect(unread.status).toBe(413);
    expect(unread.body).toMatchObject({ reason: 'STREAM_LIMIT_REACHED' });
    // The job goes on: its worker still holds it, and its result is taken.
    expect((await jobs.store.jobs.get(endpoint.id, jobId))?.status).toBe('IN_PROGRESS');

    const reads: string[][] = [];
    for (;;) {
      const read = await jobs.call('GET', `/v2/${endpoint.id}/stream/${jobId}?wait=0`);
      expect(read.status).toBe(200);
      const marks = (read.body.stream as { output: string }[]).map((item) => item.output.replace(/\.+$/, ''));
      if (marks.length === 0) break;
      reads.push(marks);
    }
    expect(reads).toEqual([
      ['c0', 'c1'],
      ['c2', 'c3'],
      ['c4', 'c5'],
      ['c6', 'c7'],
    ]);
  });

  it('refuses a chunk past the count of chunks, and gives a read one chunk larger than its batch', async () => {
    jobs = await startJobRoutes({
      workerOptions: { stream: { maxBytes: 8 * MB, maxChunks: 3, readBytes: 100 } },
      serviceOptions: () => ({ streamReadBytes: 100 }),
    });
    const { endpoint } = jobs;
    const jobId = (await jobs.call('POST', `/v2/${endpoint.id}/run`, { body: { input: {} } })).body
      .id as string;
    await jobs.store.jobs.take({
      endpointId: endpoint.id,
      workerId: 'w-1',
      max: 1,
      cap: 1,
      now: jobs.timers.now,
    });
    const statuses = [];
    for (const size of [500, 20, 20, 20])
      statuses.push((await jobs.stream('w-1', jobId, chunk(size, 'x'))).status);
    expect(statuses).toEqual([200, 200, 200, 413]);
    const first = await jobs.call('GET', `/v2/${endpoint.id}/stream/${jobId}?wait=0`);
    expect(first.body.stream).toHaveLength(1);
    const second = await jobs.call('GET', `/v2/${endpoint.id}/stream/${jobId}?wait=0`);
    expect(second.body.stream).toHaveLength(2);
  });
});
