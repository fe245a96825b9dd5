import { describe, expect, it } from 'vitest';
import { sampleEndpoint, sampleWorker } from '../../test/support/fixtures.js';
import { DEFAULT_BACKOFF, NO_CRASHES, recordFailure } from './crashes/backoff.js';
import { endpointStatus } from './endpoint-status.js';
import { nextHealth, UNKNOWN_HEALTH } from './health/health-state.js';
import { type EndpointPlanInput, planEndpoint } from './planner.js';

const endpoint = (min: number, max: number, revision = 1) => ({
  ...sampleEndpoint({ patch: { workers: { minWorkers: min, maxWorkers: max } } }),
  revision,
});

const worker = sampleWorker;

const plan = (input: Partial<EndpointPlanInput> & Pick<EndpointPlanInput, 'endpoint'>) =>
  planEndpoint({
    workers: [],
    desiredWorkers: input.endpoint.spec.workers.minWorkers,
    crash: NO_CRASHES,
    now: 10_000,
    startupTimeoutMs: 60_000,
    unhealthyTimeoutMs: 30_000,
    ...input,
  });

describe('planEndpoint', () => {
  it('adds workers up to minNum', () => {
    expect(plan({ endpoint: endpoint(2, 3) })).toEqual([{ type: 'add', count: 2 }]);
    expect(plan({ endpoint: endpoint(2, 3), workers: [worker('running')] })).toEqual([
      { type: 'add', count: 1 },
    ]);
  });

  it('counts workers on the way as capacity', () => {
    expect(plan({ endpoint: endpoint(2, 3), workers: [worker('pending'), worker('pulling')] })).toEqual([]);
  });

  it('clamps what scaling asks for to [minNum, maxNum]', () => {
    expect(plan({ endpoint: endpoint(1, 3), desiredWorkers: 10 })).toEqual([{ type: 'add', count: 3 }]);
    expect(plan({ endpoint: endpoint(1, 3), desiredWorkers: 0 })).toEqual([{ type: 'add', count: 1 }]);
  });

  it('scales down not-yet-serving workers first, then the newest', () => {
    const running = worker('running');
    const newerRunning = worker('running');
    const starting = worker('starting');
    const actions = plan({ endpoint: endpoint(1, 3), workers: [running, starting, newerRunning] });
    expect(actions).toEqual([
      { type: 'remove', workerId: starting.id, reason: 'scaled down' },
      { type: 'remove', workerId: newerRunning.id, reason: 'scaled down' },
    ]);
  });

  it("removes the autoscaler's idle victims before anything else", () => {
    const starting = worker('starting');
    const idle = worker('running');
    const busy = worker('running');
    const actions = plan({
      endpoint: endpoint(1, 3),
      workers: [starting, idle, busy],
      desiredWorkers: 2,
      preferredVictims: [idle.id],
    });
    expect(actions).toEqual([{ type: 'remove', workerId: idle.id, reason: 'scaled down' }]);
  });

  it('never scales down a worker that holds a job or is taking one, even below what scaling asks for', () => {
    // maxNum 2, two workers: the scale-down to one crossed the take of the newest (the victim it would pick).
    const older = worker('running');
    const taking = worker('running');
    const actions = plan({
      endpoint: endpoint(0, 2),
      workers: [older, taking],
      desiredWorkers: 1,
      busyWorkers: [taking.id],
    });
    expect(actions).toEqual([{ type: 'remove', workerId: older.id, reason: 'scaled down' }]);
    // Both busy: neither goes now; a later pass, once one is idle, removes it.
    expect(
      plan({
        endpoint: endpoint(0, 2),
        workers: [older, taking],
        desiredWorkers: 0,
        busyWorkers: [older.id, taking.id],
      }),
    ).toEqual([]);
  });

  it('waits for the crash backoff before adding', () => {
    const crash = recordFailure(
      NO_CRASHES,
      { code: 'CRASH_LOOP', message: 'exit 1', at: 9_500 },
      DEFAULT_BACKOFF,
    );
    expect(plan({ endpoint: endpoint(1, 1), crash })).toEqual([]);
    expect(plan({ endpoint: endpoint(1, 1), crash, now: 10_600 })).toEqual([{ type: 'add', count: 1 }]);
  });

  it('fails a worker that never became healthy within the startup deadline', () => {
    const stuck = worker('starting', { startedAt: 0 });
    const actions = plan({ endpoint: endpoint(1, 1), workers: [stuck], now: 61_000 });
    expect(actions[0]).toMatchObject({ type: 'fail', workerId: stuck.id, code: 'HEALTH_TIMEOUT' });
    expect(actions[1]).toEqual({ type: 'add', count: 1 });
    expect(plan({ endpoint: endpoint(1, 1), workers: [stuck], now: 59_000 })).toEqual([]);
  });

  describe('a worker that had served and stays unhealthy (unhealthyTimeoutMs 30 s, now 100 s)', () => {
    const now = 100_000;
    it.each([
      ['unhealthy since 69 s (31 s)', 'unhealthy', { unhealthySince: 69_000 }, true],
      ['unhealthy since 70 s (exactly 30 s)', 'unhealthy', { unhealthySince: 70_000 }, false],
      ['unhealthy since 90 s', 'unhealthy', { unhealthySince: 90_000 }, false],
      ['unhealthy, since unknown', 'unhealthy', {}, false],
      [
        'never ready (the startup deadline is its limit)',
        'unhealthy',
        { unhealthySince: 0, readyAt: null, startedAt: 95_000 },
        false,
      ],
      ['running', 'running', {}, false],
      ['draining', 'draining', { unhealthySince: 0 }, false],
    ] as const)('%s: failed UNHEALTHY and replaced: %s', (_name, state, extra, replaced) => {
      const stuck = worker(state, { readyAt: 1, ...extra });
      const actions = plan({ endpoint: endpoint(1, 1), workers: [stuck], now });
      if (!replaced) {
        expect(actions.filter((a) => a.type === 'fail')).toEqual([]);
        return;
      }
      expect(actions).toEqual([
        {
          type: 'fail',
          workerId: stuck.id,
          code: 'UNHEALTHY',
          message: 'unhealthy for more than 30 s after it had served',
        },
        { type: 'add', count: 1 },
      ]);
    });

    it("names the last probe's cause, and waits for the crash backoff before the replacement", () => {
      const stuck = worker('unhealthy', {
        readyAt: 1,
        unhealthySince: 0,
        healthCause: 'connection refused on port 8000',
      });
      const crash = recordFailure(
        NO_CRASHES,
        { code: 'RUNTIME_ERROR', message: 'x', at: 99_500 },
        DEFAULT_BACKOFF,
      );
      expect(plan({ endpoint: endpoint(1, 1), workers: [stuck], now, crash })).toEqual([
        {
          type: 'fail',
          workerId: stuck.id,
          code: 'UNHEALTHY',
          message:
            'unhealthy for more than 30 s after it had served; last probe: connection refused on port 8000',
        },
      ]);
    });
  });

  it("names the last probe's cause in HEALTH_TIMEOUT's message", () => {
    const stuck = worker('starting', { startedAt: 0, healthCause: 'HTTP 404 from /nope' });
    const [failed] = plan({ endpoint: endpoint(1, 1), workers: [stuck], now: 61_000 });
    expect(failed).toMatchObject({
      message:
        'never passed its health check /health within 60 s of starting; last probe: HTTP 404 from /nope',
    });
  });

  it('scaling to zero keeps the oldest worker proving its health until it passes or misses its deadline', () => {
    const older = worker('starting', { startedAt: 0 });
    const newer = worker('starting', { startedAt: 0 });
    const pending = worker('pending');
    const workers = [newer, older, pending];
    expect(plan({ endpoint: endpoint(0, 3), workers, desiredWorkers: 0 })).toEqual([
      { type: 'remove', workerId: pending.id, reason: 'scaled down' },
      { type: 'remove', workerId: newer.id, reason: 'scaled down' },
    ]);
    // At its deadline it fails HEALTH_TIMEOUT (counted, its cause named) instead of going as scaled down.
    const late = plan({ endpoint: endpoint(0, 3), workers: [older], desiredWorkers: 0, now: 61_000 });
    expect(late).toEqual([
      expect.objectContaining({ type: 'fail', workerId: older.id, code: 'HEALTH_TIMEOUT' }),
    ]);
    // A worker that had been ready, or scaling to one, keeps no one.
    const wasReady = worker('unhealthy', { readyAt: 5 });
    expect(plan({ endpoint: endpoint(0, 3), workers: [wasReady], desiredWorkers: 0 })).toEqual([
      { type: 'remove', workerId: wasReady.id, reason: 'scaled down' },
    ]);
  });

  it('removes every worker of a stopped endpoint', () => {
    const e = { ...endpoint(2, 2), desired: 'stopped' as const };
    const workers = [worker('running'), worker('pending')];
    expect(plan({ endpoint: e, workers }).map((a) => a.type)).toEqual(['remove', 'remove']);
  });

  it('rolls out a new revision: old workers go once the new ones are healthy', () => {
    const e = endpoint(1, 1, 2);
    const old = worker('running', { revision: 1 });
    expect(plan({ endpoint: e, workers: [old] })).toEqual([{ type: 'add', count: 1 }]);
    const starting = worker('starting', { revision: 2 });
    expect(plan({ endpoint: e, workers: [old, starting] })).toEqual([]);
    const ready = worker('running', { revision: 2 });
    expect(plan({ endpoint: e, workers: [old, ready] })).toEqual([
      { type: 'remove', workerId: old.id, reason: 'replaced by a new revision' },
    ]);
  });

  it('makes room when the new revision waits for GPUs held by the old one', () => {
    const e = endpoint(1, 1, 2);
    const old = worker('running', { revision: 1 });
    const waiting = worker('pending', { revision: 2 });
    expect(plan({ endpoint: e, workers: [old, waiting] })).toEqual([
      { type: 'remove', workerId: old.id, reason: 'making room for the new revision' },
    ]);
  });
});

