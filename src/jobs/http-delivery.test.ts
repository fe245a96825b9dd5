import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { loopTurns, ManualTimers } from '../../test/support/manual-timers.js';
import type { Endpoint } from '../domain/endpoint.js';
import { DEFAULT_JOB_POLICY, type JobPolicy } from '../domain/job.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { answerToResult, deliveryUrl, HttpDelivery } from './http-delivery.js';
import { JobEvents, wakeKey } from './job-events.js';
import type { JobSend } from './job-send.js';
import { Wakeups } from './wakeups.js';

describe("an http endpoint's answer to a job", () => {
  it('is the output when it is 2xx JSON, and FAILS the job with the status and body otherwise', () => {
    expect(answerToResult(200, '{"a":1}')).toEqual({ status: 'COMPLETED', output: '{"a":1}', error: null });
    expect(answerToResult(201, '"x"')).toEqual({ status: 'COMPLETED', output: '"x"', error: null });
    expect(answerToResult(200, 'plain text')).toEqual({
      status: 'FAILED',
      output: null,
      error: 'HTTP 200: the answer is not JSON: plain text',
    });
    expect(answerToResult(503, '{"reason":"NO_CAPACITY"}')).toEqual({
      status: 'FAILED',
      output: null,
      error: 'HTTP 503: {"reason":"NO_CAPACITY"}',
    });
    expect(answerToResult(500, 'x'.repeat(10_000)).error?.length).toBe('HTTP 500: '.length + 4_096);
  });

  it('FAILS the job on a redirect, saying it was not followed', () => {
    for (const status of [301, 302, 303, 307, 308]) {
      expect(answerToResult(status, '')).toEqual({
        status: 'FAILED',
        output: null,
        error: `HTTP ${status}: the endpoint answered a redirect, and a job's delivery follows no redirect`,
      });
    }
  });
});

describe("an http job's delivery URL", () => {
  const gateway = 'http://127.0.0.1:8080';

  it("is the endpoint's own path form on this replica's gateway", () => {
    expect(deliveryUrl(gateway, { appName: 'app', jobsPath: '/v1/generate' })).toEqual({
      url: 'http://127.0.0.1:8080/e/app/v1/generate',
    });
    expect(deliveryUrl(gateway, { appName: 'app', jobsPath: '/run' })).toEqual({
      url: 'http://127.0.0.1:8080/e/app/run',
    });
  });

  it.each([
    '/../other-app/x',
    '/%2e%2e/other-app/x',
    '/.%2e/other-app/x',
    '/..\\other-app',
    '/x%2F..%2Fother-app',
    '//other-host/x',
    '',
  ])('is refused for a jobsPath stored before the path rule: %j', (jobsPath) => {
    const target = deliveryUrl(gateway, { appName: 'app', jobsPath });
    expect(target).toEqual({
      refused: expect.stringContaining(`the endpoint's jobsPath ${JSON.stringify(jobsPath)} `),
    });
    expect(target).toEqual({ refused: expect.stringContaining('the job was not delivered') });
  });
});

const WORKER = 'gateway:r-1';

