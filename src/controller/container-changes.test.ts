import { describe, expect, it } from 'vitest';
import type { WorkerState } from '../domain/worker.js';
import type { RuntimeEvent } from '../runtime/types.js';
import { eventResponse, mayBeRestarting, movedAddress } from './container-changes.js';

const started: WorkerState[] = ['starting', 'running', 'unhealthy'];
const notStarted: WorkerState[] = ['pending', 'pulling', 'draining', 'stopped', 'failed'];
const w1 = (type: RuntimeEvent['type']): RuntimeEvent =>
  type === 'exited' ? { type, workerId: 'w1', exitCode: 137 } : { type, workerId: 'w1' };

describe('eventResponse', () => {
  it.each(started)(
    'a %s worker leaves routing at once when its container stops, exits or is paused',
    (state) => {
      expect(eventResponse(w1('stopping'), { state })).toEqual({
        type: 'unroute',
        message: 'its container is being stopped by its engine',
      });
      // A crash: out of routing, its state left to the pass that lists the exit (and records the death).
      expect(eventResponse(w1('exited'), { state })).toEqual({ type: 'exited' });
      expect(eventResponse(w1('paused'), { state })).toEqual({
        type: 'unroute',
        message: 'its container is paused',
      });
    },
  );

  it.each(started)('a %s worker whose engine was told to stop it awaits a restart when it exits', (state) => {
    expect(eventResponse(w1('exited'), { state, engineStopSeen: true })).toEqual({
      type: 'unroute',
      message: 'its container stopped (exit code 137)',
      awaitRestart: true,
    });
  });

  it.each(started)('a %s worker is probed at once when its container starts again or is resumed', (state) => {
    expect(eventResponse(w1('started'), { state })).toEqual({ type: 'reprobe' });
    expect(eventResponse(w1('resumed'), { state })).toEqual({ type: 'reprobe' });
  });

  it.each(started)('the removal of a %s worker is left to the pass', (state) => {
    expect(eventResponse(w1('removed'), { state })).toEqual({ type: 'none' });
  });

  it.each(notStarted)('events about a %s worker change nothing between passes', (state) => {
    for (const type of ['stopping', 'exited', 'paused', 'started', 'resumed', 'removed'] as const) {
      expect(eventResponse(w1(type), { state })).toEqual({ type: 'none' });
    }
  });

  it('an unknown worker: nothing', () => {
    expect(eventResponse(w1('exited'), undefined)).toEqual({ type: 'none' });
  });
});

describe('mayBeRestarting (grace 2 s, now 10 s)', () => {
  it.each([
    ['exit event 1 s ago', 9_000, true],
    ['exit event 1.999 s ago', 8_001, true],
    ['exit event exactly 2 s ago', 8_000, false],
    ['exit event 5 s ago', 5_000, false],
    ['no exit event (the stream was down)', undefined, false],
  ] as const)('%s: %s', (_name, exitSeenAt, restarting) => {
    const worker = exitSeenAt === undefined ? {} : { exitSeenAt };
    expect(mayBeRestarting(worker, 10_000, 2_000)).toBe(restarting);
  });
});

describe('movedAddress', () => {
  const at = (port: number, host = '127.0.0.1') => ({ host, port });
  it.each([
    ['running', at(32775), 'running', at(32803), at(32803)],
    ['unhealthy', at(32775), 'running', at(32803), at(32803)],
    ['starting', null, 'running', at(32803), at(32803)],
    ['running', at(32775), 'running', at(32775, '10.0.0.2'), at(32775, '10.0.0.2')],
    ['running', at(32775), 'running', at(32775), undefined],
    ['running', at(32775), 'exited', at(32803), undefined],
    ['running', at(32775), 'starting', at(32803), undefined],
    ['running', at(32775), 'running', undefined, undefined],
    ['draining', at(32775), 'running', at(32803), undefined],
    ['failed', at(32775), 'running', at(32803), undefined],
  ] as const)(
    'a %s worker at %j, its container %s at %j: moves to %j',
    (state, address, phase, listed, to) => {
      const response = movedAddress({ state, address }, { phase, address: listed });
      if (to === undefined) {
        expect(response).toBeUndefined();
        return;
      }
      expect(response).toEqual({
        type: 'readdress',
        address: to,
        message: `its container restarted at ${to.host}:${to.port}; waiting for its health check`,
      });
    },
  );
});
