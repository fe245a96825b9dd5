import { describe, expect, it } from 'vitest';
import type { WorkerErrorCode } from '../../domain/worker.js';
import { type CrashRecord, endpointFailure, NO_CRASHES, recordFailure, runIsOver } from './backoff.js';

const policy = { baseMs: 1000, capMs: 60_000, crashLoopAfter: 5 };
const TEN_MIN = 600_000;

function run(afterReady: boolean, lastAt = 100_000): CrashRecord {
  return recordFailure(NO_CRASHES, { code: 'RUNTIME_ERROR', message: 'x', at: lastAt, afterReady }, policy);
}

describe('runIsOver', () => {
  it.each([
    { why: 'no failures: nothing to end', record: NO_CRASHES, ready: [200_000], now: 900_000, over: false },
    {
      why: 'never-ready workers, one ready now',
      record: run(false),
      ready: [100_500],
      now: 100_600,
      over: true,
    },
    { why: 'never-ready workers, none ready', record: run(false), ready: [], now: 900_000, over: false },
    { why: 'flapping, ready 3 s', record: run(true), ready: [101_000], now: 104_000, over: false },
    {
      why: 'flapping, ready 9 min',
      record: run(true),
      ready: [101_000],
      now: 101_000 + 540_000,
      over: false,
    },
    {
      why: 'flapping, ready 10 min',
      record: run(true),
      ready: [101_000],
      now: 101_000 + TEN_MIN,
      over: true,
    },
    {
      why: 'flapping; a worker ready since before the last failure does not count',
      record: run(true),
      ready: [50_000],
      now: 50_000 + 2 * TEN_MIN,
      over: false,
    },
  ])('$why -> $over', ({ record, ready, now, over }) => {
    expect(runIsOver(record, ready, now, TEN_MIN)).toBe(over);
  });

  it('a run stays flapping once a worker that had been ready died in it', () => {
    let record = run(true);
    record = recordFailure(record, { code: 'HEALTH_TIMEOUT', message: 'y', at: 200_000 }, policy);
    expect(record).toMatchObject({ failures: 2, afterReady: true, lastAt: 200_000, retryAt: 202_000 });
  });
});

describe('endpointFailure', () => {
  /** A run of failures with these codes, in order, 1 s apart. */
  const runOf = (codes: WorkerErrorCode[]) =>
    codes.reduce(
      (record, code, i) =>
        recordFailure(record, { code, message: `${code} #${i + 1}`, at: i * 1000 }, policy),
      NO_CRASHES,
    );
  const H = 'HEALTH_TIMEOUT';
  const R = 'RUNTIME_ERROR';
  it.each<{ why: string; codes: WorkerErrorCode[]; failed: string | undefined; message?: string }>([
    { why: 'no failures', codes: [], failed: undefined },
    { why: 'one pull failure fails it at once', codes: ['IMAGE_PULL_FAILED'], failed: 'IMAGE_PULL_FAILED' },
    { why: 'a lone health timeout is retried, not failed', codes: [H], failed: undefined },
    {
      why: 'two health timeouts in a row',
      codes: [H, H],
      failed: H,
      message: '2 workers in a row never passed their health check; last: HEALTH_TIMEOUT #2',
    },
    { why: 'a crash between health timeouts starts the count again', codes: [H, R, H], failed: undefined },
    { why: 'four crashes', codes: [R, R, R, R], failed: undefined },
    { why: 'five failures, the last a crash', codes: [H, R, R, R, R], failed: 'CRASH_LOOP' },
    { why: 'five failures ending in two health timeouts', codes: [R, R, R, H, H], failed: H },
    { why: 'a policy that asks for three', codes: [H, H], failed: undefined },
  ])('$why -> $failed', ({ why, codes, failed, message }) => {
    const threeNeeded = why.startsWith('a policy');
    const result = endpointFailure(
      runOf(codes),
      threeNeeded ? { ...policy, healthTimeoutsToFail: 3 } : policy,
    );
    expect(result?.code).toBe(failed);
    if (message) expect(result?.message).toBe(message);
  });
});
