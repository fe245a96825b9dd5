// The owner's jobs routes over the real API, store and job service: counts and listings without inputs or outputs,
// one job's detail with a huge input cut and its size said, cancel and retry through the jobs core with the API's
// refusals, and another owner's endpoint (or no key) refused.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApi, originalClientCreateBody, type TestApi } from '../../test/support/api.js';
import { testJobService } from '../../test/support/job-service.js';
import { storeTargets } from '../../test/support/stores.js';
import { jobActionsOf } from '../app/job-actions.js';
import { DEFAULT_JOB_POLICY } from '../domain/job.js';
import { JOB_DETAIL_BOUNDS } from '../domain/job-detail.js';
import type { JobService } from '../jobs/job-service.js';
import type { Store } from '../store/store.js';

describe.each(storeTargets())("an endpoint's jobs on the API on $name", (target) => {
  let api: TestApi;
  let store: Store;
  let service: JobService;
  let dispose: () => Promise<void>;
  beforeEach(async () => {
    const opened = await target.open();
    ({ store, dispose } = opened);
    service = testJobService(store);
    api = await createTestApi(store, { jobActions: jobActionsOf(service) });
  });
  afterEach(async () => {
    await api.app.close();
    await dispose();
  });

  const setUp = async () => {
    const created = await api.call('POST', 'endpoint/create', originalClientCreateBody());
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    const endpoint = (await store.endpoints.getMany([id]))[0]?.endpoint;
    if (!endpoint) throw new Error('the endpoint was not stored');
    const submit = (input: unknown) => {
      const text = JSON.stringify(input);
      return service.submit(
        endpoint,
        { input: text, inputBytes: Buffer.byteLength(text), webhook: null, policy: DEFAULT_JOB_POLICY },
        false,
      );
    };
    return { id, submit };
  };
  /** Takes the endpoint's oldest queued job on worker w-1 and ends it as `status`. */
  const finishOldest = async (id: string, status: 'COMPLETED' | 'FAILED', output: string | null) => {
    const [taken] = await store.jobs.take({
      endpointId: id,
      workerId: 'w-1',
      max: 1,
      cap: 5,
      now: Date.now(),
    });
    if (!taken) throw new Error('no job to take');
    await store.jobs.complete({
      jobId: taken.id,
      workerId: 'w-1',
      status,
      output,
      error: status === 'FAILED' ? 'the handler raised' : null,
      now: Date.now(),
    });
    return taken.id;
  };

  it('counts jobs by status and lists the recent ones, newest first, without inputs or outputs', async () => {
    const { id, submit } = await setUp();
    const first = await submit({ n: 1 });
    await finishOldest(id, 'COMPLETED', '{"ok":true}');
    const second = await submit({ n: 2 });
    const third = await submit({ n: 3 });

    const all = await api.call('GET', `endpoint/jobs?id=${id}`);
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.id).toBe(id);
    expect(all.body.counts).toEqual({
      IN_QUEUE: 2,
      IN_PROGRESS: 0,
      COMPLETED: 1,
      FAILED: 0,
      CANCELLED: 0,
      TIMED_OUT: 0,
    });
    expect(all.body.jobs).toHaveLength(3);
    const done = all.body.jobs.find((j: { id: string }) => j.id === first.id);
    expect(done).toEqual({
      id: first.id,
      status: 'COMPLETED',
      createdAt: expect.any(String),
      startedAt: expect.any(String),
      completedAt: expect.any(String),
      delayTime: expect.any(Number),
      executionTime: expect.any(Number),
      workerId: 'w-1',
      attempts: 1,
      error: null,
    });
    expect(JSON.stringify(all.body)).not.toContain('"n":');

    const queued = await api.call('GET', `endpoint/jobs?id=${id}&status=IN_QUEUE&limit=1`);
    // Newest first: the third, or the second where both were submitted in the same millisecond.
    const queuedTimes = Object.fromEntries(
      all.body.jobs.map((j: { id: string; createdAt: string }) => [j.id, Date.parse(j.createdAt)]),
    );
    const [newest] = queued.body.jobs.map((j: { id: string }) => j.id);
    expect([second.id, third.id]).toContain(newest);
    expect(queuedTimes[newest]).toBe(Math.max(queuedTimes[second.id], queuedTimes[third.id]));
    expect(queued.body.counts.IN_QUEUE).toBe(2);

    const bad = await api.call('GET', `endpoint/jobs?id=${id}&status=DONE`);
    expect([bad.status, bad.body.reason, bad.body.metadata.field]).toEqual([400, 'INVALID_QUERY', 'status']);
  });

  it('opens one job with its input and output, cutting a huge input and saying its size', async () => {
    const { id, submit } = await setUp();
    const big = 'x'.repeat(JOB_DETAIL_BOUNDS.maxChars + 100);
    const job = await submit({ prompt: big });
    const queued = await api.call('GET', `endpoint/job?id=${id}&job=${job.id}`);
    expect(queued.status, JSON.stringify(queued.body)).toBe(200);
    const inputText = JSON.stringify({ prompt: big });
    expect(queued.body.job).toMatchObject({
      id: job.id,
      status: 'IN_QUEUE',
      input: { bytes: inputText.length, truncated: true },
      output: null,
      chunks: [],
      chunkCount: 0,
      webhook: null,
      policy: { executionTimeout: DEFAULT_JOB_POLICY.executionTimeoutMs, lowPriority: false },
    });
    expect(queued.body.job.input.text).toBe(inputText.slice(0, JOB_DETAIL_BOUNDS.maxChars));

    await finishOldest(id, 'COMPLETED', '{"answer":42}');
    const done = await api.call('GET', `endpoint/job?id=${id}&jobId=${job.id}`);
    expect(done.body.job).toMatchObject({
      status: 'COMPLETED',
      output: { text: '{"answer":42}', bytes: 13, truncated: false },
    });

    const missing = await api.call('GET', `endpoint/job?id=${id}&job=nope`);
    expect([missing.status, missing.body.reason]).toEqual([404, 'JOB_NOT_FOUND']);
    const unnamed = await api.call('GET', `endpoint/job?id=${id}`);
    expect([unnamed.status, unnamed.body.reason]).toEqual([400, 'INVALID_QUERY']);
  });

  it('cancels a queued job and retries a failed one, refusing what the status does not allow', async () => {
    const { id, submit } = await setUp();
    const failing = await submit({ n: 'fails' });
    const failedId = await finishOldest(id, 'FAILED', null);
    expect(failedId).toBe(failing.id);
    const completing = await submit({ n: 'completes' });
    await finishOldest(id, 'COMPLETED', '1');
    const queued = await submit({ n: 'queued' });

    const cancelled = await api.call('POST', 'endpoint/job/cancel', { id, job: queued.id });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.job).toMatchObject({ id: queued.id, status: 'CANCELLED' });
    expect((await store.jobs.get(id, queued.id))?.status).toBe('CANCELLED');
    // A second cancel finds it cancelled already: the same answer.
    expect((await api.call('POST', 'endpoint/job/cancel', { id, job: queued.id })).status).toBe(200);

    const finished = await api.call('POST', 'endpoint/job/cancel', { id, job: completing.id });
    expect([finished.status, finished.body.reason, finished.body.metadata.status]).toEqual([
      409,
      'JOB_FINISHED',
      'COMPLETED',
    ]);
    const notRetryable = await api.call('POST', 'endpoint/job/retry', { id, job: queued.id });
    expect([notRetryable.status, notRetryable.body.reason, notRetryable.body.metadata.status]).toEqual([
      409,
      'JOB_NOT_RETRYABLE',
      'CANCELLED',
    ]);

    const retried = await api.call('POST', 'endpoint/job/retry', { id, job: failing.id });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.job).toMatchObject({ id: failing.id, status: 'IN_QUEUE', error: null });
    expect((await store.jobs.get(id, failing.id))?.status).toBe('IN_QUEUE');

    const cases = [
      await api.call('POST', 'endpoint/job/cancel', { id, job: 'nope' }),
      await api.call('POST', 'endpoint/job/retry', { id, job: 'nope' }),
      await api.call('POST', 'endpoint/job/cancel', { id }),
      await api.call('POST', 'endpoint/job/retry', { job: failing.id }),
    ];
    expect(cases.map((r) => [r.status, r.body.reason])).toEqual([
      [404, 'JOB_NOT_FOUND'],
      [404, 'JOB_NOT_FOUND'],
      [400, 'INVALID_FIELD'],
      [400, 'INVALID_FIELD'],
    ]);
  });

  it("answers 404 for another owner's endpoint and 401 without a key, changing nothing", async () => {
    const { id, submit } = await setUp();
    const job = await submit({ n: 1 });
    const asB = [
      await api.call('GET', `endpoint/jobs?id=${id}`, undefined, api.keyB),
      await api.call('GET', `endpoint/job?id=${id}&job=${job.id}`, undefined, api.keyB),
      await api.call('POST', 'endpoint/job/cancel', { id, job: job.id }, api.keyB),
      await api.call('POST', 'endpoint/job/retry', { id, job: job.id }, api.keyB),
    ];
    expect(asB.map((r) => [r.status, r.body.reason])).toEqual(Array(4).fill([404, 'ENDPOINT_NOT_FOUND']));
    const anonymous = [
      await api.call('GET', `endpoint/jobs?id=${id}`, undefined, null),
      await api.call('POST', 'endpoint/job/cancel', { id, job: job.id }, null),
    ];
    expect(anonymous.map((r) => r.status)).toEqual([401, 401]);
    expect((await store.jobs.get(id, job.id))?.status).toBe('IN_QUEUE');
  });
});
