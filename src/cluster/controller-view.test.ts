import { describe, expect, it, vi } from 'vitest';
import type { WorkerState } from '../domain/worker.js';
import type { LeaseClaim } from '../store/cluster/leases.js';
import { ControllerTermSwitch, type TermController } from './controller-terms.js';
import { ControllerView, type ViewedController } from './controller-view.js';
import type { TermFence } from './elector.js';

const workers: { id: string; endpointId: string; state: WorkerState }[] = [
  { id: 'w1', endpointId: 'e1', state: 'running' },
  { id: 'w2', endpointId: 'e1', state: 'frozen' },
  { id: 'w3', endpointId: 'e2', state: 'running' },
];

/** A controller that has adopted the workers above (or not yet), and records the passes asked of it. */
function controllerOf(adopted: boolean) {
  const passes: string[] = [];
  const controller: ViewedController & TermController = {
    adopted,
    workers: () => workers,
    workersOf: (endpointId) => workers.filter((w) => w.endpointId === endpointId),
    poke: () => passes.push('all'),
    pokeEndpoint: (endpointId) => passes.push(endpointId),
    start: () => {},
    stop: async () => {},
  };
  return { controller, passes };
}

/** The view as `corral serve` wires it: the observer of a term switch over such controllers. */
function viewOverSwitch(options: { adopted?: boolean; requestPass?: () => void } = {}) {
  const view = new ControllerView(options.requestPass ? { requestPass: options.requestPass } : {});
  const made: ReturnType<typeof controllerOf>[] = [];
  const terms = new ControllerTermSwitch<ViewedController & TermController>({
    observer: view,
    create: () => {
      const built = controllerOf(options.adopted ?? true);
      made.push(built);
      return built.controller;
    },
  });
  return { view, terms, made };
}

const fence = (token: number): TermFence => ({ claim: () => ({ token }) as unknown as LeaseClaim });

describe('ControllerView', () => {
  it('before the controller is built, answers as a replica that does not lead: no worker, no pass', () => {
    const requestPass = vi.fn();
    const view = new ControllerView({ requestPass });
    expect(view.leading()).toBe(false);
    expect(view.workerState('e1', 'w1')).toBeUndefined();
    expect(view.runningWorkers('e1')).toEqual([]);
    view.poke();
    view.changed('e1');
    expect(requestPass).not.toHaveBeenCalled();
  });

  it('on a replica that does not lead, leaves states to the store and asks the leader for the pass', () => {
    const requestPass = vi.fn();
    const { view, made } = viewOverSwitch({ requestPass });
    expect(view.leading()).toBe(false);
    expect(view.workerState('e1', 'w1')).toBeUndefined();
    view.changed('e1');
    expect(made[0]?.passes).toEqual([]);
    expect(requestPass).toHaveBeenCalledTimes(1);
  });

  it("once its controller runs and has adopted, gives the controller's states and running workers", () => {
    const { view, terms } = viewOverSwitch();
    terms.start();
    expect(view.leading()).toBe(true);
    expect(view.workerState('e1', 'w2')).toBe('frozen');
    expect(view.workerState('e1', 'w3')).toBeNull();
    expect(view.runningWorkers('e1')).toEqual(['w1']);
  });

  it("leaves a worker's state to the store while the running controller has not adopted yet", () => {
    const { view, terms } = viewOverSwitch({ adopted: false });
    terms.start();
    expect(view.workerState('e1', 'w1')).toBeUndefined();
  });

  it("pokes the controller's whole pass, and on a change the endpoint's reconcile and the leader's pass", () => {
    const requestPass = vi.fn();
    const { view, terms, made } = viewOverSwitch({ requestPass });
    terms.start();
    view.poke();
    expect(made[0]?.passes).toEqual(['all']);
    expect(requestPass).not.toHaveBeenCalled();
    view.changed('e2');
    view.changed();
    expect(made[0]?.passes).toEqual(['all', 'e2', 'all']);
    expect(requestPass).toHaveBeenCalledTimes(2);
  });

  it("follows the terms: a term's fresh controller gets the passes, and after the step-down none does", async () => {
    const { view, terms, made } = viewOverSwitch();
    await terms.lead(fence(3));
    expect(view.leading()).toBe(true);
    view.poke();
    expect(made[0]?.passes).toEqual([]);
    expect(made[1]?.passes).toEqual(['all']);
    await terms.stepDown();
    expect(view.leading()).toBe(false);
    view.changed('e1');
    expect(made.map((m) => m.passes)).toEqual([[], ['all'], []]);
    expect(view.workerState('e1', 'w1')).toBeUndefined();
  });

  it('stops answering for the controller as soon as the switch begins to stop it', async () => {
    const { view, terms } = viewOverSwitch();
    terms.start();
    const closing = terms.close();
    expect(view.leading()).toBe(false);
    await closing;
  });
});
