import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleEndpoint, storeEndpoint } from '../../test/support/fixtures.js';
import { type JobRoutesHarness, startJobRoutes } from '../../test/support/job-routes.js';
import type { Endpoint } from '../domain/endpoint.js';
import type { SpecPatch } from '../domain/spec-patch.js';
import { InvokeKeyService } from '../service/invoke-key-service.js';

/** `/v2/{name}/...`: an endpoint named without an appName is called by its name, where the name is the key's only one. */
describe('the jobs routes by endpoint name', () => {
  let jobs: JobRoutesHarness;

  beforeEach(async () => {
    jobs = await startJobRoutes();
  });
  afterEach(async () => {
    await jobs.close();
  });

  const add = async (patch: SpecPatch, ownerId = 'owner-a'): Promise<Endpoint> => {
    const endpoint = sampleEndpoint({ ownerId, patch: { type: 'queue', ...patch } });
    await storeEndpoint(jobs.store, endpoint);
    return endpoint;
  };
  const jobsOf = async (endpoint: Endpoint) => (await jobs.store.jobs.counts(endpoint.id)).IN_QUEUE;

  it('serves every route at /v2/{name}, on the endpoint of that name', async () => {
    const sdxl = await add({ name: 'sdxl' });
    const run = await jobs.call('POST', '/v2/sdxl/run', { body: { input: { prompt: 'a cat' } } });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    expect(await jobsOf(sdxl)).toBe(1);
    const id = run.body.id as string;
    const calls: [string, string, unknown?][] = [
      ['POST', '/v2/sdxl/runsync?wait=0', { input: {} }],
      ['GET', `/v2/sdxl/status/${id}`],
      ['GET', `/v2/sdxl/status-sync/${id}?wait=0`],
      ['GET', `/v2/sdxl/stream/${id}?wait=0`],
      ['POST', `/v2/sdxl/cancel/${id}`],
      ['POST', `/v2/sdxl/retry/${id}`],
      ['GET', '/v2/sdxl/health'],
      ['GET', '/v2/sdxl/jobs'],
      ['POST', '/v2/sdxl/purge-queue'],
    ];
    const answers = [];
    for (const [method, path, body] of calls) {
      const answer = await jobs.call(method, path, body === undefined ? {} : { body });
      answers.push([path, answer.status, answer.body.reason]);
    }
    // The retry of a cancelled job is refused as not retryable: it found the job, on that endpoint.
    expect(answers).toEqual(
      calls.map(([, path]) =>
        path.includes('/retry/') ? [path, 409, 'JOB_NOT_RETRYABLE'] : [path, 200, undefined],
      ),
    );
  });

  it("answers 404 for another owner's endpoint of that name, and finds the key's own beside it", async () => {
    await add({ name: 'private-b' }, 'owner-b');
    const missing = await jobs.call('POST', '/v2/private-b/run', { body: { input: {} } });
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ reason: 'ENDPOINT_NOT_FOUND' });
    expect(missing.body.error).toContain('private-b');

    const others = await add({ name: 'sdxl' }, 'owner-b');
    const own = await add({ name: 'sdxl' });
    expect((await jobs.call('POST', '/v2/sdxl/run', { body: { input: {} } })).status).toBe(200);
    expect([await jobsOf(own), await jobsOf(others)]).toEqual([1, 0]);
  });

  it("finds the key's own endpoint named like another owner's appName", async () => {
    await add({ name: 'other', appName: 'shared-word' }, 'owner-b');
    const own = await add({ name: 'shared-word' });
    expect((await jobs.call('POST', '/v2/shared-word/run', { body: { input: {} } })).status).toBe(200);
    expect(await jobsOf(own)).toBe(1);
  });

  it("refuses a name two of the key's endpoints share with 409, naming both ids, and queues nothing", async () => {
    const first = await add({ name: 'twin' });
    const second = await add({ name: 'twin' });
    const answer = await jobs.call('POST', '/v2/twin/run', { body: { input: {} } });
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({
      reason: 'AMBIGUOUS_ENDPOINT_NAME',
      metadata: { ids: [first.id, second.id] },
    });
    expect(answer.body.error).toContain(first.id);
    expect([await jobsOf(first), await jobsOf(second)]).toEqual([0, 0]);
    // Each by its id still.
    expect((await jobs.call('GET', `/v2/${second.id}/health`)).status).toBe(200);
  });

  it('takes an appName before a name and an id before both', async () => {
    const named = await add({ name: 'chat' });
    const appNamed = await add({ name: 'llama', appName: 'chat' });
    expect((await jobs.call('POST', '/v2/chat/run', { body: { input: {} } })).status).toBe(200);
    expect([await jobsOf(appNamed), await jobsOf(named)]).toEqual([1, 0]);
  });

  it("lets an invoke key call its endpoint by name, and no other of its owner's", async () => {
    const sdxl = await add({ name: 'sdxl' });
    await add({ name: 'flux' });
    const invoke = new InvokeKeyService({ store: jobs.store, clock: () => 1 });
    const made = await invoke.create({ ownerId: 'owner-a', keyId: 'k', admin: false }, sdxl.id, 'client');
    expect((await jobs.call('GET', '/v2/sdxl/health', { key: made.key })).status).toBe(200);
    const other = await jobs.call('GET', '/v2/flux/health', { key: made.key });
    expect(other.status).toBe(404);
  });
});
