import { describe, expect, it } from 'vitest';
import {
  parseWorkerPath,
  readPingJobIds,
  readTakeQuery,
  workerProtocolEnv,
  workerProtocolUrls,
} from './runpod-worker.js';

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

describe("the worker protocol's queries", () => {
  it('take a batch size of at least 1 on a batch take only, and job_in_progress as 1 or 0', () => {
    const read = (query: string, batch: boolean) => readTakeQuery(new URLSearchParams(query), batch);
    expect(read('batch_size=8&job_in_progress=1', true)).toEqual({ batch: 8, holding: true });
    expect(read('batch_size=8&job_in_progress=0', false)).toEqual({ batch: 1, holding: false });
    for (const size of ['0', '-2', '2.5', 'x']) expect(read(`batch_size=${size}`, true).batch).toBe(1);
    expect(read('job_in_progress=yes', true).holding).toBeUndefined();
  });

  it("list a ping's jobs repeated, comma-separated or both, trimmed and none empty", () => {
    expect(readPingJobIds(new URLSearchParams('job_id=a,%20b&job_id=c&job_id=&job_id=,d,'))).toEqual([
      'a',
      'b',
      'c',
      'd',
    ]);
  });
});
