import { afterEach, describe, expect, it, vi } from 'vitest';
import { type JobRoutesHarness, startJobRoutes } from '../../test/support/job-routes.js';

describe("the OpenAI route's waits and streams", () => {
  let harness: JobRoutesHarness | undefined;
  afterEach(() => harness?.close());

  const chat = (h: JobRoutesHarness, stream: boolean) =>
    fetch(`${h.base}/v2/${h.endpoint.id}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.key}` },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream }),
    });

  const queued = async (h: JobRoutesHarness) => {
    await vi.waitFor(async () =>
      expect((await h.service.list(h.endpoint, { limit: 5 })).jobs).toHaveLength(1),
    );
    return (await h.service.list(h.endpoint, { limit: 5 })).jobs[0];
  };

  it.each([false, true])(
    "answers 504 in OpenAI's shape and cancels the job when no answer came within the wait (stream: %s)",
    async (stream) => {
      const h = await startJobRoutes({
        routeOptions: {
          waits: { runsyncDefaultMs: 1, statusSyncDefaultMs: 1, streamDefaultMs: 1, maxMs: 2_000 },
        },
      });
      harness = h;
      const answer = chat(h, stream);
      const job = await queued(h);
      expect(job?.status).toBe('IN_QUEUE');
      await vi.waitFor(() => expect(h.timers.count).toBeGreaterThan(0));
      for (let waited = 0; waited < 2_000; waited += 500) await h.timers.advanceSettling(500);
      const response = await answer;
      expect(response.status).toBe(504);
      expect(await response.json()).toEqual({
        error: {
          message: expect.stringContaining('not finished within 2000 ms'),
          type: 'timeout',
          code: 'JOB_TIMED_OUT',
        },
      });
      expect((await h.service.status(h.endpoint, job?.id ?? '')).status).toBe('CANCELLED');
    },
  );

  it('cancels the job of a client that goes away while it waits', async () => {
    const h = await startJobRoutes();
    harness = h;
    const controller = new AbortController();
    const answer = fetch(`${h.base}/v2/${h.endpoint.id}/openai/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.key}` },
      body: JSON.stringify({ model: 'm', prompt: 'hi' }),
      signal: controller.signal,
    }).catch(() => undefined);
    const job = await queued(h);
    controller.abort();
    await answer;
    await vi.waitFor(async () =>
      expect((await h.service.status(h.endpoint, job?.id ?? '')).status).toBe('CANCELLED'),
    );
  });

  it('passes streamed text through as yielded, and ends a stream cut inside an event with an error event', async () => {
    const h = await startJobRoutes();
    harness = h;
    const answer = chat(h, true);
    const job = await queued(h);
    await h.store.jobs.take({
      endpointId: h.endpoint.id,
      workerId: 'w-1',
      max: 1,
      cap: 1,
      now: h.timers.now,
    });
    const first = 'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: {"cho';
    expect((await h.stream('w-1', job?.id ?? '', JSON.stringify({ output: first }))).status).toBe(200);
    const response = await answer;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    // What runpod-python stores for worker-vllm's yielded {"error": {...}}: Python's str() of the dict.
    const stored = "{'message': 'Request to vLLM failed: reset', 'type': 'worker_error', 'code': None}";
    await h.store.jobs.complete({
      jobId: job?.id ?? '',
      workerId: 'w-1',
      status: 'FAILED',
      output: null,
      error: stored,
      now: h.timers.now,
    });
    await vi.waitFor(() => expect(h.timers.count).toBeGreaterThan(0));
    await h.timers.advanceSettling(500);
    expect(await response.text()).toBe(
      `${first}\n\ndata: {"error":{"message":"Request to vLLM failed: reset","type":"worker_error","code":"JOB_FAILED"}}\n\n`,
    );
  });

  it('serves an endpoint whose appName is openai, the route after its name', async () => {
    const h = await startJobRoutes({ endpointPatch: { appName: 'openai' } });
    harness = h;
    const answer = fetch(`${h.base}/v2/openai/openai/v1/models`, {
      headers: { authorization: `Bearer ${h.key}` },
    });
    const job = await queued(h);
    expect(job?.status).toBe('IN_QUEUE');
    const input = JSON.parse((await h.store.jobs.get(h.endpoint.id, job?.id ?? ''))?.input ?? '{}');
    expect(input).toEqual({ openai_route: '/v1/models', openai_input: {} });
    await h.service.cancel(h.endpoint, job?.id ?? '');
    expect((await answer).status).toBe(409);
  });

  it("refuses a body that is not a JSON object in OpenAI's shape, and queues nothing", async () => {
    const h = await startJobRoutes();
    harness = h;
    const response = await fetch(`${h.base}/v2/${h.endpoint.id}/openai/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.key}` },
      body: '[1, 2]',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { message: expect.any(String), type: 'invalid_request_error', code: 'INVALID_JOB_REQUEST' },
    });
    expect((await h.service.list(h.endpoint, { limit: 5 })).jobs).toEqual([]);
  });
});
