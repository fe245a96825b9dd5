import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import type { HealthCheck } from '../../domain/endpoint.js';
import { HealthProber, type ProbeTarget } from './health-prober.js';
import { answered, type ProbeResult } from './probe-result.js';

const check: HealthCheck = {
  path: '/health',
  initialDelaySeconds: 0,
  periodSeconds: 2,
  timeoutSeconds: 1,
  successThreshold: 2,
  failureThreshold: 2,
};
const address = { host: '127.0.0.1', port: 9000 };

/**
 * A prober over one worker whose probe answers come from `answers` in turn: true a 200, false a 503, or a result
 * (a throw counts as a failure).
 */
function harness(answers: (boolean | 'throw' | ProbeResult)[]) {
  const timers = new ManualTimers();
  const results: { at: number; healthy: boolean; flipped: boolean }[] = [];
  const probedAt: number[] = [];
  const causes: (string | undefined)[] = [];
  let target: ProbeTarget | undefined = { address, check, appPort: 8000, fast: true };
  const prober = new HealthProber({
    timers,
    startingIntervalMs: 50,
    probe: async (probed, path, timeoutMs) => {
      expect([probed, path, timeoutMs]).toEqual([address, '/health', 1000]);
      probedAt.push(timers.now);
      const answer = answers.shift() ?? false;
      if (answer === 'throw') throw new Error('probe exploded');
      return typeof answer === 'boolean' ? answered(answer ? 200 : 503) : answer;
    },
    target: () => target,
    onResult: (_, healthy, flipped, cause) => {
      results.push({ at: timers.now, healthy, flipped });
      causes.push(cause);
      // The owner marks the worker ready once healthy: it is probed at the check's period from then on.
      if (healthy && target) target = { ...target, fast: false };
    },
  });
  return {
    timers,
    prober,
    results,
    causes,
    probedAt,
    forget: () => {
      target = undefined;
    },
  };
}

describe('HealthProber', () => {
  it.each([
    {
      case: 'healthy after successThreshold passes in a row, probed fast until then',
      answers: [true, true, true],
      expected: [
        { at: 0, healthy: false, flipped: false },
        { at: 50, healthy: true, flipped: true },
        { at: 2050, healthy: true, flipped: false },
      ],
    },
    {
      case: 'a failure (or a probe that throws) starts the count of passes over',
      answers: [true, 'throw', true, true] as const,
      expected: [
        { at: 0, healthy: false, flipped: false },
        { at: 50, healthy: false, flipped: false },
        { at: 100, healthy: false, flipped: false },
        { at: 150, healthy: true, flipped: true },
      ],
    },
    {
      case: 'unhealthy again after failureThreshold failures in a row',
      answers: [true, true, false, false],
      expected: [
        { at: 0, healthy: false, flipped: false },
        { at: 50, healthy: true, flipped: true },
        { at: 2050, healthy: true, flipped: false },
        { at: 4050, healthy: false, flipped: true },
      ],
    },
  ])('$case', async ({ answers, expected }) => {
    const h = harness([...answers]);
    h.prober.schedule('w1', 0);
    await h.timers.advanceSettling(expected.at(-1)?.at ?? 0);
    expect(h.results).toEqual(expected);
  });

  it("tells each failing probe's cause, at the next probe after a change, and none for a pass", async () => {
    const h = harness([
      { kind: 'error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:9000' },
      { kind: 'answered', status: 404 },
      { kind: 'timeout' },
      'throw',
      true,
    ]);
    h.prober.schedule('w1', 0);
    await h.timers.advanceSettling(200);
    expect(h.causes).toEqual([
      // The app's port (appPort), not the address probed (a published port).
      'connection refused on port 8000',
      'HTTP 404 from /health',
      'no answer from /health within 1 s',
      'probe on port 8000 failed: probe exploded',
      undefined,
    ]);
    expect(h.results.map((r) => r.at)).toEqual([0, 50, 100, 150, 200]);
  });

  it('stops probing a worker its owner no longer names, and one it was told to stop', async () => {
    const h = harness([false, false, false, false]);
    h.prober.schedule('w1', 0);
    await h.timers.advanceSettling(60);
    expect(h.probedAt).toEqual([0, 50]);
    h.prober.stop('w1');
    await h.timers.advanceSettling(1000);
    expect(h.probedAt).toEqual([0, 50]);
    h.prober.schedule('w1', 0);
    await h.timers.advanceSettling(0);
    h.forget();
    await h.timers.advanceSettling(1000);
    expect(h.probedAt).toEqual([0, 50, 1060]);
    expect(h.timers.count).toBe(0);
  });

  it("with a queue worker's own check and alsoHttp, passes only when both do, and names the first that failed", async () => {
    const timers = new ManualTimers();
    // Each step: the worker's polls' verdict, the HTTP probe's answer (asked only when the polls passed).
    const own: ProbeResult[] = [
      { kind: 'error', code: 'NO_POLL', message: 'the worker has not polled for a job yet' },
      answered(200),
      answered(200),
      answered(200),
      answered(200),
      { kind: 'error', code: 'NO_PING', message: 'no poll or ping from the worker for 9 s' },
    ];
    const http = [answered(503), answered(200), answered(200), answered(404)];
    const asked: string[] = [];
    const seen: { healthy: boolean; cause: string | undefined }[] = [];
    const prober = new HealthProber({
      timers,
      startingIntervalMs: 50,
      probe: async (_address, path) => {
        asked.push(`http ${path}`);
        return http.shift() ?? answered(500);
      },
      target: () => ({
        address,
        check: { ...check, path: '/ready', successThreshold: 1, failureThreshold: 1 },
        appPort: 8000,
        fast: true,
        probe: async () => {
          asked.push('polls');
          return own.shift() ?? answered(200);
        },
        alsoHttp: true,
      }),
      onResult: (_, healthy, _flipped, cause) => seen.push({ healthy, cause }),
    });
    prober.schedule('w1', 0);
    await timers.advanceSettling(250);
    prober.close();
    expect(asked).toEqual([
      'polls',
      'polls',
      'http /ready',
      'polls',
      'http /ready',
      'polls',
      'http /ready',
      'polls',
      'http /ready',
      'polls',
    ]);
    expect(seen).toEqual([
      {
        healthy: false,
        cause: 'probe on port 8000 failed: NO_POLL: the worker has not polled for a job yet',
      },
      { healthy: false, cause: 'HTTP 503 from /ready' },
      { healthy: true, cause: undefined },
      { healthy: true, cause: undefined },
      { healthy: false, cause: 'HTTP 404 from /ready' },
      {
        healthy: false,
        cause: 'probe on port 8000 failed: NO_PING: no poll or ping from the worker for 9 s',
      },
    ]);
  });

  it('probes nothing after close', async () => {
    const h = harness([true]);
    h.prober.schedule('w1', 10);
    h.prober.close();
    h.prober.schedule('w1', 0);
    await h.timers.advanceSettling(100);
    expect(h.probedAt).toEqual([]);
    expect(h.timers.count).toBe(0);
  });
});
