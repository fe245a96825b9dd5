import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WORKER_STATES, type WorkerState } from '../domain/worker.js';
import {
  ACTIVE_SCALING_STATES,
  decideScale,
  nextCheckAt,
  type ScalingInput,
  type ScalingWorker,
} from './autoscaler.js';

const NOW = 1_000_000;

const input = (patch: Partial<ScalingInput> = {}): ScalingInput => ({
  now: NOW,
  policy: { type: 'queue', value: 1 },
  minWorkers: 0,
  maxWorkers: 10,
  maxConcurrent: 2,
  idleTimeoutSeconds: 5,
  queue: { length: 0, oldestEnqueuedAt: null },
  workers: [],
  ...patch,
});

/** A worker busy until `busyAgoMs` before NOW, created `ageMs` before NOW. */
const worker = (
  id: string,
  state: WorkerState,
  opts: { inFlight?: number; busyAgoMs?: number; ageMs?: number } = {},
): ScalingWorker => ({
  id,
  state,
  inFlight: opts.inFlight ?? 0,
  lastBusyAt: NOW - (opts.busyAgoMs ?? 0),
  createdAt: NOW - (opts.ageMs ?? 60_000),
});

const busy = (id: string, state: WorkerState = 'running') => worker(id, state, { inFlight: 2 });
const queue = (length: number, waitedMs: number) => ({ length, oldestEnqueuedAt: NOW - waitedMs });
const running = (n: number) => Array.from({ length: n }, (_, i) => busy(`r${i}`));
const starting = (n: number, state: WorkerState = 'starting') =>
  Array.from({ length: n }, (_, i) => worker(`s${i}`, state, { ageMs: 100 }));

describe('decideScale: wake from zero', () => {
  it.each([
    ['queue policy, not yet waited', input({ queue: queue(1, 0) })],
    ['queue policy with a long wait', input({ policy: { type: 'queue', value: 60 }, queue: queue(1, 0) })],
    [
      'concurrency policy below its value',
      input({ policy: { type: 'concurrency', value: 10 }, queue: queue(3, 0) }),
    ],
    [
      'only draining and failed workers',
      input({ queue: queue(1, 0), workers: [busy('d', 'draining'), worker('f', 'failed')] }),
    ],
    ['unknown enqueue time', input({ queue: { length: 1, oldestEnqueuedAt: null } })],
  ])('%s: starts one at once', (_name, i) => {
    const d = decideScale(i);
    expect(d.desired).toBe(1);
    expect(d.victims).toEqual([]);
    expect(d.reason).toMatch(/wake from zero: \+1 worker$/);
  });

  it('does not start one while one is already on the way', () => {
    expect(decideScale(input({ queue: queue(1, 0), workers: starting(1, 'pending') })).desired).toBe(1);
  });

  it('applies the policy on top when its threshold is crossed too', () => {
    const d = decideScale(input({ policy: { type: 'concurrency', value: 2 }, queue: queue(7, 0) }));
    expect(d.desired).toBe(4);
    expect(d.thresholdCrossedAt).toBe(NOW);
  });

  it('maxWorkers 0 wins over waking', () => {
    expect(decideScale(input({ maxWorkers: 0, queue: queue(5, 5000) })).desired).toBe(0);
  });
});

