/**
 * The worker protocol's routes over real HTTP on loopback (issue 29): a worker's token dies with its worker, and the
 * late result of a worker whose job went back to the queue at its removal never applies over the job's next run.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleEndpoint, sampleJob } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { workerProtocolUrls } from '../contract/runpod-worker.js';
import { JOB_LIMITS } from '../domain/job.js';
import type { WorkerState } from '../domain/worker.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { JobEvents } from './job-events.js';
import { Wakeups } from './wakeups.js';
import { WorkerDirectory } from './worker-directory.js';
import { WorkerJobs } from './worker-jobs.js';
import { workerRoutes } from './worker-routes.js';
import { WorkerTokens } from './worker-tokens.js';

const silent = { warn: () => {}, error: () => {} };

describe('the worker routes once a worker is removed', () => {
  const endpoint = sampleEndpoint();
  let store: Store;
  let server: Server;
  let base: string;
  let workers: WorkerJobs;
  const tokens = new WorkerTokens({ secret: 'a test secret' });
  /** The leading controller's records: a worker absent here has been removed. */
  const states = new Map<string, WorkerState>();

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    const timers = new ManualTimers(1_000);
    const clock = () => timers.now;
    const directory = new WorkerDirectory({
      controllerState: (_endpointId, workerId) => states.get(workerId) ?? null,
      storedWorker: async () => undefined,
      clock,
      storeCacheMs: 1_000,
    });
    workers = new WorkerJobs({
      jobs: store.jobs,
      clock,
      wakeups: new Wakeups({ timers, recheckMs: 500 }),
      events: new JobEvents(),
      maxAttempts: 3,
      standing: (endpointId, workerId) => directory.standing(endpointId, workerId),
    });
    const handler = workerRoutes({
      workers,
      tokens,
      findEndpoint: async (id) => (id === endpoint.id ? endpoint : undefined),
      standing: (endpointId, workerId) => directory.check(endpointId, workerId),
      logger: silent,
      takeHoldMs: 0,
      stopHoldMs: 0,
    });
    server = createServer((req, res) => {
      if (!handler(req, res)) res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    states.clear();
    states.set('w-1', 'running');
    states.set('w-2', 'running');
  });
  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await store.close();
  });

  /** What the worker's own SDK sends: its token raw, at the URLs its env names. */
  const as = (workerId: string) => {
    const urls = workerProtocolUrls(base, endpoint.id, workerId);
    const headers = { authorization: tokens.issue(endpoint.id, workerId) };
    const answer = async (response: Response) => ({ status: response.status, text: await response.text() });
    return {
      take: async () => answer(await fetch(urls.getJob, { headers })),
      done: async (jobId: string, output: unknown) =>
        answer(
          await fetch(urls.postOutput.replace('$ID', jobId), {
            method: 'POST',
            headers,
            body: typeof output === 'string' && output.startsWith('{') ? output : JSON.stringify({ output }),
          }),
        ),
      stream: async (jobId: string) =>
        answer(
          await fetch(urls.postStream.replace('$ID', jobId), {
            method: 'POST',
            headers,
            body: JSON.stringify({ output: 1 }),
          }),
        ),
      ping: async () => answer(await fetch(`${urls.ping}&job_id=j-1`, { headers })),
    };
  };

  it('refuses every route to the token of a removed worker: take, result, stream and ping answer 401', async () => {
    await store.jobs.enqueue(sampleJob('j-1', endpoint.id, { ownerId: endpoint.ownerId }), 60_000);
    const w1 = as('w-1');
    expect((await w1.take()).status).toBe(200);
    // Removed: its job went back to the queue when its removal was decided.
    await workers.workerEnded('w-1', 'scaled down');
    states.delete('w-1');
    for (const answer of [
      await w1.take(),
      await w1.done('j-1', 'late'),
      await w1.stream('j-1'),
      await w1.ping(),
    ]) {
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.text)).toMatchObject({ reason: 'WORKER_UNAUTHENTICATED' });
      expect(answer.text).toContain('w-1 has ended');
    }
    // The job was never taken by the removed worker's token: it is the next worker's.
    const taken = await as('w-2').take();
    expect(taken.status).toBe(200);
    expect(JSON.parse(taken.text)).toMatchObject({ id: 'j-1' });
  });

  it('refuses the late result of a worker chosen for removal: the job it held runs again, and only that run applies', async () => {
    await store.jobs.enqueue(sampleJob('j-1', endpoint.id, { ownerId: endpoint.ownerId }), 60_000);
    const [w1, w2] = [as('w-1'), as('w-2')];
    expect((await w1.take()).status).toBe(200);
    // Chosen for removal (draining: its token still holds while its container stops): the job goes back at once.
    states.set('w-1', 'draining');
    await workers.workerEnded('w-1', 'scaled down');
    expect((await w1.take()).status).toBe(204);
    expect(JSON.parse((await w2.take()).text)).toMatchObject({ id: 'j-1' });
    const late = await w1.done('j-1', 'from the removed worker');
    expect(late.status).toBe(409);
    expect(JSON.parse(late.text)).toMatchObject({ reason: 'RESULT_REFUSED' });
    expect((await w2.done('j-1', 'from the next run')).status).toBe(200);
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'COMPLETED',
      workerId: 'w-2',
      output: JSON.stringify('from the next run'),
    });
  });

  it('fails a job at once whose result is over the limit, saying so, rather than leaving it to run again', async () => {
    await store.jobs.enqueue(sampleJob('j-1', endpoint.id, { ownerId: endpoint.ownerId }), 60_000);
    const w1 = as('w-1');
    expect((await w1.take()).status).toBe(200);
    const huge = await w1.done('j-1', JSON.stringify({ output: 'x'.repeat(JOB_LIMITS.resultBytes) }));
    expect(huge.status).toBe(413);
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'FAILED',
      error: `the worker's result was refused: a result is larger than ${JOB_LIMITS.resultBytes} bytes, the limit`,
    });
    // Another worker's result over the limit changes nothing but its answer.
    expect(
      (await as('w-2').done('j-1', JSON.stringify({ output: 'y'.repeat(JOB_LIMITS.resultBytes) }))).status,
    ).toBe(413);
    expect((await store.jobs.get(endpoint.id, 'j-1'))?.status).toBe('FAILED');
  });
});
