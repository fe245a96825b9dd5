/** RunPod's client paths and the jobs listing's query, read as the gateway's jobs routes read them. */
import { describe, expect, it } from 'vitest';
import { parseClientPath, parseJobListQuery } from './runpod-routes.js';

describe('parseClientPath', () => {
  it('reads a route with and without a job, the endpoint by id or name, percent-encoded or not', () => {
    expect(parseClientPath('POST', '/v2/ep-1/run')).toEqual({
      ok: true,
      value: { kind: 'route', ref: 'ep-1', verb: 'run', jobId: '' },
    });
    expect(parseClientPath('GET', '/v2/my%20app/status/job-9')).toEqual({
      ok: true,
      value: { kind: 'route', ref: 'my app', verb: 'status', jobId: 'job-9' },
    });
  });

  it("reads RunPod's OpenAI route with the rest of the path, also for an endpoint called openai", () => {
    expect(parseClientPath('POST', '/v2/ep-1/openai/v1/chat/completions')).toEqual({
      ok: true,
      value: { kind: 'openai', ref: 'ep-1', route: '/v1/chat/completions' },
    });
    expect(parseClientPath('GET', '/v2/openai/openai/v1/models')).toMatchObject({
      value: { kind: 'openai', ref: 'openai', route: '/v1/models' },
    });
  });

  it('refuses an unknown route, a wrong method, a job where none belongs or none where one does, and extra segments', () => {
    for (const [method, path] of [
      ['POST', '/v2/ep-1/launch'],
      ['GET', '/v2/ep-1/run'],
      ['POST', '/v2/ep-1/run/job-1'],
      ['GET', '/v2/ep-1/status'],
      ['GET', '/v2/ep-1/status/job-1/more'],
      ['POST', '/v2//run'],
      ['POST', '/v2/%E0%A4%A/run/x'],
    ] as const)
      expect(parseClientPath(method, path), `${method} ${path}`).toMatchObject({ ok: false });
    expect(parseClientPath('GET', '/v2/ep-1/run')).toEqual({
      ok: false,
      problem: 'no route GET /v2/{endpoint}/run: see docs/jobs.md',
    });
  });
});

describe('parseJobListQuery', () => {
  const read = (query: string) => parseJobListQuery(new URLSearchParams(query));

  it('defaults to 50 jobs of every status, and takes a status and a limit up to 1,000', () => {
    expect(read('')).toEqual({ ok: true, value: { limit: 50 } });
    expect(read('status=IN_QUEUE&limit=1000')).toEqual({
      ok: true,
      value: { limit: 1000, status: 'IN_QUEUE' },
    });
  });

  it('refuses an unknown status and a limit that is not a whole number from 1 to 1,000', () => {
    expect(read('status=queued')).toEqual({
      ok: false,
      problem: 'status must be one of the job statuses, got queued',
    });
    for (const limit of ['0', '1001', '2.5', 'ten'])
      expect(read(`limit=${limit}`)).toEqual({
        ok: false,
        problem: 'limit must be an integer from 1 to 1000',
      });
  });
});
