/**
 * What the client routes answer for input they cannot take and for faults, over real HTTP: a body nested past
 * the limit is a 400 naming it (it was a 503 "retry shortly", which SDKs retry for ever), and only the database's
 * unavailability is a 503; any other fault is a 500.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type JobRoutesHarness, startJobRoutes } from '../../test/support/job-routes.js';

describe('the client routes refuse what they cannot take, and say which fault is worth a retry', () => {
  let jobs: JobRoutesHarness | undefined;
  afterEach(async () => {
    await jobs?.close();
    jobs = undefined;
  });

  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('answers an input nested 100,000 deep 400 INVALID_JOB_REQUEST naming the limit, and queues nothing', async () => {
    jobs = await startJobRoutes();
    const { endpoint } = jobs;
    for (const route of ['run', 'runsync?wait=0']) {
      const answer = await jobs.call('POST', `/v2/${endpoint.id}/${route}`, {
        body: `{"input":${nested(100_000)}}`,
      });
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ reason: 'INVALID_JOB_REQUEST' });
      expect(answer.body.error).toContain('more than 128 levels deep');
    }
    expect((await jobs.store.jobs.counts(endpoint.id)).IN_QUEUE).toBe(0);
  });

  it('takes an input at the limit and refuses one level past it', async () => {
    jobs = await startJobRoutes();
    const path = `/v2/${jobs.endpoint.id}/run`;
    // The body's own object is the first level.
    expect((await jobs.call('POST', path, { body: `{"input":${nested(127)}}` })).status).toBe(200);
    expect((await jobs.call('POST', path, { body: `{"input":${nested(128)}}` })).status).toBe(400);
  });

  it('answers a fault 500 INTERNAL (logged), and only an unreachable database 503 JOBS_UNAVAILABLE', async () => {
    let fault: Error = new TypeError("Cannot read properties of undefined (reading 'spec')");
    jobs = await startJobRoutes({
      serviceOptions: () => ({
        findEndpoints: async () => {
          throw fault;
        },
      }),
    });
    const broken = await jobs.call('POST', '/v2/any/run', { body: { input: {} } });
    expect(broken.status).toBe(500);
    expect(broken.body).toMatchObject({ reason: 'INTERNAL' });
    expect(broken.body.error).not.toContain('retry');
    expect(jobs.logged.at(-1)?.data).toMatchObject({ err: fault.message });
    // node-postgres's refused connection, as store/unavailable.ts knows it.
    fault = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const down = await jobs.call('POST', '/v2/any/run', { body: { input: {} } });
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ reason: 'JOBS_UNAVAILABLE' });
  });
});
