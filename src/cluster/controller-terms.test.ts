import { describe, expect, it } from 'vitest';
import type { LeaseClaim } from '../store/cluster/leases.js';
import { ControllerTermSwitch, type TermController } from './controller-terms.js';
import type { TermFence } from './elector.js';

/** A controller that records what was done to it; `stop` resolves when the test says so. */
class RecordingController implements TermController {
  readonly log: string[] = [];
  #release: (() => void) | undefined;
  holdStops = false;
  constructor(readonly fence: TermFence | undefined) {}
  start() {
    this.log.push('start');
  }
  poke() {
    this.log.push('poke');
  }
  pokeEndpoint(endpointId: string) {
    this.log.push(`poke ${endpointId}`);
  }
  stop() {
    this.log.push('stop');
    if (!this.holdStops) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#release = resolve;
    });
  }
  releaseStop() {
    this.#release?.();
  }
}

/** Whether a controller runs now, seen as a user of the switch sees it: a poke reaches the current controller. */
function running(terms: ControllerTermSwitch<RecordingController>): boolean {
  const log = terms.controller.log;
  const before = log.length;
  terms.poke();
  const reached = log.length > before;
  if (reached) log.pop();
  return reached;
}

const fence = (token: number): TermFence => ({ claim: () => ({ token }) as unknown as LeaseClaim });

function switchOf() {
  const made: RecordingController[] = [];
  const terms = new ControllerTermSwitch({
    create: (f) => {
      const controller = new RecordingController(f);
      made.push(controller);
      return controller;
    },
  });
  return { terms, made };
}

describe('ControllerTermSwitch', () => {
  it('one process: the first controller starts unfenced and takes pokes', () => {
    const { terms, made } = switchOf();
    terms.poke();
    expect(made[0]?.log).toEqual([]);
    terms.start();
    terms.poke();
    terms.poke('ep1');
    expect(made).toHaveLength(1);
    expect(made[0]?.fence).toBeUndefined();
    expect(made[0]?.log).toEqual(['start', 'poke', 'poke ep1']);
  });

  it('a term stops the idle controller and runs a fresh one under the term fence', async () => {
    const { terms, made } = switchOf();
    await terms.lead(fence(7));
    expect(made).toHaveLength(2);
    expect(made[0]?.log).toEqual(['stop']);
    expect(made[1]?.fence?.claim()).toEqual({ token: 7 });
    expect(made[1]?.log).toEqual(['start']);
    expect(terms.controller).toBe(made[1]);
    expect(running(terms)).toBe(true);
  });

  it('stepping down stops the term controller and leaves an idle unfenced one that takes no pokes', async () => {
    const { terms, made } = switchOf();
    await terms.lead(fence(1));
    await terms.stepDown();
    terms.poke();
    terms.poke('ep1');
    expect(made[1]?.log).toEqual(['start', 'stop']);
    expect(made[2]?.fence).toBeUndefined();
    expect(made[2]?.log).toEqual([]);
    expect(running(terms)).toBe(false);
  });

  it('switches run one at a time in the order asked, even while a stop is slow', async () => {
    const { terms, made } = switchOf();
    await terms.lead(fence(1));
    const term = made[1];
    if (!term) throw new Error('no term controller');
    term.holdStops = true;
    const down = terms.stepDown();
    const again = terms.lead(fence(2));
    // Nothing of the next term starts while the previous controller has not stopped.
    await Promise.resolve();
    expect(made).toHaveLength(2);
    expect(running(terms)).toBe(false);
    term.releaseStop();
    await Promise.all([down, again]);
    expect(made).toHaveLength(4);
    expect(made[3]?.fence?.claim()).toEqual({ token: 2 });
    expect(terms.controller).toBe(made[3]);
    expect(running(terms)).toBe(true);
  });

  it('close waits for the switch under way and stops the last controller', async () => {
    const { terms, made } = switchOf();
    const leading = terms.lead(fence(3));
    await terms.close();
    await leading;
    expect(made[1]?.log).toEqual(['start', 'stop']);
    expect(running(terms)).toBe(false);
  });
});
