import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { createLogger } from '../../logger.js';
import { exitDescription } from '../../runtime/exit-description.js';
import { type BackoffPolicy, type CrashRecord, NO_CRASHES, recordFailure } from '../crashes/backoff.js';
import { crashedEvent, failedEvent } from '../crashes/crash-event.js';
import { CRASH_LOOP_RETELL_MS, type FailureNote, failureLine, WorkerLog } from './worker-log.js';

const POLICY: BackoffPolicy = { baseMs: 1000, capMs: 60_000, crashLoopAfter: 5 };
const T0 = Date.UTC(2026, 10, 29, 10, 0, 0);
const TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "/app/handler.py", line 1, in <module>',
  '    import torch',
  "ModuleNotFoundError: No module named 'torch'",
  '',
];

/** The endpoint's run after failures at these times (each a death of a started worker). */
function run(times: number[], code: 'RUNTIME_ERROR' | 'HEALTH_TIMEOUT' = 'RUNTIME_ERROR'): CrashRecord {
  return times.reduce(
    (crash, at) => recordFailure(crash, { code, message: 'exited with code 1', at }, POLICY),
    NO_CRASHES,
  );
}

/** A worker of endpoint ep_1 that exited with code 1 at `at`, its run as given. */
function exited(at: number, crash: CrashRecord, workerId = 'w_1'): FailureNote {
  const container = { exitCode: 1 } as const;
  return {
    endpointId: 'ep_1',
    event: crashedEvent(workerId, exitDescription(container), 'RUNTIME_ERROR', container as never, at),
    crash,
  };
}

describe('failureLine: the line a person sees for each failure', () => {
  const line = (note: FailureNote, output: string[] = [], now = note.event.at) =>
    failureLine({ note, endpointName: 'sdxl', output, policy: POLICY, loopTold: undefined, now }).line;

  it('an exit: the endpoint by name and id, the exit code and the last line of the output', () => {
    const said = line(exited(T0, run([T0])), TRACEBACK);
    expect(said.level).toBe('warn');
    expect(said.message).toBe(
      `endpoint sdxl (ep_1): worker w_1 exited with code 1: "ModuleNotFoundError: No module named 'torch'"`,
    );
    expect(said.fields).toMatchObject({
      endpointId: 'ep_1',
      endpointName: 'sdxl',
      workerId: 'w_1',
      cause: 'RUNTIME_ERROR',
      exitCode: 1,
      // The last three lines that say something (the blank one dropped), for a log collector.
      output: TRACEBACK.slice(1, 4),
      failures: 1,
    });
  });

  it('out of memory: said as such, with the limit and the exit code, and the runtime reason as a field', () => {
    const container = {
      exitCode: 137,
      exitReason: 'out-of-memory',
      memoryLimitBytes: 256 * 1024 * 1024,
    } as const;
    const reason = exitDescription(container);
    const note: FailureNote = {
      endpointId: 'ep_1',
      event: crashedEvent('w_2', reason, 'RUNTIME_ERROR', container as never, T0),
      crash: run([T0]),
    };
    const said = line(note);
    expect(said.message).toBe(
      'endpoint sdxl (ep_1): worker w_2 ran out of memory: limit 256 MiB (exit code 137)',
    );
    expect(said.fields).toMatchObject({ exitCode: 137, exitReason: 'out-of-memory' });
  });

  it.each([
    {
      code: 'HEALTH_TIMEOUT' as const,
      message:
        'never passed its health check GET /health within 300 s of starting; last probe: 404 Not Found',
    },
    {
      code: 'HEALTH_TIMEOUT' as const,
      message: 'GET /ping answered 404 on every probe for 10 s: set healthy.path to a path your app serves',
    },
    { code: 'IMAGE_PULL_FAILED' as const, message: 'no image sdxl:lates on this machine or its registry' },
  ])('a failure the controller decided ($code): its code and its message', ({ code, message }) => {
    const crash = recordFailure(NO_CRASHES, { code, message, at: T0 }, POLICY);
    const said = line({ endpointId: 'ep_1', event: failedEvent('w_3', code, message, T0), crash });
    expect(said.level).toBe('warn');
    expect(said.message).toBe(`endpoint sdxl (ep_1): worker w_3 failed (${code}): ${message}`);
    expect(said.fields).toMatchObject({ cause: code, reason: message });
  });

  it('a deleted endpoint (no name known) is named by its id alone', () => {
    const said = failureLine({
      note: exited(T0, run([T0])),
      endpointName: undefined,
      output: [],
      policy: POLICY,
      loopTold: undefined,
      now: T0,
    }).line;
    expect(said.message).toBe('endpoint ep_1: worker w_1 exited with code 1');
    expect(said.fields).not.toHaveProperty('endpointName');
  });
});