describe('decideScale: queue policy', () => {
  it.each([
    // [waited ms, queued, running, desired]
    [0, 7, 3, 3],
    [999, 7, 3, 3],
    [1000, 7, 3, 7],
    [1200, 7, 3, 7],
    [1200, 1, 3, 4],
    [1200, 4, 1, 3],
    [5000, 50, 1, 10],
  ])('waited %i ms with %i queued and %i running: desired %i', (waited, queued, run, desired) => {
    const d = decideScale(input({ queue: queue(queued, waited), workers: running(run) }));
    expect(d.desired).toBe(desired);
    expect(d.victims).toEqual([]);
    expect(d.thresholdCrossedAt).toBe(NOW - waited + 1000);
  });

  it('explains itself', () => {
    const d = decideScale(input({ queue: queue(7, 1200), workers: running(3) }));
    expect(d.reason).toBe('queue of 7 waited 1.2 s (policy queue 1 s): +4 workers');
    const below = decideScale(input({ queue: queue(7, 400), workers: running(3) }));
    expect(below.reason).toBe('queue of 7 waited 0.4 s, below policy queue 1 s: holding 3 workers');
  });

  it('reports a threshold still ahead', () => {
    const d = decideScale(
      input({ policy: { type: 'queue', value: 2 }, queue: queue(3, 500), workers: running(1) }),
    );
    expect(d.thresholdCrossedAt).toBe(NOW + 1500);
    expect(d.desired).toBe(1);
  });

  it('value 0 scales up at once', () => {
    const d = decideScale(
      input({ policy: { type: 'queue', value: 0 }, queue: queue(3, 0), workers: running(1) }),
    );
    expect(d.desired).toBe(3);
    expect(d.thresholdCrossedAt).toBe(NOW);
  });
});

describe('decideScale: concurrency policy', () => {
  it.each([
    // [value, queued, running, desired, crossed]
    [4, 4, 2, 2, false],
    [4, 5, 2, 5, true],
    [0, 1, 2, 3, true],
    [0, 0, 2, 2, false],
    [10, 7, 3, 3, false],
    [3, 7, 3, 7, true],
  ])('value %i, %i queued, %i running: desired %i', (value, queued, run, desired, crossed) => {
    const d = decideScale(
      input({ policy: { type: 'concurrency', value }, queue: queue(queued, 0), workers: running(run) }),
    );
    expect(d.desired).toBe(desired);
    expect(d.thresholdCrossedAt).toBe(crossed ? NOW : null);
  });

  it('explains itself', () => {
    const d = decideScale(
      input({ policy: { type: 'concurrency', value: 3 }, queue: queue(7, 0), workers: running(3) }),
    );
    expect(d.reason).toBe('queue of 7 (policy concurrency 3): +4 workers');
  });
});

describe('decideScale: capacity on the way is counted', () => {
  it('50 queued, maxConcurrent 2, 3 starting: no thundering herd', () => {
    const i = input({ maxWorkers: 30, queue: queue(50, 2000), workers: starting(3) });
    // 25 needed, 3 already starting: 22 more.
    expect(decideScale(i).desired).toBe(25);
    expect(decideScale({ ...i, maxWorkers: 5 }).desired).toBe(5);
  });

  it('a second decision with the new workers starting adds nothing', () => {
    const first = decideScale(input({ maxWorkers: 30, queue: queue(50, 2000) }));
    expect(first.desired).toBe(25);
    const again = decideScale(input({ maxWorkers: 30, queue: queue(50, 2500), workers: starting(25) }));
    expect(again.desired).toBe(25);
    expect(again.reason).toMatch(/needs 25, 25 starting: holding 25 workers/);
  });

  it.each(['pending', 'pulling', 'starting'] as const)('%s counts as capacity on the way', (state) => {
    const d = decideScale(input({ queue: queue(4, 2000), workers: [...running(2), ...starting(1, state)] }));
    expect(d.desired).toBe(4);
  });

  it('running and unhealthy workers are not capacity on the way, but are active', () => {
    const workers = [...running(2), busy('u', 'unhealthy')];
    expect(decideScale(input({ queue: queue(4, 2000), workers })).desired).toBe(5);
    expect(decideScale(input({ queue: queue(4, 0), workers })).desired).toBe(3);
  });

  it('draining, stopped and failed workers count for nothing', () => {
    const workers = [busy('d', 'draining'), worker('s', 'stopped'), worker('f', 'failed'), ...running(1)];
    expect(decideScale(input({ queue: queue(4, 2000), workers })).desired).toBe(3);
    expect(decideScale(input({ workers })).desired).toBe(1);
  });
});

