import { describe, expect, it, vi } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { FakeRuntime } from './fake/fake-runtime.js';
import type { RuntimeEvent } from './types.js';
import { WaitingRuntime } from './waiting-runtime.js';

describe('WaitingRuntime', () => {
  const setup = (answers: () => boolean) => {
    const timers = new ManualTimers();
    const inner = new FakeRuntime({ clock: () => timers.now, timers });
    const build = vi.fn(async () => inner);
    const runtime = new WaitingRuntime({
      waitingFor: 'the Docker engine at /run/x.sock',
      probe: async () => answers(),
      build,
      timers,
      intervalMs: 1_000,
    });
    return { timers, inner, build, runtime };
  };

  it('fails every call UNAVAILABLE until the engine answers, then hands them to the real runtime', async () => {
    let answers = false;
    const { timers, build, runtime } = setup(() => answers);
    await expect(runtime.list({})).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: 'waiting for the Docker engine at /run/x.sock to answer',
    });
    await expect(runtime.stats('w')).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await timers.advanceSettling(5_000);
    expect(build).not.toHaveBeenCalled();
    answers = true;
    await timers.advanceSettling(1_000);
    expect(build).toHaveBeenCalledTimes(1);
    await expect(runtime.whenReady()).resolves.toBe(true);
    await expect(runtime.list({})).resolves.toEqual([]);
    await runtime.close();
  });

  it('attaches watchers made while waiting to the real runtime once it runs, and detaches them', async () => {
    let answers = false;
    const { timers, inner, runtime } = setup(() => answers);
    const detached = vi.fn();
    const watch = vi.spyOn(inner, 'watch').mockImplementation(() => detached);
    const early = (_event: RuntimeEvent) => {};
    const unwatch = runtime.watch(early);
    expect(watch).not.toHaveBeenCalled();
    answers = true;
    await timers.advanceSettling(1_000);
    expect(watch).toHaveBeenCalledWith(early);
    unwatch();
    expect(detached).toHaveBeenCalledTimes(1);
    await runtime.close();
  });

  it('closed before the engine answers: never ready, and no probe after', async () => {
    const probe = vi.fn(async () => false);
    const timers = new ManualTimers();
    const runtime = new WaitingRuntime({
      waitingFor: 'x',
      probe,
      build: async () => {
        throw new Error('never');
      },
      timers,
    });
    await timers.advanceSettling(0);
    expect(probe).toHaveBeenCalledTimes(1);
    await runtime.close();
    await expect(runtime.whenReady()).resolves.toBe(false);
    await timers.advanceSettling(60_000);
    expect(probe).toHaveBeenCalledTimes(1);
    expect(runtime.readiness()).toEqual({ ready: false, waitingFor: 'x' });
  });
});
