import { describe, expect, it, vi } from 'vitest';
import type { WorkerState } from '../domain/worker.js';
import { type ControllerTarget, ControllerView } from './controller-view.js';

const workers: { id: string; endpointId: string; state: WorkerState }[] = [
  { id: 'w1', endpointId: 'e1', state: 'running' },
  { id: 'w2', endpointId: 'e1', state: 'frozen' },
  { id: 'w3', endpointId: 'e2', state: 'running' },
];

function terms(adopted = true): ControllerTarget & { poke: ReturnType<typeof vi.fn> } {
  return {
    controller: {
      adopted,
      workers: () => workers,
      workersOf: (endpointId) => workers.filter((w) => w.endpointId === endpointId),
    },
    poke: vi.fn(),
  };
}

describe('ControllerView', () => {
  it('before it is connected, answers as a replica that does not lead: no worker, no pass', () => {
    const requestPass = vi.fn();
    const view = new ControllerView({ requestPass });
    expect(view.leading()).toBe(false);
    expect(view.workerState('e1', 'w1')).toBeUndefined();
    expect(view.runningWorkers('e1')).toEqual([]);
    view.poke();
    view.changed('e1');
    expect(requestPass).not.toHaveBeenCalled();
  });

  it("where this replica leads and has adopted, gives the controller's states and running workers", () => {
    const view = new ControllerView();
    view.connect(terms(), () => true);
    expect(view.workerState('e1', 'w2')).toBe('frozen');
    expect(view.workerState('e1', 'w3')).toBeNull();
    expect(view.runningWorkers('e1')).toEqual(['w1']);
  });

  it("leaves a worker's state to the store where it does not lead or has not adopted yet", () => {
    const following = new ControllerView();
    following.connect(terms(), () => false);
    expect(following.workerState('e1', 'w1')).toBeUndefined();
    const fresh = new ControllerView();
    fresh.connect(terms(false), () => true);
    expect(fresh.workerState('e1', 'w1')).toBeUndefined();
  });

  it("pokes the controller's whole pass, and on a change the endpoint's reconcile and the leader's pass", () => {
    const requestPass = vi.fn();
    const target = terms();
    const view = new ControllerView({ requestPass });
    view.connect(target, () => true);
    view.poke();
    expect(target.poke).toHaveBeenLastCalledWith();
    expect(requestPass).not.toHaveBeenCalled();
    view.changed('e2');
    expect(target.poke).toHaveBeenLastCalledWith('e2');
    expect(requestPass).toHaveBeenCalledTimes(1);
  });

  it('is connected once', () => {
    const view = new ControllerView();
    view.connect(terms(), () => true);
    expect(() => view.connect(terms(), () => true)).toThrow('connected already');
  });
});