describe('decideScale: clamp', () => {
  it.each([
    // [min, max, queued, waited, running, desired, note]
    [0, 3, 30, 2000, 1, 3, 'capped at maxWorkers 3'],
    [2, 3, 0, 0, 0, 2, 'raised to minWorkers 2'],
    [2, 3, 1, 0, 0, 2, 'raised to minWorkers 2'],
    [0, 2, 0, 0, 4, 2, 'capped at maxWorkers 2'],
    [1, 1, 30, 5000, 1, 1, 'capped at maxWorkers 1'],
  ])('min %i max %i, %i queued for %i ms, %i running: %i', (min, max, queued, waited, run, desired, note) => {
    const d = decideScale(
      input({ minWorkers: min, maxWorkers: max, queue: queue(queued, waited), workers: running(run) }),
    );
    expect(d.desired).toBe(desired);
    expect(d.reason).toContain(note);
  });
});

describe('decideScale: scale-down', () => {
  it.each([
    // [busy ago ms, in flight, victim?]
    [4999, 0, false],
    [5000, 0, true],
    [60_000, 0, true],
    [60_000, 1, false],
  ])('idle %i ms with %i in flight: victim %s', (ago, inFlight, victim) => {
    const d = decideScale(input({ workers: [worker('a', 'running', { busyAgoMs: ago, inFlight })] }));
    expect(d.victims).toEqual(victim ? ['a'] : []);
    expect(d.desired).toBe(victim ? 0 : 1);
  });

  it('never while requests are queued', () => {
    const workers = [
      worker('a', 'running', { busyAgoMs: 60_000 }),
      worker('b', 'starting', { busyAgoMs: 60_000 }),
    ];
    for (const q of [queue(1, 0), queue(1, 10_000)]) {
      const d = decideScale(input({ queue: q, workers }));
      expect(d.victims).toEqual([]);
      expect(d.desired).toBe(2);
    }
  });

  it('a still-starting worker goes only once it has been around for the idle timeout', () => {
    const young = worker('y', 'starting', { busyAgoMs: 60_000, ageMs: 3000 });
    const old = worker('o', 'pending', { busyAgoMs: 60_000, ageMs: 5000 });
    const d = decideScale(input({ workers: [young, old] }));
    expect(d.victims).toEqual(['o']);
    expect(d.desired).toBe(1);
    expect(d.reason).toBe('1 worker idle past idleTimeout 5 s, 1 still starting: -1');
  });

  it('victims: still-starting first, then unhealthy, then the newest running', () => {
    const workers = [
      worker('run-old', 'running', { busyAgoMs: 10_000, ageMs: 90_000 }),
      worker('run-new', 'running', { busyAgoMs: 10_000, ageMs: 20_000 }),
      worker('unhealthy', 'unhealthy', { busyAgoMs: 10_000, ageMs: 95_000 }),
      worker('starting', 'starting', { busyAgoMs: 10_000, ageMs: 99_000 }),
      worker('pending', 'pending', { busyAgoMs: 10_000, ageMs: 99_000 }),
      worker('run-busy', 'running', { inFlight: 1, ageMs: 1000 }),
    ];
    const all = decideScale(input({ workers }));
    expect(all.victims).toEqual(['pending', 'starting', 'unhealthy', 'run-new', 'run-old']);
    expect(all.desired).toBe(1);
    const floor = decideScale(input({ minWorkers: 4, workers }));
    expect(floor.victims).toEqual(['pending', 'starting']);
    expect(floor.desired).toBe(4);
  });

  it('minWorkers floor keeps idle workers', () => {
    const workers = [
      worker('a', 'running', { busyAgoMs: 60_000 }),
      worker('b', 'running', { busyAgoMs: 60_000 }),
    ];
    const d = decideScale(input({ minWorkers: 2, workers }));
    expect(d.victims).toEqual([]);
    expect(d.desired).toBe(2);
    expect(d.reason).toBe('2 workers idle past idleTimeout 5 s, kept by minWorkers 2: holding 2 workers');
  });

  it('idle time never counts from before the worker existed', () => {
    const d = decideScale(input({ workers: [worker('a', 'running', { busyAgoMs: 60_000, ageMs: 2000 })] }));
    expect(d.victims).toEqual([]);
  });

  it('an empty queue with nothing idle holds', () => {
    const d = decideScale(input({ workers: running(2) }));
    expect(d).toEqual({
      desired: 2,
      victims: [],
      reason: 'queue empty, none idle past idleTimeout 5 s: holding 2 workers',
      thresholdCrossedAt: null,
    });
  });
});