describe('endpointStatus', () => {
  const fits = undefined;

  it.each([
    ['no workers yet', 1, [], 'deploying'],
    ['a healthy worker', 1, [worker('running')], 'serving'],
    ['scaled to zero', 0, [], 'serving'],
    ['starting only', 1, [worker('starting')], 'deploying'],
  ] as const)('%s -> %s', (_what, min, workers, state) => {
    expect(endpointStatus(endpoint(min, 2), [...workers], NO_CRASHES, DEFAULT_BACKOFF, fits).state).toBe(
      state,
    );
  });

  it('is failed with the pull error at once, and with CRASH_LOOP after repeated crashes', () => {
    const pull = recordFailure(
      NO_CRASHES,
      { code: 'IMAGE_PULL_FAILED', message: 'no such image', at: 0 },
      DEFAULT_BACKOFF,
    );
    expect(endpointStatus(endpoint(1, 1), [], pull, DEFAULT_BACKOFF, fits)).toMatchObject({
      state: 'failed',
      error: 'IMAGE_PULL_FAILED',
      message: 'no such image',
    });
    let crash = NO_CRASHES;
    for (let i = 0; i < DEFAULT_BACKOFF.crashLoopAfter; i++) {
      expect(endpointStatus(endpoint(1, 1), [], crash, DEFAULT_BACKOFF, fits).state).toBe('deploying');
      crash = recordFailure(crash, { code: 'CRASH_LOOP', message: 'exited with 1', at: 0 }, DEFAULT_BACKOFF);
    }
    expect(endpointStatus(endpoint(1, 1), [], crash, DEFAULT_BACKOFF, fits).error).toBe('CRASH_LOOP');
  });

  it('is failed INSUFFICIENT_GPU when no placement can ever fit', () => {
    const status = endpointStatus(
      endpoint(1, 1),
      [],
      NO_CRASHES,
      DEFAULT_BACKOFF,
      'needs 9 GPUs of h100-80g; the server has 2',
    );
    expect(status).toEqual({
      state: 'failed',
      error: 'INSUFFICIENT_GPU',
      message: 'needs 9 GPUs of h100-80g; the server has 2',
    });
  });

  it('is updating while an old revision still serves', () => {
    const status = endpointStatus(
      endpoint(1, 1, 2),
      [worker('running', { revision: 1 })],
      NO_CRASHES,
      DEFAULT_BACKOFF,
      fits,
    );
    expect(status.state).toBe('updating');
  });
});

describe('backoff and health', () => {
  it('doubles the delay up to the cap', () => {
    let record = NO_CRASHES;
    const delays = [];
    for (let i = 0; i < 9; i++) {
      record = recordFailure(record, { code: 'CRASH_LOOP', message: '', at: 0 }, DEFAULT_BACKOFF);
      delays.push(record.retryAt);
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]);
  });

  it('becomes healthy after successThreshold passes and unhealthy after failureThreshold failures', () => {
    const check = {
      path: '/h',
      initialDelaySeconds: 0,
      periodSeconds: 1,
      timeoutSeconds: 1,
      successThreshold: 2,
      failureThreshold: 2,
    };
    let h = nextHealth(UNKNOWN_HEALTH, true, check);
    expect(h.healthy).toBe(false);
    h = nextHealth(h, true, check);
    expect(h.healthy).toBe(true);
    h = nextHealth(h, false, check);
    expect(h.healthy).toBe(true);
    h = nextHealth(h, false, check);
    expect(h.healthy).toBe(false);
  });
});
