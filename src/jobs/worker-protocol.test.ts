import { describe, expect, it } from 'vitest';
import { parseWorkerPath, workerProtocolEnv, workerProtocolUrls } from './worker-protocol.js';
import { isWorkerToken, WorkerTokens } from './worker-tokens.js';

describe('the worker protocol URLs', () => {
  const urls = workerProtocolUrls('http://10.0.0.1:8082/', 'ep-1', 'w-1');

  it('are the scheme of issue 22, each with a ? query', () => {
    expect(urls).toEqual({
      getJob: 'http://10.0.0.1:8082/v2/ep-1/job-take/w-1?worker=w-1',
      postOutput: 'http://10.0.0.1:8082/v2/ep-1/job-done/w-1/$ID?worker=w-1',
      postStream: 'http://10.0.0.1:8082/v2/ep-1/job-stream/w-1/$ID?worker=w-1',
      ping: 'http://10.0.0.1:8082/v2/ep-1/ping/w-1?worker=w-1',
    });
  });

  it('give the routes the SDK derives by string replacement and appending (rp_job.py, rp_http.py)', () => {
    // rp_job._job_get_url with batch_size 3, then `&job_in_progress=`.
    const batch = `${urls.getJob.replace('/job-take/', '/job-take-batch/')}&batch_size=3&job_in_progress=0`;
    const stop = urls.getJob.replace('/job-take/', '/job-stop/');
    const done = `${urls.postOutput.replace('$ID', 'job-9')}&isStream=false`;
    const paths = [urls.getJob, batch, stop, done, urls.ping].map((u) =>
      parseWorkerPath(new URL(u).pathname),
    );
    expect(paths).toEqual([
      { kind: 'take', endpointId: 'ep-1', workerId: 'w-1', batch: false },
      { kind: 'take', endpointId: 'ep-1', workerId: 'w-1', batch: true },
      { kind: 'stop', endpointId: 'ep-1', workerId: 'w-1' },
      { kind: 'done', endpointId: 'ep-1', workerId: 'w-1', jobId: 'job-9' },
      { kind: 'ping', endpointId: 'ep-1', workerId: 'w-1' },
    ]);
    expect(new URL(batch).searchParams.get('batch_size')).toBe('3');
    expect(new URL(done).searchParams.get('isStream')).toBe('false');
  });

  it('parse nothing else', () => {
    for (const path of [
      '/v2/ep-1/run',
      '/v2/ep-1/job-done/w-1',
      '/v2/ep-1/job-take/w-1/x',
      '/v2/ep-1/ping/%E0',
    ])
      expect(parseWorkerPath(path), path).toBeUndefined();
  });

  it('are in the env of a queue worker with its token, ids and the skipped system checks', () => {
    const env = Object.fromEntries(
      workerProtocolEnv({ base: 'http://h:1', endpointId: 'ep-1', workerId: 'w-1', token: 't' }).map((e) => [
        e.key,
        e.value,
      ]),
    );
    expect(env).toMatchObject({
      RUNPOD_WEBHOOK_GET_JOB: 'http://h:1/v2/ep-1/job-take/w-1?worker=w-1',
      RUNPOD_AI_API_KEY: 't',
      RUNPOD_POD_ID: 'w-1',
      RUNPOD_ENDPOINT_ID: 'ep-1',
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
    });
  });
});

describe('worker tokens', () => {
  const tokens = new WorkerTokens({ secret: 'server-secret' });

  it("verify only for their own endpoint and worker, raw or Bearer, under the server's secret", () => {
    const token = tokens.issue('ep-1', 'w-1');
    expect(isWorkerToken(token)).toBe(true);
    expect(tokens.verify(token, 'ep-1', 'w-1')).toBe(true);
    expect(tokens.verify(`Bearer ${token}`, 'ep-1', 'w-1')).toBe(true);
    expect(tokens.verify(token, 'ep-2', 'w-1')).toBe(false);
    expect(tokens.verify(token, 'ep-1', 'w-2')).toBe(false);
    expect(new WorkerTokens({ secret: 'other' }).verify(token, 'ep-1', 'w-1')).toBe(false);
    expect(tokens.verify('sk_abcdefghijkl_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345', 'ep-1', 'w-1')).toBe(false);
    expect(tokens.verify(undefined, 'ep-1', 'w-1')).toBe(false);
  });

  it('remember the tokens they verified, up to a bound, and still refuse one for another worker', () => {
    const bounded = new WorkerTokens({ secret: 'server-secret', maxVerified: 2 });
    const token = bounded.issue('ep-1', 'w-1');
    expect(bounded.verify(token, 'ep-1', 'w-1')).toBe(true);
    expect(bounded.verify(`Bearer ${token}`, 'ep-1', 'w-1')).toBe(true);
    expect(bounded.remembered).toBe(1);
    expect(bounded.verify(token, 'ep-1', 'w-2')).toBe(false);
    expect(bounded.verify(token, 'ep-2', 'w-1')).toBe(false);
    expect(bounded.verify(`${token}x`, 'ep-1', 'w-1')).toBe(false);
    expect(bounded.remembered).toBe(1);
    for (const w of ['w-2', 'w-3']) expect(bounded.verify(bounded.issue('ep-1', w), 'ep-1', w)).toBe(true);
    expect(bounded.remembered).toBe(2);
    expect(bounded.verify(token, 'ep-1', 'w-1')).toBe(true);
  });
});
