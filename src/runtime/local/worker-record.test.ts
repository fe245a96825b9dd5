import { describe, expect, it } from 'vitest';
import { LABELS } from '../types.js';
import type { LocalState } from './state-dir.js';
import { adoptedRecord, toRuntimeWorker, UNWATCHED_EXIT } from './worker-record.js';

const state: LocalState = {
  version: 1,
  workerId: 'w1',
  endpointId: 'e1',
  revision: 2,
  labels: { [LABELS.endpoint]: 'e1' },
  port: 40001,
  pid: 1234,
  createdAt: 10,
  startedAt: 10,
  gpuUuids: ['GPU-a'],
};

describe('adoptedRecord', () => {
  it.each<[string, LocalState, boolean, { exited: boolean; exitCode?: number; message: string }]>([
    ['a live process is adopted', state, true, { exited: false, message: 'running (adopted)' }],
    [
      'a process gone unseen exited with an unknown code',
      state,
      false,
      { exited: true, exitCode: -1, message: UNWATCHED_EXIT },
    ],
    [
      'a recorded exit stays, whatever the pid does now',
      { ...state, exitCode: 137, message: 'killed by SIGKILL' },
      true,
      { exited: true, exitCode: 137, message: 'killed by SIGKILL' },
    ],
    [
      'a recorded exit without a message',
      { ...state, exitCode: 3 },
      false,
      { exited: true, exitCode: 3, message: 'exited with code 3' },
    ],
  ])('%s', (_name, found, alive, expected) => {
    const record = adoptedRecord(found, alive);
    expect(record).toMatchObject(expected);
    expect(record.exitCode).toBe(expected.exitCode);
    expect(record.child).toBeUndefined();
  });

  it('records an exit seen on adoption in the state, to be written back', () => {
    expect(adoptedRecord(state, false).state).toMatchObject({ exitCode: -1, message: UNWATCHED_EXIT });
    expect(state.exitCode).toBeUndefined();
  });
});

describe('toRuntimeWorker', () => {
  it('shows the worker at its loopback port, with copies of its labels and GPUs', () => {
    const record = adoptedRecord({ ...state, exitCode: 1, message: 'exited with code 1' }, true);
    const worker = toRuntimeWorker(record);
    expect(worker).toEqual({
      workerId: 'w1',
      endpointId: 'e1',
      revision: 2,
      labels: state.labels,
      phase: 'exited',
      address: { host: '127.0.0.1', port: 40001 },
      exitCode: 1,
      message: 'exited with code 1',
      createdAt: 10,
      gpuUuids: ['GPU-a'],
    });
    expect(worker.labels).not.toBe(record.state.labels);
    expect(worker.gpuUuids).not.toBe(record.state.gpuUuids);
  });

  it('has no exit code while running', () => {
    expect(toRuntimeWorker(adoptedRecord(state, true))).not.toHaveProperty('exitCode');
  });
});