describe('nextCheckAt', () => {
  it.each<[string, ScalingInput, number | null]>([
    ['nothing at all', input(), null],
    ['queue policy below its wait', input({ queue: queue(3, 400), workers: running(1) }), NOW + 600],
    ['queue policy, waking from zero', input({ queue: queue(1, 0) }), NOW + 1000],
    ['queue policy already crossed', input({ queue: queue(3, 1000), workers: running(1) }), null],
    [
      'concurrency policy',
      input({ policy: { type: 'concurrency', value: 5 }, queue: queue(3, 0), workers: running(1) }),
      null,
    ],
    [
      'queued: idle timers do not matter',
      input({
        policy: { type: 'concurrency', value: 5 },
        queue: queue(1, 0),
        workers: [worker('a', 'running', { busyAgoMs: 1000 })],
      }),
      null,
    ],
    ['busy workers only', input({ workers: running(3) }), null],
    [
      'the earliest idle timeout',
      input({
        workers: [
          worker('a', 'running', { busyAgoMs: 1000 }),
          worker('b', 'running', { busyAgoMs: 3000 }),
          worker('c', 'starting', { busyAgoMs: 60_000, ageMs: 500 }),
        ],
      }),
      NOW + 2000,
    ],
    [
      'not while the floor keeps them',
      input({ minWorkers: 2, workers: [worker('a', 'running', { busyAgoMs: 1000 }), busy('b')] }),
      null,
    ],
    [
      'the next idle one past those already going',
      input({
        workers: [worker('a', 'running', { busyAgoMs: 9000 }), worker('b', 'running', { busyAgoMs: 1000 })],
      }),
      NOW + 4000,
    ],
  ])('%s', (_name, i, expected) => {
    expect(nextCheckAt(i)).toBe(expected);
  });

  it('at the time it names, the decision changes', () => {
    const i = input({ workers: [worker('a', 'running', { busyAgoMs: 1000 })] });
    const at = nextCheckAt(i);
    expect(at).toBe(NOW + 4000);
    expect(decideScale({ ...i, now: (at ?? 0) - 1 }).victims).toEqual([]);
    expect(decideScale({ ...i, now: at ?? 0 }).victims).toEqual(['a']);
    const q = input({ queue: queue(5, 300), workers: running(1) });
    const qAt = nextCheckAt(q) ?? 0;
    expect(decideScale({ ...q, now: qAt - 1 }).desired).toBe(1);
    expect(decideScale({ ...q, now: qAt }).desired).toBe(4);
  });
});

