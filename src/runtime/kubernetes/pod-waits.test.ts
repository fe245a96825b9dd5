/**
 * PodWaits on manual timers: a wait settles true when its condition holds now or at a later change of its worker,
 * false at its deadline or at close (and at once when it begins after close); a cancelled or settled wait leaves
 * nothing behind, and waits on other workers are not disturbed.
 */
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import { PodWaits } from './pod-waits.js';

interface Entry {
  stage: string;
}

function setup() {
  const timers = new ManualTimers();
  const entries = new Map<string, Entry>();
  const waits = new PodWaits<Entry>({ current: (id) => entries.get(id), timers });
  const change = (id: string, entry: Entry | undefined) => {
    if (entry) entries.set(id, entry);
    else entries.delete(id);
    waits.changed(id, entry);
  };
  return { timers, entries, waits, change };
}

/** Whether a promise has settled, and with what, after the microtasks queued so far. */
async function peek<T>(promise: Promise<T>): Promise<{ settled: boolean; value?: T }> {
  const pending = Symbol('pending');
  const value = await Promise.race([promise, Promise.resolve().then(() => pending)]);
  return value === pending ? { settled: false } : { settled: true, value: value as T };
}

describe('PodWaits', () => {
  it('settles true at once when the condition holds already, leaving no waiter', async () => {
    const { waits, entries } = setup();
    entries.set('w1', { stage: 'running' });
    const wait = waits.waitFor('w1', (e) => e?.stage === 'running');
    expect(await wait.promise).toBe(true);
    expect(waits.size).toBe(0);
  });

  it("settles true at the change that makes it hold; other workers' changes and other stages do not", async () => {
    const { waits, change } = setup();
    const wait = waits.waitFor('w1', (e) => e?.stage === 'running');
    change('w1', { stage: 'creating' });
    change('w2', { stage: 'running' });
    expect(await peek(wait.promise)).toEqual({ settled: false });
    change('w1', { stage: 'running' });
    expect(await wait.promise).toBe(true);
    expect(waits.size).toBe(0);
  });

  it('within: false at the deadline, not a moment before; a change in time wins and clears the timer', async () => {
    const { waits, timers, change } = setup();
    const late = waits.waitFor('w1', () => false);
    const lateResult = late.within(1_000);
    timers.advance(999);
    expect(await peek(lateResult)).toEqual({ settled: false });
    timers.advance(1);
    expect(await lateResult).toBe(false);
    expect(waits.size).toBe(0);

    change('w2', { stage: 'running' });
    const gone = waits.waitFor('w2', (e) => e === undefined);
    const goneResult = gone.within(1_000);
    change('w2', undefined);
    expect(await goneResult).toBe(true);
    expect(timers.count).toBe(0);
  });

  it('cancel: the wait never settles and leaves neither waiter nor timer', async () => {
    const { waits, timers, change } = setup();
    const wait = waits.waitFor('w1', (e) => e?.stage === 'running');
    void wait.within(1_000);
    wait.cancel();
    expect(waits.size).toBe(0);
    expect(timers.count).toBe(0);
    change('w1', { stage: 'running' });
    expect(await peek(wait.promise)).toEqual({ settled: false });
  });

  it('close settles every wait false; a wait begun after close whose condition holds settles false too', async () => {
    const { waits, entries } = setup();
    const a = waits.waitFor('w1', (e) => e?.stage === 'running');
    const b = waits.waitFor('w2', (e) => e !== undefined);
    waits.close();
    expect(await a.promise).toBe(false);
    expect(await b.promise).toBe(false);
    expect(waits.size).toBe(0);
    entries.set('w3', { stage: 'running' });
    expect(await waits.waitFor('w3', (e) => e?.stage === 'running').promise).toBe(false);
  });
});