describe('a job whose request is in flight (cancel, executionTimeout, ttl)', () => {
  let store: Store;
  let timers: ManualTimers;
  let wakeups: Wakeups;
  let delivery: HttpDelivery;
  let endpoint: Endpoint;
  /** The requests the gateway was sent: job id -> where, with which key, whether it was aborted, its answer. */
  let requests: Map<
    string,
    {
      url: string;
      authorization: string | undefined;
      aborted: boolean;
      answer: (status: number, body: string) => void;
    }
  >;

  const send: JobSend = (url, init) =>
    new Promise((resolve, reject) => {
      const id = init.headers['x-corral-job-id'] ?? '';
      const request = {
        url,
        authorization: init.headers.authorization,
        aborted: false,
        answer: (status: number, body: string) => resolve({ status, body }),
      };
      requests.set(id, request);
      init.signal.addEventListener('abort', () => {
        request.aborted = true;
        reject(new Error('This operation was aborted'));
      });
    });

  /** Lets the store's calls and the delivery's promises run, with no time passing. */
  const turns = () => loopTurns(20);

  const enqueue = (id: string, policy: Partial<JobPolicy> = {}) =>
    store.jobs.enqueue(
      {
        id,
        endpointId: endpoint.id,
        ownerId: endpoint.ownerId,
        input: '{"ms":60000}',
        webhook: null,
        policy: { ...DEFAULT_JOB_POLICY, ...policy },
        sync: false,
        createdAt: timers.now,
      },
      60_000,
    );
  const runJob = async (id: string, policy: Partial<JobPolicy> = {}) => {
    await enqueue(id, policy);
    await delivery.drain(endpoint.id);
    await turns();
    expect(requests.get(id)?.aborted).toBe(false);
  };

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    timers = new ManualTimers(1_000);
    wakeups = new Wakeups({ timers, recheckMs: 500 });
    requests = new Map();
    endpoint = sampleEndpoint();
    delivery = new HttpDelivery({
      jobs: store.jobs,
      events: new JobEvents(),
      wakeups,
      clock: () => timers.now,
      timers,
      logger: pino({ level: 'silent' }),
      deliveryWorkerId: WORKER,
      findEndpoint: async () => endpoint,
      gateway: () => ({ url: 'http://gateway.invalid', keyFor: (id) => `key-of-${id}` }),
      scanMs: 60_000,
      keepAliveMs: 60_000,
      stopCheckMs: 500,
      backstopMs: 30_000,
      maxAttempts: 3,
      send,
    });
  });
  afterEach(async () => {
    await delivery.close();
    await store.close();
  });

  it("goes to its endpoint's own path form with the delivery key of that endpoint alone", async () => {
    await runJob('j-1');
    expect(requests.get('j-1')).toMatchObject({
      url: `http://gateway.invalid/e/${endpoint.spec.appName}/run`,
      authorization: `Bearer key-of-${endpoint.id}`,
    });
  });

  it('FAILS unsent when its endpoint was stored with a jobsPath the path rule refuses (before the rule)', async () => {
    endpoint = { ...endpoint, spec: { ...endpoint.spec, jobsPath: '/../other-app/x' } };
    await enqueue('j-1');
    await delivery.drain(endpoint.id);
    await turns();
    expect(requests.size).toBe(0);
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'FAILED',
      error:
        'the endpoint\'s jobsPath "/../other-app/x" holds a . or .. segment: the job was not delivered (set a normalised jobsPath with endpoint/update)',
    });
  });

  it('is aborted at once by a cancel here, and stays CANCELLED with its stop cleared', async () => {
    await runJob('j-1');
    await store.jobs.cancel(endpoint.id, 'j-1', timers.now);
    wakeups.wake(wakeKey.stops(WORKER)); // as JobService.cancel does
    await turns();
    expect(requests.get('j-1')?.aborted).toBe(true);
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({ status: 'CANCELLED', error: null });
    expect(await store.jobs.stopsFor(WORKER)).toEqual([]);
  });

  it("is aborted by another replica's cancel (the store alone) once stopCheckMs has passed", async () => {
    await runJob('j-1');
    await store.jobs.cancel(endpoint.id, 'j-1', timers.now);
    await timers.advanceSettling(400);
    await turns();
    expect(requests.get('j-1')?.aborted).toBe(false);
    await timers.advanceSettling(100);
    await turns();
    expect(requests.get('j-1')?.aborted).toBe(true);
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({ status: 'CANCELLED' });
  });

  it('is aborted when a sweep times it out (executionTimeout or ttl), and stays TIMED_OUT, not FAILED', async () => {
    await runJob('j-1', { executionTimeoutMs: 5_000 });
    await runJob('j-2', { ttlMs: 10_000 });
    await timers.advanceSettling(5_000);
    await store.jobs.expire(timers.now); // the sweeper, on any replica
    await timers.advanceSettling(500);
    await turns();
    expect(requests.get('j-1')?.aborted).toBe(true);
    expect(requests.get('j-2')?.aborted).toBe(false);
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'TIMED_OUT',
      error: 'executionTimeout',
    });
    await timers.advanceSettling(4_500); // its ttl counts from its run: 10 s after it
    await store.jobs.expire(timers.now);
    await timers.advanceSettling(500);
    await turns();
    expect(requests.get('j-2')?.aborted).toBe(true);
    expect(await store.jobs.get(endpoint.id, 'j-2')).toMatchObject({ status: 'TIMED_OUT', error: 'ttl' });
  });

  it('leaves a job that was not stopped to its answer, and aborts it itself only past executionTimeout and the backstop', async () => {
    await runJob('j-1');
    await runJob('j-2', { executionTimeoutMs: 5_000 });
    await timers.advanceSettling(2_000);
    requests.get('j-1')?.answer(200, '{"ok":true}');
    await turns();
    expect(await store.jobs.get(endpoint.id, 'j-1')).toMatchObject({
      status: 'COMPLETED',
      output: '{"ok":true}',
    });
    // No sweep ran (the store out of reach, say): the delivery's own bound ends the request.
    await timers.advanceSettling(3_000 + 29_000);
    await turns();
    expect(requests.get('j-2')?.aborted).toBe(false);
    await timers.advanceSettling(1_000);
    await turns();
    expect(requests.get('j-2')?.aborted).toBe(true);
    expect(await store.jobs.get(endpoint.id, 'j-2')).toMatchObject({
      status: 'FAILED',
      error: 'no answer within its executionTimeout (5000 ms)',
    });
  });
});