describe('decideScale: properties', () => {
  const arbState = fc.constantFrom(...WORKER_STATES);
  const arbWorker = fc.record({
    id: fc.uuid(),
    state: arbState,
    inFlight: fc.integer({ min: 0, max: 4 }),
    lastBusyAt: fc.integer({ min: NOW - 120_000, max: NOW }),
    createdAt: fc.integer({ min: NOW - 120_000, max: NOW }),
  });
  const arbInput: fc.Arbitrary<ScalingInput> = fc
    .record({
      min: fc.integer({ min: 0, max: 5 }),
      extra: fc.integer({ min: 0, max: 10 }),
      policy: fc.oneof(
        fc.record({ type: fc.constant('queue' as const), value: fc.integer({ min: 0, max: 30 }) }),
        fc.record({ type: fc.constant('concurrency' as const), value: fc.integer({ min: 0, max: 30 }) }),
      ),
      maxConcurrent: fc.integer({ min: 1, max: 8 }),
      idleTimeoutSeconds: fc.integer({ min: 0, max: 60 }),
      queueLength: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 200 })),
      waitedMs: fc.integer({ min: 0, max: 60_000 }),
      workers: fc.uniqueArray(arbWorker, { maxLength: 15, selector: (w) => w.id }),
    })
    .map((r) => ({
      now: NOW,
      policy: r.policy,
      minWorkers: r.min,
      maxWorkers: r.min + r.extra,
      maxConcurrent: r.maxConcurrent,
      idleTimeoutSeconds: r.idleTimeoutSeconds,
      queue: { length: r.queueLength, oldestEnqueuedAt: r.queueLength > 0 ? NOW - r.waitedMs : null },
      workers: r.workers,
    }));
  const activeOf = (i: ScalingInput) => i.workers.filter((w) => ACTIVE_SCALING_STATES.has(w.state));

  it('desired is always within [minWorkers, maxWorkers]', () => {
    fc.assert(
      fc.property(arbInput, (i) => {
        const d = decideScale(i);
        return d.desired >= i.minWorkers && d.desired <= i.maxWorkers && Number.isInteger(d.desired);
      }),
    );
  });

  it('victims are idle past the timeout, active, distinct, and never more than active - minWorkers', () => {
    fc.assert(
      fc.property(arbInput, (i) => {
        const d = decideScale(i);
        const active = activeOf(i);
        const byId = new Map(active.map((w) => [w.id, w]));
        expect(new Set(d.victims).size).toBe(d.victims.length);
        expect(d.victims.length).toBeLessThanOrEqual(Math.max(0, active.length - i.minWorkers));
        if (i.queue.length > 0) expect(d.victims).toEqual([]);
        for (const id of d.victims) {
          const w = byId.get(id);
          expect(w).toBeDefined();
          if (!w) continue;
          expect(w.inFlight).toBe(0);
          expect(i.now - w.lastBusyAt).toBeGreaterThanOrEqual(i.idleTimeoutSeconds * 1000);
          expect(i.now - w.createdAt).toBeGreaterThanOrEqual(i.idleTimeoutSeconds * 1000);
        }
      }),
    );
  });

  it('with an empty queue desired never exceeds the active count (unless minWorkers asks for more)', () => {
    fc.assert(
      fc.property(arbInput, (i) => {
        const empty = { ...i, queue: { length: 0, oldestEnqueuedAt: null } };
        const d = decideScale(empty);
        return d.desired <= Math.max(activeOf(empty).length, empty.minWorkers);
      }),
    );
  });

  it('with a queue and no active workers desired is at least 1 (when maxWorkers >= 1)', () => {
    fc.assert(
      fc.property(arbInput, fc.integer({ min: 1, max: 200 }), (i, length) => {
        const idle = {
          ...i,
          queue: { length, oldestEnqueuedAt: NOW },
          workers: i.workers.filter((w) => !ACTIVE_SCALING_STATES.has(w.state)),
        };
        fc.pre(idle.maxWorkers >= 1);
        return decideScale(idle).desired >= 1;
      }),
    );
  });

  it('a queue never scales down, and never adds more than absorbs it beyond what is starting', () => {
    fc.assert(
      fc.property(arbInput, (i) => {
        fc.pre(i.queue.length > 0);
        const d = decideScale(i);
        const active = activeOf(i);
        const onTheWay = active.filter((w) => ['pending', 'pulling', 'starting'].includes(w.state)).length;
        const needed = Math.ceil(i.queue.length / i.maxConcurrent);
        const most = active.length + Math.max(1, needed - onTheWay);
        expect(d.desired).toBeGreaterThanOrEqual(Math.min(active.length, i.maxWorkers));
        expect(d.desired).toBeLessThanOrEqual(Math.max(i.minWorkers, Math.min(i.maxWorkers, most)));
      }),
    );
  });

  it('nextCheckAt is in the future, and nothing changes before it', () => {
    fc.assert(
      fc.property(arbInput, fc.integer({ min: 1, max: 120_000 }), (i, step) => {
        const at = nextCheckAt(i);
        if (at !== null) expect(at).toBeGreaterThan(i.now);
        const before = decideScale(i);
        const later = Math.min(i.now + step, (at ?? Number.POSITIVE_INFINITY) - 1);
        const then = decideScale({ ...i, now: later });
        expect(then.desired).toBe(before.desired);
        expect(then.victims).toEqual(before.victims);
      }),
    );
  });
});
