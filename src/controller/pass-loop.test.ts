import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { PassLoop } from './pass-loop.js';

function harness() {
  const timers = new ManualTimers();
  const passes: number[] = [];
  const errors: unknown[] = [];
  let finish: (() => void) | undefined;
  let failNext = false;
  const loop = new PassLoop({
    timers,
    intervalMs: 1000,
    pass: () => {
      passes.push(timers.now);
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error('store down'));
      }
      return new Promise<void>((resolve) => {
        finish = resolve;
      });
    },
    onError: (error, { repeated }) => errors.push({ error, repeated }),
  });
  const endPass = async () => {
    finish?.();
    await loop.settled();
  };
  return { timers, passes, errors, loop, endPass, failNextPass: () => (failNext = true) };
}

describe('PassLoop', () => {
  it('coalesces the pokes of one turn into one pass, on the next timer turn', () => {
    const h = harness();
    h.loop.poke();
    h.loop.poke();
    expect(h.passes).toEqual([]);
    h.timers.advance(0);
    expect(h.passes).toEqual([0]);
  });

  it('runs one pass at a time, and once more when poked during one', async () => {
    const h = harness();
    h.loop.poke();
    h.timers.advance(0);
    h.loop.poke();
    h.loop.poke();
    h.timers.advance(0);
    expect(h.passes).toEqual([0]);
    await h.endPass();
    h.timers.advance(0);
    expect(h.passes).toEqual([0, 0]);
    await h.endPass();
    h.timers.advance(0);
    expect(h.passes).toEqual([0, 0]);
    expect(h.loop.idle).toBe(true);
  });

  it('passes every interval once started, and none after stop', async () => {
    const h = harness();
    h.loop.start();
    h.timers.advance(0);
    await h.endPass();
    h.timers.advance(1000);
    await h.endPass();
    h.timers.advance(1000);
    expect(h.passes).toEqual([0, 1000, 2000]);
    const stopped = h.loop.stop();
    await h.endPass();
    await stopped;
    h.loop.poke();
    h.timers.advance(5000);
    expect(h.passes).toEqual([0, 1000, 2000]);
    expect(h.timers.count).toBe(0);
  });

  it('a pass that fails is reported and the loop goes on', async () => {
    const h = harness();
    h.failNextPass();
    h.loop.poke();
    h.timers.advance(0);
    await h.loop.settled();
    expect(h.errors).toHaveLength(1);
    h.loop.poke();
    h.timers.advance(0);
    expect(h.passes).toEqual([0, 0]);
  });

  it("says whether a failure repeats the last pass's, so that a lasting one is logged once", async () => {
    const h = harness();
    for (let i = 0; i < 3; i++) {
      h.failNextPass();
      h.loop.poke();
      h.timers.advance(0);
      await h.loop.settled();
    }
    h.loop.poke();
    h.timers.advance(0);
    await h.endPass();
    h.failNextPass();
    h.loop.poke();
    h.timers.advance(0);
    await h.loop.settled();
    expect(h.errors.map((e) => (e as { repeated: boolean }).repeated)).toEqual([false, true, true, false]);
  });

  it("starts a pass with the timers' setImmediate where they have one, and cancels it on stop", async () => {
    const timers = new ManualTimers();
    const immediates: (() => void)[] = [];
    const cancelled: unknown[] = [];
    const withImmediate = Object.assign(timers, {
      setImmediate: (callback: () => void) => immediates.push(callback),
      clearImmediate: (handle: unknown) => cancelled.push(handle),
    });
    let passes = 0;
    const loop = new PassLoop({
      timers: withImmediate,
      intervalMs: 1000,
      pass: async () => {
        passes += 1;
      },
      onError: () => {},
    });
    loop.poke();
    timers.advance(10);
    expect(passes).toBe(0);
    immediates.shift()?.();
    expect(passes).toBe(1);
    await loop.settled();
    loop.poke();
    await loop.stop();
    expect(cancelled).toEqual([1]);
  });
});