describe('WorkerLog', () => {
  const endpoint: Endpoint = { ...sampleEndpoint(), id: 'ep_1' };
  endpoint.spec = { ...endpoint.spec, name: 'sdxl' };

  function harness() {
    const lines: { level: number; msg: string; [key: string]: unknown }[] = [];
    let now = T0;
    const logger = createLogger({
      level: 'debug',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    const log = new WorkerLog({
      logger,
      endpoints: () => new Map([[endpoint.id, endpoint]]),
      policy: POLICY,
      clock: () => now,
    });
    return {
      log,
      lines,
      at: (ms: number) => {
        now = ms;
      },
      said: () => lines.filter((l) => l.level >= 30).map((l) => l.msg),
    };
  }

  it('a crash loop is said once with its length and backoff, not once per worker; a new cause is said again', () => {
    const { log, at, said, lines } = harness();
    // Workers die as the default backoff lets them start: 1 s, 2 s, 4 s, 8 s apart.
    const times = [0, 1000, 3000, 7000, 15_000, 31_000, 63_000, 123_000].map((ms) => T0 + ms);
    let crash = NO_CRASHES;
    for (const [i, time] of times.entries()) {
      crash = recordFailure(
        crash,
        { code: 'RUNTIME_ERROR', message: 'exited with code 1', at: time },
        POLICY,
      );
      at(time + 200);
      log.started({ id: `w_${i + 2}`, endpointId: 'ep_1' }, crash);
      log.failed(exited(time, crash, `w_${i + 1}`), TRACEBACK);
    }
    expect(said()).toEqual([
      ...[1, 2, 3, 4].map(
        (n) =>
          `endpoint sdxl (ep_1): worker w_${n} exited with code 1: "ModuleNotFoundError: No module named 'torch'"`,
      ),
      `endpoint sdxl (ep_1): worker crashed 5 times in 15 s (exited with code 1: "ModuleNotFoundError: No module named 'torch'"); next try in 16 s`,
    ]);
    // The repeats and the retries' starts are still there for whoever logs at debug.
    expect(lines.filter((l) => l.level === 20)).toHaveLength(times.length + 3);

    const later = times.at(-1) ?? 0;
    at(later + CRASH_LOOP_RETELL_MS);
    crash = recordFailure(
      crash,
      { code: 'RUNTIME_ERROR', message: 'exited with code 1', at: later + 1 },
      POLICY,
    );
    log.failed(exited(later + 1, crash, 'w_9'), TRACEBACK);
    expect(said().at(-1)).toBe(
      `endpoint sdxl (ep_1): worker crashed 9 times in 2 min (exited with code 1: "ModuleNotFoundError: No module named 'torch'"); next try in 0 ms`,
    );
    crash = recordFailure(
      crash,
      { code: 'RUNTIME_ERROR', message: 'exited with code 2', at: later + 2 },
      POLICY,
    );
    log.failed(exited(later + 2, crash, 'w_10'), ['disk full']);
    expect(said().at(-1)).toMatch(/worker crashed 10 times in 2 min \(exited with code 2: "disk full"\)/);
  });

  it('says a start, a ready with the time it took, a failing health check with its path, and a drain', () => {
    const { log, at, said, lines } = harness();
    const worker = { id: 'w_1', endpointId: 'ep_1' };
    log.started(worker, NO_CRASHES);
    at(T0 + 2345);
    log.ready(worker, 2345);
    log.healthFailing(worker, 'GET /ping', '404 Not Found');
    log.stopping(worker, 'scaled down');
    expect(said()).toEqual([
      'endpoint sdxl (ep_1): worker w_1 started',
      'endpoint sdxl (ep_1): worker w_1 ready in 2.3 s',
      'endpoint sdxl (ep_1): worker w_1 health check GET /ping failing: 404 Not Found',
      'endpoint sdxl (ep_1): worker w_1 stopping: scaled down',
    ]);
    expect(lines[1]).toMatchObject({ endpointName: 'sdxl', readyMs: 2345 });
    expect(lines[2]).toMatchObject({ level: 40, path: 'GET /ping', cause: '404 Not Found' });
  });
});
