// `corral jobs` against a real HTTP server on port 0 that stands for the gateway's documented jobs wire format
// (test/support/jobs-gateway.ts; the real jobs routes are the jobs core's): what each command sends, the key as
// `Authorization: Bearer`, and what it prints; `run` polls until the job ends and prints its output.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHarness, runCommand, type TestHarness } from '../../test/support/cli-harness.js';
import { type JobsGatewayStandIn, startJobsGatewayStandIn } from '../../test/support/jobs-gateway.js';
import { makeJobsCommand } from './jobs.js';

describe('corral jobs', () => {
  let gateway: JobsGatewayStandIn;
  let h: TestHarness;

  beforeEach(async () => {
    gateway = await startJobsGatewayStandIn();
    h = makeHarness({ env: { CORRAL_GATEWAY_URL: gateway.base, CORRAL_API_KEY: gateway.key } });
  });
  afterEach(async () => {
    process.exitCode = undefined;
    await gateway.close();
  });

  const jobs = (...args: string[]) => runCommand(makeJobsCommand(h.deps), args);

  it('names the gateway, not the API, when it cannot be reached', async () => {
    h = makeHarness({ env: { CORRAL_GATEWAY_URL: 'http://127.0.0.1:9', CORRAL_API_KEY: gateway.key } });
    await jobs('status', 'sdxl', 'job-1');
    expect(h.err()).toMatch(/^error: cannot reach the Corral gateway at http:\/\/127\.0\.0\.1:9 \(GET /);
    expect(process.exitCode).toBe(1);
  });

  it('run queues the input with its policy and webhook, polls the status until COMPLETED, and prints the output', async () => {
    gateway.nextProgress.push(
      { status: 'IN_QUEUE' },
      { status: 'IN_PROGRESS' },
      { status: 'COMPLETED', output: { image: 'b64' } },
    );
    await jobs(
      'run',
      'sdxl',
      '{"prompt":"a cat"}',
      '--webhook',
      'https://hooks.example.com/done',
      '--execution-timeout',
      '60000',
      '--ttl',
      '600000',
      '--low-priority',
    );
    expect(h.err()).toBe('job job-1 IN_QUEUE\njob job-1 IN_PROGRESS\n');
    expect(h.out()).toBe('{\n  "image": "b64"\n}\n');
    expect(process.exitCode).toBeUndefined();
    const [run, ...polls] = gateway.requests;
    expect(run).toEqual({
      method: 'POST',
      path: '/v2/sdxl/run',
      query: {},
      authorization: `Bearer ${gateway.key}`,
      body: {
        input: { prompt: 'a cat' },
        webhook: 'https://hooks.example.com/done',
        policy: { executionTimeout: 60000, ttl: 600000, lowPriority: true },
      },
    });
    // While it runs, the wait between polls is a read of its stream; the stream is read once more at the end.
    expect(polls.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v2/sdxl/status/job-1',
      'GET /v2/sdxl/status/job-1',
      'GET /v2/sdxl/stream/job-1',
      'GET /v2/sdxl/status/job-1',
      'GET /v2/sdxl/stream/job-1',
    ]);
  });

  it("run prints a FAILED job's error on stderr and exits 1; --json prints the final status body", async () => {
    gateway.nextProgress.push({ status: 'FAILED', error: 'CUDA out of memory' });
    await jobs('run', 'sdxl', '{}');
    expect(h.out()).toBe('');
    expect(h.err()).toContain('job job-1 FAILED: CUDA out of memory\n');
    expect(process.exitCode).toBe(1);

    process.exitCode = undefined;
    gateway.nextProgress.push({ status: 'COMPLETED', output: 'done' });
    const before = h.out().length;
    await jobs('run', 'sdxl', '{}', '--json');
    expect(JSON.parse(h.out().slice(before))).toEqual({
      id: 'job-2',
      status: 'COMPLETED',
      output: 'done',
      delayTime: 120,
      executionTime: 1530,
      workerId: 'w-1',
    });
  });

  it('run --async prints only the id; the input may come from a file or stdin', async () => {
    h = makeHarness({
      env: { CORRAL_GATEWAY_URL: `${gateway.base}/v2`, CORRAL_API_KEY: gateway.key },
      files: { '/in.json': '{"n": 1}' },
      stdin: '{"n": 2}',
    });
    await jobs('run', 'sdxl', '--async', '--input-file', '/in.json');
    await jobs('run', 'sdxl', '--async', '--input-file', '-');
    expect(h.out()).toBe('job-1\njob-2\n');
    expect(gateway.requests.map((r) => r.body)).toEqual([{ input: { n: 1 } }, { input: { n: 2 } }]);
  });

  it('run gives up waiting after --timeout, saying how to see the job later', async () => {
    gateway.nextProgress.push(...Array.from({ length: 50 }, () => ({ status: 'IN_PROGRESS' })));
    await jobs('run', 'sdxl', '{}', '--timeout', '5');
    expect(h.err()).toContain(
      'error: job job-1 is still IN_PROGRESS after 5 s; see it with: corral jobs status sdxl job-1',
    );
    expect(process.exitCode).toBe(1);
  });

  it('status prints the times, the worker and the output', async () => {
    gateway.nextProgress.push({ status: 'COMPLETED', output: { text: 'hello' } });
    await jobs('run', 'sdxl', '{}', '--async');
    await jobs('status', 'sdxl', 'job-1');
    expect(h.out()).toBe(
      'job-1\nID:         job-1\nStatus:     COMPLETED\nDelay:      120 ms\nExecution:  1.5 s\nWorker:     w-1\nOutput:\n{\n  "text": "hello"\n}\n',
    );
  });

  it('cancel, list with its filter and purge send their routes and print one line or a table', async () => {
    for (let i = 0; i < 3; i += 1) await jobs('run', 'sdxl', '{}', '--async');
    await jobs('cancel', 'sdxl', 'job-2');
    await jobs('list', 'sdxl', '--status', 'in_queue', '--limit', '5');
    await jobs('purge', 'sdxl');
    const out = h.out().split('\n').slice(3).join('\n');
    expect(out).toMatch(
      /^job job-2 CANCELLED\nIN_QUEUE 2 {2}IN_PROGRESS 0 {2}COMPLETED 0 {2}FAILED 0 {2}CANCELLED 1 {2}TIMED_OUT 0\n/,
    );
    expect(out).toMatch(
      /ID +STATUS +DELAY +EXECUTION +WORKER +CREATED\njob-3 +IN_QUEUE +2026-11-26T17:00:00.000Z\njob-1 +IN_QUEUE/,
    );
    expect(out).toMatch(/removed 2 queued jobs\n$/);
    expect(gateway.requests.slice(3).map((r) => [r.method, r.path, r.query])).toEqual([
      ['POST', '/v2/sdxl/cancel/job-2', {}],
      ['GET', '/v2/sdxl/jobs', { status: 'IN_QUEUE', limit: '5' }],
      ['POST', '/v2/sdxl/purge-queue', {}],
    ]);
  });

  it('refuses bad input before sending, and reports what the gateway refused', async () => {
    await jobs('run', 'sdxl', '{not json');
    await jobs('list', 'sdxl', '--status', 'DONE');
    expect(h.err()).toBe(
      'error: the input is not valid JSON\nerror: --status must be one of IN_QUEUE, IN_PROGRESS, COMPLETED, FAILED, CANCELLED, TIMED_OUT\n',
    );
    expect(gateway.requests).toEqual([]);

    await jobs('status', 'sdxl', 'nope');
    expect(h.err()).toContain('error: HTTP_404: 404 Not Found: {"error":"no job nope"}');
    h = makeHarness({ env: { CORRAL_GATEWAY_URL: gateway.base, CORRAL_API_KEY: 'sk_wrong' } });
    await jobs('status', 'sdxl', 'job-1');
    expect(h.err()).toContain('HTTP_401');
    h = makeHarness({ env: { CORRAL_GATEWAY_URL: gateway.base } });
    await jobs('list', 'sdxl');
    expect(h.err()).toBe('error: no key: pass --api-key or set CORRAL_API_KEY\n');
  });
});
