/**
 * The job quotas at the jobs API's door, over real HTTP, as issue 29 item 4 tried them: 9.5 MB jobs from one key
 * until the owner's kept bytes reach their quota, then 403 QUOTA_EXCEEDED naming it (not 429: no SDK retries it); and
 * an owner past its budget, whose queued jobs' statuses say so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type JobRoutesHarness, startJobRoutes } from '../../test/support/job-routes.js';
import { type BudgetStanding, describeStanding } from '../domain/budget.js';
import { type QuotaSettings, quotaFor } from '../domain/quota.js';
import type { BudgetStandings } from '../ports/budgets.js';
import { QuotaService } from '../service/quota-service.js';
import type { Store } from '../store/store.js';

const MB = 1024 * 1024;

/** The owner's quotas as `corral serve` reads them: the config file's over the defaults (no GPUs here). */
const quotas = (settings: QuotaSettings) => (store: Store) => {
  const service = new QuotaService({ store, quotaFor: (owner, op) => quotaFor(owner, 0, settings, op) });
  return { quotaOf: async (ownerId: string) => (await service.quotaOf(ownerId)).quota };
};

describe('job quotas at the door', () => {
  let jobs: JobRoutesHarness | undefined;
  afterEach(async () => {
    await jobs?.close();
    jobs = undefined;
  });

  it('refuses 9.5 MB jobs past the bytes quota with 403 QUOTA_EXCEEDED naming it, its limit and the use', async () => {
    jobs = await startJobRoutes({ serviceOptions: quotas({ defaults: { jobBytes: 40 * MB }, owners: {} }) });
    const input = { blob: 'x'.repeat(9.5 * MB) };
    const answers: number[] = [];
    for (let i = 0; i < 6; i++)
      answers.push((await jobs.call('POST', `/v2/${jobs.endpoint.id}/run`, { body: { input } })).status);
    expect(answers).toEqual([200, 200, 200, 200, 403, 403]);
    const refused = await jobs.call('POST', `/v2/${jobs.endpoint.id}/run`, { body: { input } });
    const stored = 4 * Buffer.byteLength(JSON.stringify(input));
    expect(refused.body).toMatchObject({
      code: 403,
      reason: 'QUOTA_EXCEEDED',
      metadata: { quota: 'jobBytes', limit: 40 * MB, used: stored },
    });
    expect(refused.body.error).toContain(`above your quota of ${40 * MB}`);
    expect((await jobs.store.jobs.counts(jobs.endpoint.id)).IN_QUEUE).toBe(4);
    // A purge frees the place: the next job is taken.
    await jobs.call('POST', `/v2/${jobs.endpoint.id}/purge-queue`);
    expect((await jobs.call('POST', `/v2/${jobs.endpoint.id}/run`, { body: { input } })).status).toBe(200);
  });

  it("refuses a job past the owner's count of jobs not finished, set for that owner in the config", async () => {
    jobs = await startJobRoutes({
      serviceOptions: quotas({ defaults: { queuedJobs: 100 }, owners: { 'owner-a': { queuedJobs: 2 } } }),
    });
    const run = () => jobs?.call('POST', `/v2/${jobs.endpoint.id}/runsync?wait=0`, { body: { input: {} } });
    expect((await run())?.status).toBe(200);
    expect((await run())?.status).toBe(200);
    expect((await run())?.body).toMatchObject({
      reason: 'QUOTA_EXCEEDED',
      metadata: { quota: 'queuedJobs', limit: 2, used: 2, usedAfter: 3 },
    });
  });

  it('refuses a retry that would queue a job past that count, and lets it through once there is room', async () => {
    jobs = await startJobRoutes({
      serviceOptions: quotas({ defaults: { queuedJobs: 100 }, owners: { 'owner-a': { queuedJobs: 1 } } }),
    });
    const { endpoint, store, timers } = jobs;
    const run = async () =>
      (await jobs?.call('POST', `/v2/${endpoint.id}/run`, { body: { input: {} } }))?.body.id as string;
    const failed = await run();
    await store.jobs.take({ endpointId: endpoint.id, workerId: 'w-1', max: 1, cap: 1, now: timers.now });
    await store.jobs.complete({
      jobId: failed,
      workerId: 'w-1',
      status: 'FAILED',
      output: null,
      error: 'boom',
      now: timers.now,
    });
    const queued = await run();
    const retry = () => jobs?.call('POST', `/v2/${endpoint.id}/retry/${failed}`);
    expect((await retry())?.body).toMatchObject({
      reason: 'QUOTA_EXCEEDED',
      metadata: { quota: 'queuedJobs', limit: 1, used: 1, usedAfter: 2 },
    });
    expect((await store.jobs.get(endpoint.id, failed))?.status).toBe('FAILED');
    await jobs.call('POST', `/v2/${endpoint.id}/cancel/${queued}`);
    expect((await retry())?.body).toMatchObject({ id: failed, status: 'IN_QUEUE' });
  });
});

describe("an owner's budget in a job's status", () => {
  let jobs: JobRoutesHarness | undefined;
  afterEach(async () => {
    await jobs?.close();
    jobs = undefined;
  });

  it('says why a queued job waits, and asks the budgets nothing for a finished one', async () => {
    const spent: BudgetStanding = {
      state: 'exceeded',
      budget: 'perMonth',
      limit: 10,
      used: 12,
      unit: 'USD',
      resetsAt: Date.UTC(2030, 0, 1),
    };
    const asked: string[] = [];
    const budgets: BudgetStandings = {
      standingOf: (ownerId) => {
        asked.push(ownerId);
        return spent;
      },
      read: async () => spent,
      onChange: () => () => {},
    };
    jobs = await startJobRoutes({ routeOptions: { budgets } });
    const base = `/v2/${jobs.endpoint.id}`;
    const { id } = (await jobs.call('POST', `${base}/run`, { body: { input: {} } })).body;
    const queued = await jobs.call('GET', `${base}/status/${id}`);
    expect(queued.body).toMatchObject({ status: 'IN_QUEUE', waitingFor: describeStanding(spent) });
    expect(asked).toEqual(['owner-a']);
    await jobs.call('POST', `${base}/cancel/${id}`);
    const cancelled = await jobs.call('GET', `${base}/status/${id}`);
    expect(cancelled.body.status).toBe('CANCELLED');
    expect(cancelled.body).not.toHaveProperty('waitingFor');
    expect(asked).toEqual(['owner-a']);
  });
});
