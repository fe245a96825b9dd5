import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sampleJob } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { DEFAULT_JOB_POLICY, type Job } from '../domain/job.js';
import { JOB_TIME_BUCKETS } from '../ports/traffic.js';
import { connectSqlite } from '../store/sqlite/connect.js';
import { Store } from '../store/store.js';
import { JobEvents } from './job-events.js';
import { JobMetrics } from './job-metrics.js';
import { JobSignals } from './job-signals.js';

const silent = { warn: () => {}, error: () => {} };

/** The bucket index of a time in seconds (the last: +Inf). */
const bucketOf = (seconds: number) => {
  const i = JOB_TIME_BUCKETS.findIndex((bound) => seconds <= bound);
  return i < 0 ? JOB_TIME_BUCKETS.length : i;
};

describe('jobs in /metrics and the history', () => {
  let store: Store;
  let timers: ManualTimers;
  let events: JobEvents;
  let registry: Registry;
  let metrics: JobMetrics;
  let signals: JobSignals;
  let reads: number;

  beforeEach(async () => {
    store = new Store({ connection: connectSqlite(':memory:') });
    await store.migrate();
    timers = new ManualTimers(0);
    events = new JobEvents();
    registry = new Registry();
    reads = 0;
    const jobs = store.jobs;
    // The autoscaler's reads of the store, counted: the metrics make none of their own.
    const counted = new Proxy(jobs, {
      get(target, name) {
        if (name === 'queueSignals') reads += 1;
        const value = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    signals = new JobSignals({
      jobs: counted,
      events,
      clock: () => timers.now,
      timers,
      logger: silent,
      refreshMs: 1_000,
    });
    metrics = new JobMetrics({ registry, events, live: () => signals.live() });
  });
  afterEach(async () => {
    metrics.close();
    await signals.close();
    await store.close();
  });

  const enqueue = (id: string, endpointId: string, createdAt: number) =>
    store.jobs.enqueue(sampleJob(id, endpointId, { createdAt }), 60_000);

  /** A job taken at `startedAt` and finished with `status` at `completedAt`, as its store answers it. */
  const run = async (
    id: string,
    status: 'COMPLETED' | 'FAILED',
    createdAt: number,
    startedAt: number,
    completedAt: number,
  ) => {
    await enqueue(id, 'ep-1', createdAt);
    await store.jobs.take({ endpointId: 'ep-1', workerId: `w-${id}`, max: 1, cap: 1, now: startedAt });
    const { job } = await store.jobs.complete({
      jobId: id,
      workerId: `w-${id}`,
      status,
      output: '1',
      error: null,
      now: completedAt,
    });
    if (!job) throw new Error('not applied');
    return job;
  };

  it('count finished jobs by outcome with their delay and execution times, and retries, from the job events', async () => {
    events.emit('finished', { job: await run('j-1', 'COMPLETED', 0, 40, 2_040) });
    events.emit('finished', { job: await run('j-2', 'COMPLETED', 0, 300, 1_300) });
    events.emit('finished', { job: await run('j-3', 'FAILED', 0, 40, 90) });
    // Cancelled in the queue: its delay is counted (as its status body says it), it has no execution time.
    await enqueue('j-4', 'ep-1', 0);
    const cancelled = (await store.jobs.cancel('ep-1', 'j-4', 7_000)) as Job;
    events.emit('finished', { job: cancelled });
    // A job that is not finished is not counted (a listener that misfires must not count it).
    events.emit('finished', { job: { ...cancelled, status: 'IN_PROGRESS' } });
    events.emit('retried', { endpointId: 'ep-1', count: 2 });
    events.emit('retried', { endpointId: 'ep-1', count: 1 });

    const counters = metrics.counters().get('ep-1');
    expect(counters?.finished).toEqual({ completed: 2, failed: 1, cancelled: 1, timedOut: 0 });
    expect(counters?.retried).toBe(3);
    const delays = new Array<number>(JOB_TIME_BUCKETS.length + 1).fill(0);
    for (const s of [0.04, 0.3, 0.04, 7]) delays[bucketOf(s)] = (delays[bucketOf(s)] as number) + 1;
    expect(counters?.delayCounts).toEqual(delays);
    const executions = new Array<number>(JOB_TIME_BUCKETS.length + 1).fill(0);
    for (const s of [2, 1, 0.05]) executions[bucketOf(s)] = (executions[bucketOf(s)] as number) + 1;
    expect(counters?.executionCounts).toEqual(executions);

    const text = await registry.metrics();
    expect(text).toContain('corral_jobs_finished_total{endpoint="ep-1",outcome="COMPLETED"} 2');
    expect(text).toContain('corral_jobs_finished_total{endpoint="ep-1",outcome="FAILED"} 1');
    expect(text).toContain('corral_jobs_finished_total{endpoint="ep-1",outcome="CANCELLED"} 1');
    expect(text).not.toContain('outcome="TIMED_OUT"');
    expect(text).toContain('corral_jobs_retried_total{endpoint="ep-1"} 3');
    expect(text).toContain('corral_job_delay_seconds_count{endpoint="ep-1"} 4');
    expect(text).toContain('corral_job_execution_seconds_count{endpoint="ep-1"} 3');
    expect(text).toContain('corral_job_execution_seconds_sum{endpoint="ep-1"} 3.05');
  });

  it("serve every endpoint's queued (low-priority ones too) and running jobs from the autoscaler's read, none per scrape", async () => {
    for (let i = 0; i < 50; i++) await enqueue(`j-${i}`, `ep-${i % 10}`, 0);
    const low = { ...DEFAULT_JOB_POLICY, lowPriority: true };
    await store.jobs.enqueue(sampleJob('j-low', 'ep-9', { policy: low }), 60_000);
    await store.jobs.take({ endpointId: 'ep-3', workerId: 'w-1', max: 2, cap: 2, now: 10 });
    await signals.refresh();
    expect(reads).toBe(1);
    const text = await registry.metrics();
    await registry.metrics();
    expect(reads).toBe(1);
    expect(text).toContain('corral_jobs{endpoint="ep-3",status="IN_QUEUE"} 3');
    expect(text).toContain('corral_jobs{endpoint="ep-3",status="IN_PROGRESS"} 2');
    expect(text).toContain('corral_jobs{endpoint="ep-9",status="IN_QUEUE"} 6');
    expect(metrics.live().get('ep-3')).toEqual({ inQueue: 3, inProgress: 2 });
  });

  it('forget the counts of a deleted endpoint', async () => {
    events.emit('finished', { job: await run('j-2', 'COMPLETED', 0, 10, 20) });
    expect([...metrics.counters((id) => id !== 'ep-1').keys()]).toEqual([]);
    const text = await registry.metrics();
    expect(text).not.toContain('corral_jobs_finished_total{endpoint="ep-1"');
    expect(text).not.toContain('corral_job_delay_seconds_count{endpoint="ep-1"}');
  });
});
