/**
 * The rate of job submissions at the jobs API's door, over real HTTP on a manual clock: each owner's run, runsync
 * and retry share one budget (whichever of its keys sends them), weighed by body size as the API's, and a
 * submission over it is 429 RATE_LIMITED with Retry-After, nothing queued.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type JobRoutesHarness, startJobRoutes } from '../../test/support/job-routes.js';
import { RateLimiter } from '../api/rate-limit.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';

describe('the rate of job submissions', () => {
  let jobs: JobRoutesHarness | undefined;
  afterEach(async () => {
    await jobs?.close();
    jobs = undefined;
  });

  const start = async (requestsPerSecond: number, burst: number) => {
    let clock = () => 0;
    const harness = await startJobRoutes({
      routeOptions: {
        submissions: new RateLimiter({ requestsPerSecond, burst, clock: () => clock() }),
      },
    });
    clock = () => harness.timers.now;
    return harness;
  };

  it('refuses past the burst with 429 and Retry-After, queues nothing, and takes again once refilled', async () => {
    jobs = await start(2, 3);
    const run = (key?: string) =>
      jobs?.call('POST', `/v2/${jobs.endpoint.id}/run`, { body: { input: {} }, ...(key ? { key } : {}) });
    expect([(await run())?.status, (await run())?.status, (await run())?.status]).toEqual([200, 200, 200]);
    const refused = await run();
    expect(refused?.status).toBe(429);
    expect(refused?.headers.get('retry-after')).toBe('1');
    expect(refused?.body).toMatchObject({ reason: 'RATE_LIMITED', metadata: { retryAfterSeconds: 1 } });
    // An invoke key of the same owner's endpoint draws on the same budget.
    const invoke = await new InvokeKeyService({ store: jobs.store, clock: () => 0 }).create(
      { ownerId: jobs.endpoint.ownerId, keyId: 'k', admin: false },
      jobs.endpoint.id,
      'ci',
    );
    expect((await run(invoke.key))?.status).toBe(429);
    expect((await jobs.store.jobs.counts(jobs.endpoint.id)).IN_QUEUE).toBe(3);
    jobs.timers.now += 500;
    expect((await run())?.status).toBe(200);
  });

  it('weighs a body by its size, declared or read chunked: 9.5 MB inputs spend the budget at once', async () => {
    jobs = await start(10, 1000);
    const input = { blob: 'x'.repeat(9.5 * 1024 * 1024) };
    const path = `/v2/${jobs.endpoint.id}/run`;
    // 609 tokens with its Content-Length: one fits the burst of 1,000, the second does not.
    expect((await jobs.call('POST', path, { body: { input } })).status).toBe(200);
    expect((await jobs.call('POST', path, { body: { input } })).status).toBe(429);
    jobs.timers.now += 100_000;
    // The same body sent chunked (no Content-Length) is charged once read.
    const chunked = (text: string) =>
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(text));
          controller.close();
        },
      });
    const send = () =>
      fetch(`${jobs?.base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${jobs?.key}` },
        body: chunked(JSON.stringify({ input })),
        duplex: 'half',
      } as RequestInit);
    expect((await send()).status).toBe(200);
    expect((await send()).status).toBe(429);
    expect((await jobs.store.jobs.counts(jobs.endpoint.id)).IN_QUEUE).toBe(2);
  });
});
