import { describe, expect, it } from 'vitest';
import { WORKER_STATES, type WorkerState } from '../../domain/worker.js';
import { LIFECYCLE, RefusedTransitionError, TABLE_STATES, transition } from './lifecycle-table.js';

/** Every move the controller makes, written out here rather than read from the table. */
const ALLOWED = new Set([
  'pending>downloading',
  'downloading>pending',
  'downloading>draining',
  'downloading>failed',
  'pending>pulling',
  'pending>starting',
  'pending>draining',
  'pending>failed',
  'pulling>pending',
  'pulling>starting',
  'pulling>draining',
  'pulling>failed',
  'starting>pending',
  'starting>pulling',
  'starting>running',
  'starting>unhealthy',
  'starting>draining',
  'starting>failed',
  'running>unhealthy',
  'running>frozen',
  'running>draining',
  'running>failed',
  'unhealthy>running',
  'unhealthy>draining',
  'unhealthy>failed',
  'frozen>running',
  'frozen>suspended',
  'frozen>draining',
  'frozen>failed',
  'suspended>frozen',
  'suspended>draining',
  'suspended>failed',
  'draining>stopped',
  'draining>running',
  'draining>starting',
  'draining>failed',
  'stopped>failed',
]);

const pairs = WORKER_STATES.flatMap((from) =>
  WORKER_STATES.filter((to) => to !== from).map((to) => [from, to] as [WorkerState, WorkerState]),
);

describe('the worker lifecycle table', () => {
  it('has an entry for every worker state of the domain', () => {
    expect(TABLE_STATES).toEqual([...WORKER_STATES]);
    expect(Object.keys(LIFECYCLE).sort()).toEqual([...WORKER_STATES].sort());
  });

  it.each(pairs.filter(([from, to]) => ALLOWED.has(`${from}>${to}`)))('allows %s -> %s', (from, to) => {
    expect(transition(from, to).allowed).toBe(true);
  });

  it.each(pairs.filter(([from, to]) => !ALLOWED.has(`${from}>${to}`)))('refuses %s -> %s', (from, to) => {
    expect(transition(from, to)).toEqual({ allowed: false, from, to });
  });

  it.each(WORKER_STATES.map((s) => [s]))(
    'lets %s stay (a new message), changing nothing but the row',
    (state) => {
      expect(transition(state, state)).toEqual({
        allowed: true,
        effects: { routing: 'unchanged', gpus: 'unchanged', probing: 'unchanged', store: 'write' },
      });
    },
  );

  it('routes only running workers, probes only started ones', () => {
    const routable = WORKER_STATES.filter((s) => LIFECYCLE[s].routable);
    const probed = WORKER_STATES.filter((s) => LIFECYCLE[s].probed);
    expect(routable).toEqual(['running']);
    expect(probed).toEqual(['starting', 'running', 'unhealthy']);
  });

  it('holds GPUs from placement until the worker fails or is forgotten', () => {
    const holding = WORKER_STATES.filter((s) => LIFECYCLE[s].holdsGpus);
    expect(holding).toEqual(['pulling', 'starting', 'running', 'unhealthy', 'draining', 'stopped', 'frozen']);
    expect(WORKER_STATES.every((s) => LIFECYCLE[s].written)).toBe(true);
  });

  it.each([
    ['starting', 'running', { routing: 'enters', gpus: 'unchanged', probing: 'unchanged' }],
    ['running', 'draining', { routing: 'leaves', gpus: 'unchanged', probing: 'leaves' }],
    ['running', 'unhealthy', { routing: 'leaves', gpus: 'unchanged', probing: 'unchanged' }],
    ['draining', 'running', { routing: 'enters', gpus: 'unchanged', probing: 'enters' }],
    ['pending', 'pulling', { routing: 'unchanged', gpus: 'enters', probing: 'unchanged' }],
    ['pulling', 'starting', { routing: 'unchanged', gpus: 'unchanged', probing: 'enters' }],
    ['running', 'failed', { routing: 'leaves', gpus: 'leaves', probing: 'leaves' }],
    ['stopped', 'failed', { routing: 'unchanged', gpus: 'leaves', probing: 'unchanged' }],
    // Idle tiers: frozen keeps its GPUs out of routing and unprobed; suspended gives them up; a restore takes
    // them back through frozen; a thaw routes it and probes it again.
    ['running', 'frozen', { routing: 'leaves', gpus: 'unchanged', probing: 'leaves' }],
    ['frozen', 'running', { routing: 'enters', gpus: 'unchanged', probing: 'enters' }],
    ['frozen', 'suspended', { routing: 'unchanged', gpus: 'leaves', probing: 'unchanged' }],
    ['suspended', 'frozen', { routing: 'unchanged', gpus: 'enters', probing: 'unchanged' }],
    ['suspended', 'draining', { routing: 'unchanged', gpus: 'enters', probing: 'unchanged' }],
  ] as const)('says what %s -> %s does', (from, to, effects) => {
    expect(transition(from, to)).toEqual({ allowed: true, effects: { ...effects, store: 'write' } });
  });

  it('names a refused move with a stable code and both states', () => {
    const error = new RefusedTransitionError('w1', 'failed', 'running');
    expect(error.code).toBe('WORKER_TRANSITION_REFUSED');
    expect(error.message).toBe('worker w1 cannot move from failed to running');
  });
});
