import { describe, expect, it } from 'vitest';
import { DEFAULT_JOB_POLICY, type Job } from '../domain/job.js';
import {
  jobStatusBody,
  jobSummary,
  parseRunBody,
  parseStreamChunk,
  parseWait,
  parseWorkerResult,
  streamBody,
} from './jobs.js';

const job = (over: Partial<Job> = {}): Job => ({
  id: 'j-1',
  endpointId: 'ep-1',
  ownerId: 'o',
  status: 'COMPLETED',
  input: '{"a":1}',
  output: '{"b":2}',
  error: null,
  webhook: null,
  policy: DEFAULT_JOB_POLICY,
  sync: false,
  workerId: 'w-1',
  attempts: 1,
  createdAt: 1_000,
  startedAt: 1_250,
  completedAt: 2_000,
  ...over,
});

describe('a run body', () => {
  it('keeps the input as JSON text, with the webhook and the policy', () => {
    expect(
      parseRunBody(
        '{"input":{"prompt":"x"},"webhook":"https://h/x","policy":{"executionTimeout":5000,"ttl":10000,"lowPriority":true}}',
      ),
    ).toEqual({
      ok: true,
      value: {
        input: '{"prompt":"x"}',
        inputBytes: 14,
        webhook: 'https://h/x',
        policy: { executionTimeoutMs: 5000, ttlMs: 10000, lowPriority: true },
      },
    });
    expect(parseRunBody('{"input":0}')).toMatchObject({ ok: true, value: { policy: DEFAULT_JOB_POLICY } });
  });

  it.each([
    ['{', 'not JSON'],
    ['[1]', 'a JSON object'],
    ['{}', 'input is required'],
    ['{"input":null}', 'input is required'],
    ['{"input":1,"webhook":3}', 'webhook'],
    ['{"input":1,"webhook":"ftp://x"}', 'http(s)'],
    ['{"input":1,"policy":{"executionTimeout":4999}}', 'policy.executionTimeout'],
    ['{"input":1,"policy":{"ttl":9999}}', 'policy.ttl'],
    ['{"input":1,"policy":{"lowPriority":"yes"}}', 'policy.lowPriority'],
  ])('refuses %s, naming the problem', (text, named) => {
    const parsed = parseRunBody(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toContain(named);
  });

  it('reads wait as bounded milliseconds', () => {
    expect(parseWait(null, 100)).toEqual({ ok: true, value: undefined });
    expect(parseWait('5000', 100)).toEqual({ ok: true, value: 100 });
    expect(parseWait('-1', 100).ok).toBe(false);
  });
});

describe('the status body', () => {
  it("is RunPod's, with the output as stored and the delay and execution times", () => {
    expect(JSON.parse(jobStatusBody(job(), 5_000))).toEqual({
      id: 'j-1',
      status: 'COMPLETED',
      delayTime: 250,
      executionTime: 750,
      workerId: 'w-1',
      output: { b: 2 },
    });
    expect(
      JSON.parse(
        jobStatusBody(
          job({ status: 'IN_QUEUE', workerId: null, output: null, startedAt: null, completedAt: null }),
          1_400,
        ),
      ),
    ).toEqual({ id: 'j-1', status: 'IN_QUEUE', delayTime: 400, executionTime: 0 });
  });

  it('says why a queued job waits (BUDGET_EXCEEDED), and only while it is queued', () => {
    const spent = 'BUDGET_EXCEEDED: the monthly budget (quotas budget.perMonth) is spent';
    const queued = job({
      status: 'IN_QUEUE',
      workerId: null,
      output: null,
      startedAt: null,
      completedAt: null,
    });
    expect(JSON.parse(jobStatusBody(queued, 1_400, () => spent))).toEqual({
      id: 'j-1',
      status: 'IN_QUEUE',
      delayTime: 400,
      executionTime: 0,
      waitingFor: spent,
    });
    expect(JSON.parse(jobStatusBody(job(), 5_000, () => spent))).not.toHaveProperty('waitingFor');
  });

  it("lists a job with its submission time in ISO 8601, as the client's list reads it", () => {
    expect(jobSummary(job({ error: 'x' }), 5_000)).toEqual({
      id: 'j-1',
      status: 'COMPLETED',
      createdAt: '1970-01-01T00:00:01.000Z',
      delayTime: 250,
      executionTime: 750,
      workerId: 'w-1',
      attempts: 1,
      error: 'x',
    });
  });

  it('wraps stream chunks as {"output": ...} items', () => {
    expect(JSON.parse(streamBody(job({ status: 'IN_PROGRESS' }), ['{"output":1}', '2']))).toEqual({
      status: 'IN_PROGRESS',
      stream: [{ output: 1 }, { output: 2 }],
    });
  });
});

describe("a worker's result", () => {
  it('is progress, an output, an error, with stopPod', () => {
    expect(parseWorkerResult('{"status":"IN_PROGRESS","output":"half"}')).toEqual({
      ok: true,
      value: { kind: 'progress', output: '"half"' },
    });
    expect(parseWorkerResult('{"output":{"x":1},"stopPod":true}')).toEqual({
      ok: true,
      value: { kind: 'final', status: 'COMPLETED', output: '{"x":1}', error: null, stopPod: true },
    });
    expect(parseWorkerResult('{"error":{"type":"E"}}')).toMatchObject({
      value: { status: 'FAILED', error: '{"type":"E"}', output: null },
    });
    expect(parseWorkerResult('{}')).toMatchObject({ value: { status: 'COMPLETED', output: null } });
    expect(parseWorkerResult('output=1').ok).toBe(false);
  });
});

describe('JSON nested past the limit (128 levels)', () => {
  const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('is refused in a result and in a stream chunk, naming the limit, before it is parsed', () => {
    const result = parseWorkerResult(`{"output":${deep(100_000)}}`);
    expect(result).toEqual({ ok: false, problem: expect.stringContaining('more than 128 levels deep') });
    expect(parseStreamChunk(deep(129))).toMatchObject({ ok: false, problem: expect.stringContaining('128') });
    expect(parseStreamChunk(deep(128))).toEqual({ ok: true, value: deep(128) });
    expect(parseStreamChunk('{"output": ')).toEqual({ ok: false, problem: 'a stream chunk must be JSON' });
  });
});
